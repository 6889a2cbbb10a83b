package eval

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// lines is indexedLines of args, as its reference resolves.
func lines(t *testing.T, name string, args ...any) string {
	t.Helper()
	r, err := indexedArgs(name, args)
	require.NoError(t, err)
	return r.text()
}

// indexedLinesBytes must agree with the length of what indexedLines
// makes: prototypes use it to check a hostfile's size before making it.
func TestIndexedLinesBytes(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {0, 1}, {0, 9}, {0, 10}, {0, 11}, {0, 100}, {0, 101}, {3, 7}, {5, 1234}, {99, 1001}, {0, 100000}} {
		args := []any{"job-launcher.job slots=2\n", "job-worker-", ".job slots=2", float64(c[0]), float64(c[1])}
		r, err := indexedArgs("indexedLinesBytes", args)
		require.NoError(t, err)
		if got, want := r.bytes(), len(lines(t, "indexedLines", args...)); got != want {
			t.Errorf("[%d, %d): %v bytes, want %v", c[0], c[1], got, want)
		}
	}
	if got, want := lines(t, "indexedLines", "head\n", "w-", " slots=1", float64(8), float64(11)), "head\nw-8 slots=1\nw-9 slots=1\nw-10 slots=1\n"; got != want {
		t.Errorf("indexedLines = %q, want %q", got, want)
	}
	if _, err := indexedArgs("indexedLines", []any{"", "a", "b", float64(3), float64(1)}); err == nil || !strings.Contains(err.Error(), "bad range") {
		t.Errorf("a reversed range: %v", err)
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
		require.Equal(t, c.want, lines(t, "indexedList", `"a-`, `.a:2222"`, ",", float64(c.from), float64(c.to)))
	}
	_, err := indexedArgs("indexedList", []any{"a", "b", 1.0, 0.0, 1.0})
	require.Error(t, err)
}

// TestRefs: a reference resolves to what its native makes of its
// arguments; anything but one whole reference does not resolve.
func TestRefs(t *testing.T) {
	l := builtins().large
	ref := func(name string, args ...any) string {
		r, err := l.hold(name, false)(args)
		require.NoError(t, err)
		return r.(string)
	}
	hosts := ref("indexedLines", "head\n", "w-", " slots=1", 0.0, 2.0)
	script := ref("asset", "lib/assets/runtime.sh")
	for s, want := range map[string]string{
		hosts:  "head\nw-0 slots=1\nw-1 slots=1\n",
		script: "#!/bin/sh\n",
	} {
		text, whole, err := l.resolve(s)
		require.NoError(t, err)
		require.True(t, whole, s)
		require.True(t, strings.HasPrefix(text, want), "%q resolves to %.40q", s, text)
	}
	for _, s := range []string{hosts + "x", "x" + hosts, hosts + script, strings.TrimSuffix(hosts, refEnd), refPrefix + "indexedLines:[]" + refEnd} {
		_, whole, _ := l.resolve(s)
		require.False(t, whole, "%q", s)
	}
	_, err := l.hold("asset", false)([]any{"lib/assets/none.sh"})
	require.ErrorContains(t, err, `asset "lib/assets/none.sh"`)
	_, err = l.hold("indexedLines", false)([]any{"", "a", "b", 3.0, 1.0})
	require.ErrorContains(t, err, "bad range")
}
