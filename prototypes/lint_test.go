package prototypes_test

import (
	"io/fs"
	"testing"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"github.com/google/go-jsonnet/toolutils"

	"github.com/trainsonnet/trainsonnet/lib"
	"github.com/trainsonnet/trainsonnet/prototypes"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestNoStdFormat keeps `%` and std.format out of every prototype and
// library: go-jsonnet implements them in Jsonnet, at about a millisecond a
// call (research/perf-anchors.md), so one in a per-worker path turns a
// 10,000-worker render from milliseconds into seconds. Build strings with +.
// The same for the stdlib's text scans (findSubstr, asciiUpper): a scan of
// the user's text belongs in ts.contains or a native (ts.bashSyntax).
func TestNoStdFormat(t *testing.T) {
	for root, fsys := range map[string]fs.FS{"prototypes": prototypes.FS, "lib": lib.FS} {
		files, err := fs.Glob(fsys, "*sonnet")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("%s: no Jsonnet files found", root)
		}
		for _, f := range files {
			src, err := fs.ReadFile(fsys, f)
			if err != nil {
				t.Fatal(err)
			}
			name := root + "/" + f
			node, err := jsonnet.SnippetToAST(name, string(src))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			walk(node, "", func(n ast.Node, where string) {
				// The parser desugars `a % b` into std.mod(a, b).
				idx, ok := n.(*ast.Index)
				if !ok {
					return
				}
				v, ok := idx.Target.(*ast.Var)
				s, ok2 := idx.Index.(*ast.LiteralString)
				if !ok || !ok2 || v.Id != "std" && v.Id != "$std" {
					return
				}
				switch s.Value {
				case "format", "mod":
					t.Errorf("%s: near %s: std.%s (or %%) is slow in go-jsonnet: build strings with + instead", name, where, s.Value)
				case "findSubstr", "asciiUpper", "asciiLower":
					// Also in Jsonnet, char by char: std.findSubstr took
					// 7 ms over a command line of 100 characters.
					t.Errorf("%s: near %s: std.%s scans text char by char in go-jsonnet: use ts.contains, a table, or a native", name, where, s.Value)
				}
			})
		}
	}
}

// walk visits every node with the position of the nearest node that has
// one (desugared nodes such as std.mod have none).
func walk(n ast.Node, where string, f func(ast.Node, string)) {
	if n == nil {
		return
	}
	if loc := n.Loc(); loc != nil && loc.IsSet() {
		where = loc.String()
	}
	f(n, where)
	for _, c := range toolutils.Children(n) {
		walk(c, where, f)
	}
}
