// Package goldentest holds the one -update flag of the whole module and the
// helpers that compare output with golden files. Every test package that
// reads golden files imports it; `go test ./... -update` rewrites them all.
// Assets turns each embedded asset in an output (lib/assets/mpi.sh, ...)
// into one line `<asset assets/mpi.sh sha256:…>`, exactly: a copy that
// differs at all stays in full, so a golden shows a script once
// (golden/assets.txt) and every change to it.
package goldentest

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Update is the -update flag (go test ./... -update): when set, golden
// files are rewritten from the current output instead of compared.
var Update = flag.Bool("update", false, "rewrite golden files from the current output")

// Assert compares got with the golden file at path, or rewrites it with
// -update. Files are compared byte for byte.
func Assert(t testing.TB, got []byte, path string) {
	t.Helper()
	if *Update {
		write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run `go test ./... -update` to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run `go test ./... -update` if the change is intended):\n%s", path, diff(string(want), string(got)))
	}
}

// AssertDir compares a set of files (name -> content) with the golden
// directory dir: missing, extra and different files all fail. With -update
// the directory is rewritten to hold exactly these files.
func AssertDir(t testing.TB, files map[string][]byte, dir string) {
	t.Helper()
	if *Update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			write(t, filepath.Join(dir, name), data)
		}
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading golden directory (run `go test ./... -update` to create it): %v", err)
	}
	onDisk := map[string]bool{}
	for _, e := range entries {
		onDisk[e.Name()] = true
		if _, ok := files[e.Name()]; !ok {
			t.Errorf("%s: extra golden file %s", dir, e.Name())
		}
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if !onDisk[n] {
			t.Errorf("%s: missing golden file %s", dir, n)
			continue
		}
		Assert(t, files[n], filepath.Join(dir, n))
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated golden file %s", path)
}

// diff shows the first differing lines, enough to see what changed.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		if shown++; shown == 8 {
			b.WriteString("  ...\n")
			break
		}
	}
	return b.String()
}
