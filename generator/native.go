package generator

import (
	"crypto/ed25519"
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
// generation).
func nativeFunctions() []*jsonnet.NativeFunction {
	return []*jsonnet.NativeFunction{
		{
			// indexedLines(prefix, suffix, from, to) is the text
			// prefix+i+suffix+"\n" for every i in [from, to): one line per
			// worker, built in Go because per-worker string work in Jsonnet
			// costs microseconds per line (see research/perf-anchors.md).
			Name:   "indexedLines",
			Params: ast.Identifiers{"prefix", "suffix", "from", "to"},
			Func:   indexedLines,
		},
		{
			// sshKeyPair(comment) makes a fresh ed25519 key pair:
			// {privateKey: OpenSSH PEM, publicKey: authorized_keys line}.
			Name:   "sshKeyPair",
			Params: ast.Identifiers{"comment"},
			Func:   sshKeyPair,
		},
	}
}

func indexedLines(args []any) (any, error) {
	prefix, ok1 := args[0].(string)
	suffix, ok2 := args[1].(string)
	from, ok3 := args[2].(float64)
	to, ok4 := args[3].(float64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, fmt.Errorf("indexedLines(prefix, suffix, from, to) wants two strings and two numbers")
	}
	if from != float64(int(from)) || to != float64(int(to)) || from < 0 || to < from || to-from > 1e7 {
		return nil, fmt.Errorf("indexedLines: bad range [%v, %v)", from, to)
	}
	var b strings.Builder
	n := int(to) - int(from)
	b.Grow(n * (len(prefix) + len(suffix) + 7))
	var num [20]byte
	for i := int(from); i < int(to); i++ {
		b.WriteString(prefix)
		b.Write(strconv.AppendInt(num[:0], int64(i), 10))
		b.WriteString(suffix)
		b.WriteByte('\n')
	}
	return b.String(), nil
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
