package generator

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yamlv2 "go.yaml.in/yaml/v2"
)

// indexedLinesBytes must agree with the length of what indexedLines
// builds: prototypes use it to check a hostfile's size before building it.
func TestIndexedLinesBytes(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {0, 1}, {0, 9}, {0, 10}, {0, 11}, {0, 100}, {0, 101}, {3, 7}, {5, 1234}, {99, 1001}, {0, 100000}} {
		lines, err := indexedLines([]any{"job-launcher.job slots=2\n", "job-worker-", ".job slots=2", float64(c[0]), float64(c[1])})
		if err != nil {
			t.Fatal(err)
		}
		n, err := indexedLinesBytes([]any{"job-launcher.job slots=2\n", "job-worker-", ".job slots=2", float64(c[0]), float64(c[1])})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.(float64), float64(len(lines.(string))); got != want {
			t.Errorf("[%d, %d): %v bytes, want %v", c[0], c[1], got, want)
		}
	}
	lines, _ := indexedLines([]any{"head\n", "w-", " slots=1", float64(8), float64(11)})
	if want := "head\nw-8 slots=1\nw-9 slots=1\nw-10 slots=1\n"; lines != want {
		t.Errorf("indexedLines = %q, want %q", lines, want)
	}
	if _, err := indexedLines([]any{"", "a", "b", float64(3), float64(1)}); err == nil || !strings.Contains(err.Error(), "bad range") {
		t.Errorf("a reversed range: %v", err)
	}
}

// TestLiteralBlock holds the fast path for large strings to the bytes the
// YAML encoder writes: for every input it accepts, the same lines.
func TestLiteralBlock(t *testing.T) {
	for _, s := range []string{
		"a\n", "a\nb\n", "x-worker-0.x slots=1\nx-worker-1.x slots=1\n", "#!/bin/sh\n\necho hi\n  indented\n",
		"a\n\n\nb\n", "key: value\n- item\n", "'quoted' \"double\" {flow} [seq] & * ! | > % @ `\n",
		" leading\n", "trailing \n", "no newline", "two\n\n", "\n", "tab\there\n", "é\n", "a \nb\n", "",
	} {
		checkLiteralBlock(t, s)
	}
}

func FuzzLiteralBlock(f *testing.F) {
	for _, s := range []string{"a\n", "x y\n\nz\n", " a\n", "a \n", "a:b\n- c\n"} {
		f.Add(s)
	}
	f.Fuzz(checkLiteralBlock)
}

func checkLiteralBlock(t *testing.T, s string) {
	lines, ok := literalBlock(s)
	if !ok {
		return
	}
	y, err := yamlv2.Marshal(map[string]string{"k": s})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(y), "k: "), "\n"), "\n")
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("%q:\n got  %q\n want %q", s, lines, want)
	}
}

func TestIndexedList(t *testing.T) {
	for _, c := range []struct {
		from, to int
		want     string
	}{
		{0, 0, ""},
		{0, 1, `"a-0.a:2222"`},
		{0, 3, `"a-0.a:2222","a-1.a:2222","a-2.a:2222"`},
		{9, 11, `"a-9.a:2222","a-10.a:2222"`},
	} {
		got, err := indexedList([]any{`"a-`, `.a:2222"`, ",", float64(c.from), float64(c.to)})
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
	_, err := indexedList([]any{"a", "b", 1.0, 0.0, 1.0})
	require.Error(t, err)
}
