package eval

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"golang.org/x/crypto/ssh"
)

// natives are the functions a prototype calls as std.native(name) under
// trainsonnet, every one of them: this list is their registry. Each has a
// fallback in lib/trainsonnet.libsonnet, so a prototype still runs under
// the stock jsonnet binary (only slower, or without key generation). None
// keeps state of a render but handOver, the seam of the render's value
// (engine.go); asset, indexedLines and indexedList hand out references
// to large strings (refs.go).
func (e *Engine) natives(s *Session, checks bool) []*jsonnet.NativeFunction {
	fs := []*jsonnet.NativeFunction{
		{
			// asset(path) stands for a file the pods need.
			Name:   "asset",
			Params: ast.Identifiers{"path"},
			Func:   e.large.hold("asset", e.InlineLarge),
		},
		{
			// assetBytes(path) is the size in bytes of the asset at path,
			// without handing its text to Jsonnet: std.length of a long
			// string costs a rune conversion of the whole text per render.
			Name:   "assetBytes",
			Params: ast.Identifiers{"path"},
			Func: func(args []any) (any, error) {
				text, err := e.large.text("asset", args, false)
				return float64(len(text)), err
			},
		},
		{
			// indexedLines(head, prefix, suffix, from, to) stands for head,
			// then the text prefix+i+suffix+"\n" for every i in [from, to):
			// one line per worker, made in Go because per-worker string
			// work in Jsonnet costs microseconds per line (see
			// research/perf-anchors.md).
			Name:   "indexedLines",
			Params: ast.Identifiers{"head", "prefix", "suffix", "from", "to"},
			Func:   e.large.hold("indexedLines", e.InlineLarge),
		},
		{
			// indexedLinesBytes(head, prefix, suffix, from, to) is the
			// length of indexedLines with the same arguments, without
			// making it.
			Name:   "indexedLinesBytes",
			Params: ast.Identifiers{"head", "prefix", "suffix", "from", "to"},
			Func: func(args []any) (any, error) {
				r, err := indexedArgs("indexedLinesBytes", args)
				if err != nil {
					return nil, err
				}
				return float64(r.bytes()), nil
			},
		},
		{
			// indexedList(prefix, suffix, sep, from, to) stands for the
			// items prefix+i+suffix for every i in [from, to), joined by
			// sep: a list of hosts, made in Go like indexedLines.
			Name:   "indexedList",
			Params: ast.Identifiers{"prefix", "suffix", "sep", "from", "to"},
			Func:   e.large.hold("indexedList", e.InlineLarge),
		},
		{
			// bashSyntax(cmd): the bash construct in cmd, or null
			// (bashsyntax.go).
			Name:   "bashSyntax",
			Params: ast.Identifiers{"cmd"},
			Func:   bashSyntaxNative,
		},
		{
			// sshKeyPair(comment) makes a fresh ed25519 key pair:
			// {privateKey: OpenSSH PEM, publicKey: authorized_keys line}.
			Name:   "sshKeyPair",
			Params: ast.Identifiers{"comment"},
			Func:   sshKeyPair,
		},
		{
			// secretToken() makes a fresh random token of 26 base32
			// characters (130 bits): a password of the job's own, such
			// as Jupyter's.
			Name:   "secretToken",
			Params: ast.Identifiers{},
			Func:   func([]any) (any, error) { return rand.Text(), nil }, // the process-wide CSPRNG, as sshKeyPair
		},
	}
	if !e.PrintFull {
		fs = append(fs, &jsonnet.NativeFunction{
			// handOver(value) takes the value of a render, output 'full',
			// as Go values (engine.go).
			Name:   "handOver",
			Params: ast.Identifiers{"value"},
			Func:   s.handOver,
		})
	}
	if !checks {
		fs = append(fs, &jsonnet.NativeFunction{
			// skipContractChecks() tells the library to skip the checks
			// of what its pieces read of the parameters (ts.checks in
			// lib/trainsonnet.libsonnet): they would cost every render
			// about 5%, and they only name what a failed render lacks,
			// so Failed (fail.go) runs them then, on a VM without
			// this native.
			Name:   "skipContractChecks",
			Params: ast.Identifiers{},
			Func:   func([]any) (any, error) { return true, nil },
		})
	}
	return fs
}

