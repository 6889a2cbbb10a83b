package generator

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

// Native functions available to prototypes as std.native(name). Each has a
// pure-Jsonnet fallback in lib/trainsonnet.libsonnet, so a prototype still
// runs under the stock jsonnet binary (only slower, or without key
// generation). Those that keep per-render state (emit, asset, indexedLines)
// are made per VM, in generator.go.
func nativeFunctions() []*jsonnet.NativeFunction {
	return []*jsonnet.NativeFunction{
		{
			// indexedLinesBytes(head, prefix, suffix, from, to) is the
			// length of indexedLines with the same arguments, without
			// building it.
			Name:   "indexedLinesBytes",
			Params: ast.Identifiers{"head", "prefix", "suffix", "from", "to"},
			Func:   indexedLinesBytes,
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
}

// linesArgs checks the arguments of indexedLines and indexedLinesBytes:
// (head, prefix, suffix, from, to).
func linesArgs(name string, args []any) (head, prefix, suffix string, from, to int, err error) {
	head, ok0 := args[0].(string)
	prefix, ok1 := args[1].(string)
	suffix, ok2 := args[2].(string)
	f, ok3 := args[3].(float64)
	t, ok4 := args[4].(float64)
	if !ok0 || !ok1 || !ok2 || !ok3 || !ok4 {
		return "", "", "", 0, 0, fmt.Errorf("%s(head, prefix, suffix, from, to) wants three strings and two numbers", name)
	}
	if f != float64(int(f)) || t != float64(int(t)) || f < 0 || t < f || t-f > 1e7 {
		return "", "", "", 0, 0, fmt.Errorf("%s: bad range [%v, %v)", name, f, t)
	}
	return head, prefix, suffix, int(f), int(t), nil
}

func indexedLinesBytes(args []any) (any, error) {
	head, prefix, suffix, from, to, err := linesArgs("indexedLinesBytes", args)
	if err != nil {
		return nil, err
	}
	n := len(head) + (to-from)*(len(prefix)+len(suffix)+1)
	for lo, digits := 1, 1; lo <= to; lo, digits = lo*10, digits+1 {
		// numbers in [max(from, lo), min(to, 10*lo)) have `digits` digits
		// (0 is counted with the one-digit numbers below)
		a, b := max(from, lo), min(to, lo*10)
		if b > a {
			n += (b - a) * digits
		}
	}
	if from == 0 && to > 0 {
		n++ // the number 0
	}
	return float64(n), nil
}

func indexedLines(args []any) (any, error) {
	head, prefix, suffix, from, to, err := linesArgs("indexedLines", args)
	if err != nil {
		return nil, err
	}
	return indexed(head, prefix, suffix, "\n", from, to, true), nil
}

// indexedList(prefix, suffix, sep, from, to): prefix+i+suffix for every i
// in [from, to), joined by sep (a host list such as a-0:2222,a-1:2222).
func indexedList(args []any) (any, error) {
	if len(args) != 5 {
		return nil, fmt.Errorf("indexedList(prefix, suffix, sep, from, to) wants five arguments")
	}
	sep, ok := args[2].(string)
	if !ok {
		return nil, fmt.Errorf("indexedList(prefix, suffix, sep, from, to) wants sep as a string")
	}
	_, prefix, suffix, from, to, err := linesArgs("indexedList", []any{"", args[0], args[1], args[3], args[4]})
	if err != nil {
		return nil, err
	}
	return indexed("", prefix, suffix, sep, from, to, false), nil
}

// indexed: head, then prefix+i+suffix for every i in [from, to), each
// followed by sep (terminated) or with sep between them.
func indexed(head, prefix, suffix, sep string, from, to int, terminated bool) string {
	var b strings.Builder
	b.Grow(len(head) + (to-from)*(len(prefix)+len(suffix)+len(sep)+6))
	b.WriteString(head)
	var num [20]byte
	for i := from; i < to; i++ {
		if !terminated && i > from {
			b.WriteString(sep)
		}
		b.WriteString(prefix)
		b.Write(strconv.AppendInt(num[:0], int64(i), 10))
		b.WriteString(suffix)
		if terminated {
			b.WriteString(sep)
		}
	}
	return b.String()
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

func itoa(i int) string { return strconv.Itoa(i) }
