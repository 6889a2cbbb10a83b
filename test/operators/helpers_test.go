// Package operators_test compares what trainsonnet renders of the Kubeflow
// operators' own examples with what the operators made of them, recorded
// from the real operators (record.sh; testdata/).
//
// record.sh (make record-operators) builds the training operator,
// mpi-operator and the Kubeflow Trainer v2 once into the cache
// (test/cluster/build.sh operators), runs each as a host process against
// the control plane with kwok nodes (the Trainer beside the JobSet
// controller, both with their webhooks),
// applies their upstream examples and trainsonnet's own inputs of what no
// upstream example shows (examples/<operator>/: the kubelet's $(VAR) in a
// command), and records every object they create (record/, into
// testdata/<operator>-<version>/, committed). The tests compare
// trainsonnet's render of each example with the recording, process by
// process (each side's words as the kubelet expanded them), and fail on
// any difference not declared with the warning the render prints, or why.
// CI never builds the operators.
package operators_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// splitYAML returns the documents of a recording.
func splitYAML(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(file))
	require.NoError(t, err)
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) == 0 || bytes.HasPrefix(bytes.TrimSpace(d), []byte("#")) && !bytes.Contains(d, []byte("\nkind:")) {
			continue
		}
		docs = append(docs, d)
	}
	require.NotEmpty(t, docs, file)
	return docs
}

func unmarshal(doc []byte, v any) error { return yaml.Unmarshal(doc, v) }

// launch is how a command started the training.
type launch struct {
	launcher string            // torchrun, python or program
	opts     map[string]string // torchrun's options, by name with _
	exec     []string          // what it runs: the script and its arguments, or a program
}

// torchrunValued: torchrun's options that take a value.
var torchrunValued = map[string]bool{}

func init() {
	for _, o := range strings.Fields("nnodes nproc_per_node rdzv_backend rdzv_endpoint rdzv_id rdzv_conf max_restarts monitor_interval start_method role node_rank master_addr master_port local_addr log_dir redirects r tee t local_ranks_filter logs_specs") {
		torchrunValued[o] = true
	}
}

func base(w string) string { return w[strings.LastIndex(w, "/")+1:] }

func isPython(w string) bool {
	b := base(w)
	return strings.HasPrefix(b, "python") && strings.Trim(b[6:], "0123456789.") == ""
}

// launched reads a command as the container runs it.
func launched(words []string) launch {
	torchrun := func(ws []string) launch {
		l := launch{launcher: "torchrun", opts: map[string]string{}}
		i := 0
		for ; i < len(ws) && strings.HasPrefix(ws[i], "-"); i++ {
			name, value, hasValue := strings.Cut(strings.TrimLeft(ws[i], "-"), "=")
			name = strings.ReplaceAll(name, "-", "_")
			switch {
			case hasValue:
				l.opts[name] = value
			case torchrunValued[name] && i+1 < len(ws):
				l.opts[name] = ws[i+1]
				i++
			default:
				l.opts[name] = "true"
			}
		}
		l.exec = ws[i:]
		return l
	}
	switch {
	case len(words) == 0:
		return launch{}
	case base(words[0]) == "torchrun":
		return torchrun(words[1:])
	case isPython(words[0]) && len(words) > 2 && words[1] == "-m" && (words[2] == "torch.distributed.run" || words[2] == "torch.distributed.launch"):
		return torchrun(words[3:])
	case isPython(words[0]):
		i := 1
		for i < len(words) && strings.HasPrefix(words[i], "-") && words[i] != "-m" {
			i++
		}
		return launch{launcher: "python", exec: words[i:]}
	}
	return launch{launcher: "program", exec: words}
}

func (l launch) opt(name string) string { return l.opts[name] }

// program is what runs in each process: python and the script, or a
// program of its own.
func (l launch) program() string {
	if l.launcher == "program" || l.opts["no_python"] == "true" {
		return strings.Join(l.exec, " ")
	}
	return "python " + strings.Join(l.exec, " ")
}

// shellWords splits text into words as sh does for a simple command:
// quotes and backslashes, no expansion (the tests substitute the
// variables they know first).
func shellWords(t *testing.T, text string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in := false // a word is under way
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(text[i+1:], '\'')
			require.GreaterOrEqual(t, j, 0, "unclosed ' in %s", text)
			cur.WriteString(text[i+1 : i+1+j])
			i += j + 1
			in = true
		case ch == '"':
			i++
			for ; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) && strings.ContainsRune("\"\\$`", rune(text[i+1])) {
					i++
				}
				cur.WriteByte(text[i])
			}
			require.Less(t, i, len(text), "unclosed \" in %s", text)
			in = true
		case ch == '\\' && i+1 < len(text):
			i++
			cur.WriteByte(text[i])
			in = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
