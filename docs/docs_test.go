// Package docs_test holds the docs to what they say: every trainsonnet
// command in a shell block of README.md and docs/ runs (in-process, from a
// copy of the repository's examples) and succeeds, every relative link
// leads to a file, and every page of docs/ is reachable from README.md.
package docs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/internal/cli"
	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// userFiles: a page's own names for the user's files (a chart's
// values.yaml, an operator's job), and the repository's copy of such a
// file, written into the page's working directory under that name.
var userFiles = map[string]map[string]string{
	"docs/migrating/helm-horovod.md":       {"values.yaml": "examples/horovod/chart-values/gpu.yaml"},
	"docs/migrating/horovod-dask-chart.md": {"values.yaml": "golden/testdata/dask-chart-values.yaml"},
	"docs/migrating/pytorchjob.md":         {"pytorchjob.yaml": "golden/testdata/pytorchjob.yaml"},
	"docs/migrating/tensorflow-charts.md": {
		"distrib-values.yaml":  "golden/testdata/tf-distrib-chart-values.yaml",
		"values.yaml":          "golden/testdata/eval-chart-values.yaml",
		"values.override.yaml": "golden/testdata/tf-values-override.yaml",
	},
}

// trees are the repository's directories a page's commands may name.
var trees = []string{"examples", "golden/testdata", "test/operators/examples"}

func pages(t *testing.T) []string {
	t.Helper()
	ps := []string{"README.md"}
	require.NoError(t, fs.WalkDir(os.DirFS(".."), "docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			ps = append(ps, p)
		}
		return err
	}))
	return ps
}

func read(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", page))
	require.NoError(t, err)
	return string(data)
}

// commands are the trainsonnet command lines of the page's sh blocks, a
// line continued with \ joined to the next.
func commands(text string) []string {
	var out []string
	in := false
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in && strings.TrimPrefix(line, "```") == "sh"
			continue
		}
		if !in {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s)
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// words splits a shell line as sh does for these commands: single and
// double quotes, a comment from an unquoted # at a word's start; it stops
// at a redirection, a pipe or a list (what the shell, not trainsonnet,
// does with the output).
func words(line string) []string {
	var ws []string
	var w strings.Builder
	inWord, quote := false, byte(0)
	end := func() {
		if inWord {
			ws = append(ws, w.String())
		}
		w.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			end()
		case !inWord && (c == '#' || c == '>' || c == '|' || c == ';' || c == '&'):
			end()
			return ws
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return ws
}

// trainsonnetArgs: the arguments of a trainsonnet command line (or of
// `go run ./cmd/trainsonnet`), or nil.
func trainsonnetArgs(line string) []string {
	ws := words(line)
	switch {
	case len(ws) > 0 && ws[0] == "trainsonnet":
		return ws[1:]
	case len(ws) > 2 && ws[0] == "go" && ws[1] == "run" && ws[2] == "./cmd/trainsonnet":
		return ws[3:]
	}
	return nil
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // the tests' symlinks and the like
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	}))
}

// TestDocsCommandsRun runs every trainsonnet command of the docs as a user
// who copies it would, from the repository's root (a copy of its
// examples, so that --output-dir writes nothing of the checkout), and
// wants exit 0 and output.
func TestDocsCommandsRun(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		cmds := commands(read(t, page))
		var runs [][]string
		for _, c := range cmds {
			if args := trainsonnetArgs(c); args != nil {
				runs = append(runs, args)
			}
		}
		if len(runs) == 0 {
			continue
		}
		t.Run(page, func(t *testing.T) {
			dir := t.TempDir()
			for _, tree := range trees {
				copyTree(t, filepath.Join("..", tree), filepath.Join(dir, tree))
			}
			for name, from := range userFiles[page] {
				data, err := os.ReadFile(filepath.Join("..", from))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
			}
			t.Chdir(dir)
			for _, args := range runs {
				if len(args) > 0 && args[0] == "completion" {
					args = args[:2] // its output goes to a file of the system
				}
				var out, errOut bytes.Buffer
				code := cli.Run(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
				assert.Equal(t, 0, code, "trainsonnet %s:\n%s", strings.Join(args, " "), errOut.String())
				if !slices.Contains(args, "--output-dir") {
					assert.NotEmpty(t, out.String(), "trainsonnet %s prints nothing", strings.Join(args, " "))
				}
				n++
			}
		})
	}
	for page := range userFiles {
		assert.FileExists(t, filepath.Join("..", page), "userFiles names a page that is gone")
	}
	assert.Greater(t, n, 25, "the docs' commands were found")
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// TestDocsLinks: every relative link of README.md and docs/ leads to a file
// or directory of the repository, and every page of docs/ is reached from
// README.md, directly or through the pages it links.
func TestDocsLinks(t *testing.T) {
	all := pages(t)
	links := map[string][]string{}
	for _, page := range all {
		for _, m := range link.FindAllStringSubmatch(read(t, page), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(filepath.Dir(page), target)
			_, err := os.Stat(filepath.Join("..", p))
			assert.NoError(t, err, "%s links to %s, which is not there", page, target)
			if info, err := os.Stat(filepath.Join("..", p)); err == nil && info.IsDir() {
				p = filepath.Join(p, "README.md")
			}
			links[page] = append(links[page], filepath.ToSlash(p))
		}
	}
	seen := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		for _, to := range links[page] {
			if !seen[to] && slices.Contains(all, to) {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, page := range all {
		assert.True(t, seen[page], "%s is not reached from README.md", page)
	}
}
