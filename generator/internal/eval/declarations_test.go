package eval

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/internal/goldentest"
	"github.com/trainsonnet/trainsonnet/lib"
	"github.com/trainsonnet/trainsonnet/prototypes"
)

// TestDeclarationsUpToDate fails when a built-in prototype's declaration,
// evaluated now, is not the one in declarations/<name>.json for these
// sources (a prototype or library changed since). Fix with
// `go generate ./generator` or `go test ./generator/internal/eval -update`.
func TestDeclarationsUpToDate(t *testing.T) {
	e := builtins()
	files, err := fs.Glob(prototypes.FS, "*.jsonnet")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(f, ".jsonnet")
		names = append(names, name)
		out, err := e.Evaluate(nil, "prototypes/"+f, Empty(), "spec")
		require.NoError(t, err, name)
		goldentest.Assert(t, []byte(out), filepath.Join("declarations", name+".json"))
		if got := builtinDeclaration(name); !*goldentest.Update && got == "" {
			t.Errorf("%s: the embedded declaration is not taken", name)
		}
	}
	goldentest.Assert(t, []byte(sourcesDigest()+"\n"), declarationsSourcesFile)
	// No file for a prototype that is gone.
	files, err = filepath.Glob(filepath.Join("declarations", "*.json"))
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !slices.Contains(names, name) {
			if *goldentest.Update {
				require.NoError(t, os.Remove(f))
				continue
			}
			t.Errorf("%s: no built-in prototype %s; remove it with -update", f, name)
		}
	}
}

// builtins is an Engine over the embedded files alone.
func builtins() *Engine {
	return New(map[string]fs.FS{"prototypes": prototypes.FS, "lib": lib.FS}, nil, nil)
}

// TestStaleDeclarationIsEvaluated: declarations evaluated from other
// sources than the binary's are never used, and a lookup then evaluates
// the prototype's own; with prototype paths (which may shadow the
// libraries) the declaration is evaluated too.
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
	// With prototype paths, openmpi's declaration is evaluated: the same
	// as the embedded one with a path that shadows nothing, and with the
	// library a path shadows.
	embedded := map[string]fs.FS{"prototypes": prototypes.FS, "lib": lib.FS}
	got, err := New(embedded, []string{t.TempDir()}, []string{"protos"}).Declaration(nil, "openmpi", "prototypes/openmpi.jsonnet", true)
	require.NoError(t, err)
	require.JSONEq(t, builtinDeclaration("openmpi"), got)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trainsonnet.libsonnet"), []byte("error 'the shadow'\n"), 0o644))
	_, err = New(embedded, []string{dir}, []string{"protos"}).Declaration(nil, "openmpi", "prototypes/openmpi.jsonnet", true)
	require.ErrorContains(t, err, "the shadow")
}
