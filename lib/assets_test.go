package lib_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/trainsonnet/trainsonnet/lib"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestAssetsStayReadableInYAML keeps the scripts free of tabs and trailing
// blanks: the YAML encoder prints a ConfigMap value holding either as one
// long double-quoted string, which nobody can review in a golden file or
// with kubectl get -o yaml. With neither, it prints a literal block.
func TestAssetsStayReadableInYAML(t *testing.T) {
	files, err := fs.Glob(lib.FS, "assets/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no assets found: %v", err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(lib.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "\t") {
				t.Errorf("%s:%d: a tab (indent with spaces)", f, i+1)
			}
			if strings.TrimRight(line, " ") != line {
				t.Errorf("%s:%d: trailing blanks", f, i+1)
			}
		}
	}
}
