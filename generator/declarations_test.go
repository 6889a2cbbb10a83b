package generator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-jsonnet/ast"

	"github.com/trainsonnet/trainsonnet/internal/goldentest"
)

// TestDeclarationsUpToDate fails when a built-in prototype's declaration,
// evaluated now, is not the one in declarations/<name>.json for these
// sources (a prototype or library changed since). Fix with
// `go generate ./generator` or `go test ./generator -update`.
func TestDeclarationsUpToDate(t *testing.T) {
	g, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, src := range g.sources {
		if !src.builtin {
			continue
		}
		names = append(names, name)
		out, err := g.evaluate(nil, src.path, &ast.DesugaredObject{}, "spec")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		goldentest.Assert(t, []byte(out), filepath.Join("declarations", name+".json"))
		if got := builtinDeclaration(name); !*goldentest.Update && got == "" {
			t.Errorf("%s: the embedded declaration is not taken", name)
		}
	}
	goldentest.Assert(t, []byte(sourcesDigest()+"\n"), declarationsSourcesFile)
	// No file for a prototype that is gone.
	files, err := filepath.Glob(filepath.Join("declarations", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !slices.Contains(names, name) {
			if *goldentest.Update {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s: no built-in prototype %s; remove it with -update", f, name)
		}
	}
}

// TestStaleDeclarationIsEvaluated: declarations evaluated from other
// sources than the binary's are never used, and a lookup then evaluates
// the prototype's own; with prototype paths (which may shadow the
// libraries) the lookup evaluates too.
func TestStaleDeclarationIsEvaluated(t *testing.T) {
	if builtinDeclaration("openmpi") == "" {
		t.Fatal("the embedded declarations do not match the embedded sources (run go generate ./generator)")
	}
	if got := declarationFrom("openmpi", "sha256:0000"); got != "" {
		t.Errorf("a declaration of other sources was taken")
	}
	if got := builtinDeclaration("no-such-prototype"); got != "" {
		t.Errorf("a declaration of no prototype: %q", got)
	}
	// With a prototype path, openmpi is evaluated: its declaration is the
	// same as the embedded one here (the path holds no library of the same
	// name), and it renders.
	g, err := New(Options{PrototypePaths: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := g.Lookup("openmpi")
	if err != nil {
		t.Fatal(err)
	}
	g0, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr0, err := g0.Lookup("openmpi")
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Params) != len(pr0.Params) || pr.Summary != pr0.Summary {
		t.Errorf("evaluated and embedded declarations differ: %d and %d parameters", len(pr.Params), len(pr0.Params))
	}
	if _, err := g.Render(context.Background(), NewParams("openmpi")); err != nil {
		t.Fatal(err)
	}
}
