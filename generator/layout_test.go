package generator_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fileGraph is, for the package in dir, which of its files (not tests) use
// an object another one declares: its functions, types, variables,
// constants, methods and fields, as the type checker resolves them.
func fileGraph(t *testing.T, dir string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t))}
	pkg, err := conf.Check(dir, fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string][]string{}
	for _, f := range files {
		from := filepath.Base(fset.Position(f.Pos()).Filename)
		graph[from] = nil
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || obj.Pkg() != pkg || !declared(obj, pkg) {
				return true
			}
			to := filepath.Base(fset.Position(obj.Pos()).Filename)
			if to != from && !slices.Contains(graph[from], to) {
				graph[from] = append(graph[from], to)
			}
			return true
		})
	}
	return graph
}

func declared(obj types.Object, pkg *types.Package) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// exportFiles are the compiled export data of every package the
// generator's packages import, by import path (go list -export: the build
// cache).
var exportFiles = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", "../...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w", err)
	}
	files := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, file, ok := strings.Cut(line, " "); ok && file != "" {
			files[path] = file
		}
	}
	return files, nil
})

// exportData reads the export data of a package for the type checker.
func exportData(t *testing.T) func(string) (io.ReadCloser, error) {
	t.Helper()
	files, err := exportFiles()
	if err != nil {
		t.Fatal(err)
	}
	return func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
}

// cycles are the strongly connected components of more than one file.
func cycles(graph map[string][]string) [][]string {
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var found [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		on[v] = true
		for _, w := range graph[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			if len(c) > 1 {
				sort.Strings(c)
				found = append(found, c)
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(graph)) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return found
}

// TestNoFileCycles holds the packages of the render pipeline, the
// parameter system and the CLI to a layering a reader can follow file by
// file: no file uses what another declares while that one uses it back,
// directly or through others (the knot of 12 files the flat package had,
// issue 36), but for the cycles below, each a decision with its reason.
// A cycle that grows (a file joins it) or a new one fails, and so does an
// allowed one that is gone (its entry goes too).
func TestNoFileCycles(t *testing.T) {
	allowed := map[string]string{
		"./keys.go params.go":                                                        "the sources in order (params.go) ask what each key means (keys.go), which applies a value through the same walk",
		"internal/check/objects.go podcheck.go":                                      "the decode finds the pods and the pod check reports through the decode's Problem",
		"param/conflicts.go param.go resources.go spelling.go value.go":              "Param's methods: reading a value (value.go) by its spelling (spelling.go), the pass-through objects' conflicts and container resources, are Param's rules and call each other",
		"format/draw.go format.go formats.go schemas.go":                             "one entry per format (formats.go) holds its check, its pattern (schemas.go) and its drawer (draw.go), which use the Format type and its helpers (format.go)",
		"../internal/cli/batch.go cli.go describe.go gen.go outdir.go paramflags.go": "the command tree: cli.go makes each command (gen.go, batch.go, describe.go), which use the shared flags, output and exit codes cli.go declares",
	}
	seen := map[string]bool{}
	for _, dir := range []string{".", "internal/eval", "internal/check", "internal/yamlenc", "internal/dollar", "internal/kubeflow", "typed", "param", "format", "../internal/cli"} {
		for _, c := range cycles(fileGraph(t, dir)) {
			key := dir + "/" + strings.Join(c, " ")
			if _, ok := allowed[key]; !ok {
				t.Errorf("%s: a cycle of files: %s", dir, strings.Join(c, " → "))
			}
			seen[key] = true
		}
	}
	for key := range allowed {
		if !seen[key] {
			t.Errorf("%s: allowed as a cycle of files, and no longer one: remove it from the allowed", key)
		}
	}
}
