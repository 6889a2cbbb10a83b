package eval

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"golang.org/x/crypto/ssh"
)

// natives are the functions a prototype calls as std.native(name) under
// trainsonnet, every one of them: this list is their registry. large makes
// the large strings (references, or with inline the text), handOver takes
// the value of a render (nil: none is taken, the output is printed), and
// without checks the library skips its contract checks. Each has a
// fallback in lib/trainsonnet.libsonnet, so a prototype still runs under
// the stock jsonnet binary (only slower, or without key generation). None
// keeps state of a render but handOver, the seam of the render's value
// (engine.go); asset, indexedLines and indexedList hand out references
// to large strings (refs.go).
func natives(large *largeStrings, inline bool, handOver func([]any) (any, error), checks bool) []*jsonnet.NativeFunction {
	fs := []*jsonnet.NativeFunction{
		{
			// asset(path) stands for a file the pods need.
			Name:   "asset",
			Params: ast.Identifiers{"path"},
			Func:   large.hold("asset", inline),
		},
		{
			// assetBytes(path) is the size in bytes of the asset at path,
			// without handing its text to Jsonnet: std.length of a long
			// string costs a rune conversion of the whole text per render.
			Name:   "assetBytes",
			Params: ast.Identifiers{"path"},
			Func: func(args []any) (any, error) {
				text, err := large.text("asset", args, false)
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
			Func:   large.hold("indexedLines", inline),
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
			Func:   large.hold("indexedList", inline),
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
	if handOver != nil {
		fs = append(fs, &jsonnet.NativeFunction{
			// handOver(value) takes the value of a render, output 'full',
			// as Go values (engine.go).
			Name:   "handOver",
			Params: ast.Identifiers{"value"},
			Func:   handOver,
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
