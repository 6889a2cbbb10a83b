package generator

import (
	"strings"
	"testing"
)

// indexedLinesBytes must agree with the length of what indexedLines
// builds: prototypes use it to check a hostfile's size before building it.
func TestIndexedLinesBytes(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {0, 1}, {0, 9}, {0, 10}, {0, 11}, {0, 100}, {0, 101}, {3, 7}, {5, 1234}, {99, 1001}, {0, 100000}} {
		lines, err := indexedLines([]any{"job-worker-", ".job slots=2", float64(c[0]), float64(c[1])})
		if err != nil {
			t.Fatal(err)
		}
		n, err := indexedLinesBytes([]any{"job-worker-", ".job slots=2", float64(c[0]), float64(c[1])})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.(float64), float64(len(lines.(string))); got != want {
			t.Errorf("[%d, %d): %v bytes, want %v", c[0], c[1], got, want)
		}
	}
	lines, _ := indexedLines([]any{"w-", " slots=1", float64(8), float64(11)})
	if want := "w-8 slots=1\nw-9 slots=1\nw-10 slots=1\n"; lines != want {
		t.Errorf("indexedLines = %q, want %q", lines, want)
	}
	if _, err := indexedLines([]any{"a", "b", float64(3), float64(1)}); err == nil || !strings.Contains(err.Error(), "bad range") {
		t.Errorf("a reversed range: %v", err)
	}
}
