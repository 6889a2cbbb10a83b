package goldentest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/fstest"
)

const script = "#!/bin/sh\n# a \"script\" <with> & such\n\nif true; then\n  echo hi\nfi\n"

func testAssets(t *testing.T) (*Assets, string) {
	t.Helper()
	a, err := LoadAssets(fstest.MapFS{
		"assets/run.sh":   {Data: []byte(script)},
		"assets/other.sh": {Data: []byte("#!/bin/sh\nexit 0\n")},
		"other/not-me.sh": {Data: []byte("#!/bin/sh\n")},
	}, "assets")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(script))
	return a, "<asset assets/run.sh sha256:" + hex.EncodeToString(sum[:]) + ">"
}

// block writes s as a YAML literal block under a key at indent.
func block(key string, indent int, s string) string {
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	b.WriteString(pad + key + ": |\n")
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l != "" {
			l = pad + "  " + l
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func TestMarkYAML(t *testing.T) {
	a, marker := testAssets(t)
	if got := a.Files(); len(got) != 2 || string(got["run.sh"]) != script {
		t.Fatalf("Files() = %q", got)
	}
	in := "apiVersion: v1\ndata:\n" + block("run.sh", 2, script) + block("other", 2, "echo\n") + "kind: ConfigMap\n---\n" +
		"items:\n- data:\n" + block("run.sh", 4, script) + "  kind: ConfigMap\n"
	want := "apiVersion: v1\ndata:\n  run.sh: |\n    " + marker + "\n" + block("other", 2, "echo\n") + "kind: ConfigMap\n---\n" +
		"items:\n- data:\n    run.sh: |\n      " + marker + "\n  kind: ConfigMap\n"
	got, err := a.Mark([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Mark:\n%s\nwant:\n%s", got, want)
	}
	// At the end of the output too.
	got, err = a.Mark([]byte(block("run.sh", 0, script)))
	if err != nil || string(got) != "run.sh: |\n  "+marker+"\n" {
		t.Errorf("Mark at the end = %q, %v", got, err)
	}
}

// TestMarkIsExact: a copy that differs from the asset at all, or is
// written another way, stays as it is.
func TestMarkIsExact(t *testing.T) {
	a, _ := testAssets(t)
	for name, in := range map[string]string{
		"one byte":            block("run.sh", 2, strings.Replace(script, "hi", "ho", 1)),
		"a line more":         block("run.sh", 2, script+"exit 0\n"),
		"a line less":         block("run.sh", 2, strings.TrimSuffix(script, "fi\n")),
		"no final line break": strings.Replace(block("run.sh", 2, script), "run.sh: |", "run.sh: |-", 1),
		"a blank of spaces":   strings.Replace(block("run.sh", 2, script), "\n\n", "\n    \n", 1),
		"indented unevenly":   strings.Replace(block("run.sh", 2, script), "    fi\n", "     fi\n", 1),
		"JSON, one byte":      `{"run.sh": "#!/bin/sh\n"}`,
	} {
		got, err := a.Mark([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != in {
			t.Errorf("%s: marked:\n%s", name, got)
		}
	}
}

func TestMarkJSON(t *testing.T) {
	a, marker := testAssets(t)
	in := `{"data": {"run.sh": "#!/bin/sh\n# a \"script\" \u003cwith\u003e \u0026 such\n\nif true; then\n  echo hi\nfi\n", "x": "y"}}`
	want := `{"data": {"run.sh": "` + marker + `", "x": "y"}}`
	got, err := a.Mark([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Mark:\n%s\nwant:\n%s", got, want)
	}
}

func TestMarkRefusesAMarker(t *testing.T) {
	a, marker := testAssets(t)
	for _, in := range []string{"x: " + marker + "\n", `{"x": "\u003casset assets/run.sh sha256:0\u003e"}`} {
		if _, err := a.Mark([]byte(in)); err == nil {
			t.Errorf("Mark(%q) succeeds", in)
		}
	}
}