// indexedRange is what indexedLines and indexedList make: head, then
// prefix+i+suffix for every i in [from, to), each followed by sep
// (terminated: lines) or with sep between them (a list).
type indexedRange struct {
	head, prefix, suffix, sep string
	from, to                  int
	terminated                bool
}

// indexedArgs reads the arguments of indexedLines and indexedLinesBytes
// (head, prefix, suffix, from, to) or of indexedList (prefix, suffix,
// sep, from, to).
func indexedArgs(name string, args []any) (indexedRange, error) {
	want := "(head, prefix, suffix, from, to) wants three strings and two numbers"
	if name == "indexedList" {
		want = "(prefix, suffix, sep, from, to) wants three strings and two numbers"
	}
	if len(args) != 5 {
		return indexedRange{}, fmt.Errorf("%s%s", name, want)
	}
	var text [3]string
	for i := range text {
		s, ok := args[i].(string)
		if !ok {
			return indexedRange{}, fmt.Errorf("%s%s", name, want)
		}
		text[i] = s
	}
	f, ok3 := args[3].(float64)
	t, ok4 := args[4].(float64)
	if !ok3 || !ok4 {
		return indexedRange{}, fmt.Errorf("%s%s", name, want)
	}
	if f != float64(int(f)) || t != float64(int(t)) || f < 0 || t < f || t-f > 1e7 {
		return indexedRange{}, fmt.Errorf("%s: bad range [%v, %v)", name, f, t)
	}
	if name == "indexedList" {
		return indexedRange{prefix: text[0], suffix: text[1], sep: text[2], from: int(f), to: int(t)}, nil
	}
	return indexedRange{head: text[0], prefix: text[1], suffix: text[2], sep: "\n", from: int(f), to: int(t), terminated: true}, nil
}

// text makes the string.
func (r indexedRange) text() string {
	var b strings.Builder
	b.Grow(len(r.head) + (r.to-r.from)*(len(r.prefix)+len(r.suffix)+len(r.sep)+6))
	b.WriteString(r.head)
	var num [20]byte
	for i := r.from; i < r.to; i++ {
		if !r.terminated && i > r.from {
			b.WriteString(r.sep)
		}
		b.WriteString(r.prefix)
		b.Write(strconv.AppendInt(num[:0], int64(i), 10))
		b.WriteString(r.suffix)
		if r.terminated {
			b.WriteString(r.sep)
		}
	}
	return b.String()
}

// bytes is the length of text(), without making it.
func (r indexedRange) bytes() int {
	n := len(r.head) + (r.to-r.from)*(len(r.prefix)+len(r.suffix))
	if r.to > r.from {
		if r.terminated {
			n += (r.to - r.from) * len(r.sep)
		} else {
			n += (r.to - r.from - 1) * len(r.sep)
		}
	}
	for lo, digits := 1, 1; lo <= r.to; lo, digits = lo*10, digits+1 {
		// numbers in [max(from, lo), min(to, 10*lo)) have `digits` digits
		// (0 is counted with the one-digit numbers below)
		a, b := max(r.from, lo), min(r.to, lo*10)
		if b > a {
			n += (b - a) * digits
		}
	}
	if r.from == 0 && r.to > 0 {
		n++ // the number 0
	}
	return n
}

func sshKeyPair(args []any) (any, error) {
	comment, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("sshKeyPair(comment) wants a string")
	}
	pub, priv, err := ed25519.GenerateKey(nil) // nil: the process-wide CSPRNG (deterministic under testing/cryptotest)
	if err != nil {
		return nil, fmt.Errorf("generating an ssh key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("encoding the ssh private key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding the ssh public key: %w", err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	if comment != "" {
		line += " " + comment
	}
	return map[string]any{
		"privateKey": string(pem.EncodeToMemory(block)),
		"publicKey":  line + "\n",
	}, nil
}
