package eval

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Large strings are made in Go, and a prototype holds a reference to
// them instead of the text: a file the pods need verbatim (ts.asset, such
// as the runtime script in a ConfigMap) and text that grows with the job
// (ts.indexedLines, ts.indexedList: a hostfile of 10,000 lines). Copying a
// 27 KB script or a 330 KB hostfile through Jsonnet (its strings are
// arrays of runes), the hand-over and the strict decode cost more than
// everything else in a render; BenchmarkRenderRefs shows what references
// save.
//
// A reference names how its text is made: the native that makes it and
// that native's arguments (a file's path; a hostfile's prefix, suffix and
// range), so it needs no state of the render. Right after the strict
// decode and the checks of an object, resolveRefs puts each text in place
// of its reference in the decoded object: every encoder sees plain
// strings. A reference is a whole value of a ConfigMap's data, the one
// place where the checks of an object do not read the text (they would
// see the reference instead); it is opaque to a prototype, which cannot
// inspect it (std.length of it is not the text's) or join it to other
// text. Under the stock jsonnet binary the natives are missing and the
// text is used directly.

// refPrefix starts every reference and refEnd ends it; the NULs keep a
// reference from ever being mistaken for text a prototype meant. Between
// them: the native's name, a colon and its arguments as a JSON array.
const (
	refPrefix = "\x00trainsonnet.ref:"
	refEnd    = "\x00"
)

// largeStrings makes the large strings of a Generator's prototypes.
type largeStrings struct {
	im *importer
	mu sync.Mutex
	by map[string]string // files read, by path
}

func newLargeStrings(im *importer) *largeStrings {
	return &largeStrings{im: im, by: map[string]string{}}
}

// file is the text of the file at path, read once.
func (l *largeStrings) file(path string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if text, ok := l.by[path]; ok {
		return text, nil
	}
	contents, _, err := l.im.Import("", path)
	if err != nil {
		return "", fmt.Errorf("asset %q: %w", path, err)
	}
	l.by[path] = contents.String()
	return l.by[path], nil
}

// text checks the arguments of the native name, one of those that make a
// large string, and with build makes the string (a file is read either
// way, once).
func (l *largeStrings) text(name string, args []any, build bool) (string, error) {
	switch name {
	case "asset":
		path, ok := args[0].(string)
		if !ok {
			return "", fmt.Errorf("asset(path) wants a string")
		}
		return l.file(path)
	case "indexedLines", "indexedList":
		r, err := indexedArgs(name, args)
		if err != nil || !build {
			return "", err
		}
		return r.text(), nil
	}
	return "", fmt.Errorf("%s makes no large string", name)
}

// hold is the native name that makes a large string: it checks the
// arguments and returns a reference to the text, or with inline the text
// itself (what the stock jsonnet binary gets, and what BenchmarkRenderRefs
// compares with).
func (l *largeStrings) hold(name string, inline bool) func([]any) (any, error) {
	return func(args []any) (any, error) {
		text, err := l.text(name, args, inline)
		if err != nil || inline {
			return text, err
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return refPrefix + name + ":" + string(b) + refEnd, nil
	}
}

// resolve is the text the reference s stands for, or false when s is not
// one whole reference (text joined to it, or two of them).
func (l *largeStrings) resolve(s string) (string, bool, error) {
	body, ok := strings.CutPrefix(s, refPrefix)
	if !ok {
		return "", false, nil
	}
	body, ok = strings.CutSuffix(body, refEnd)
	name, argsJSON, found := strings.Cut(body, ":")
	var args []any
	if !ok || !found || strings.Contains(argsJSON, refEnd) || json.Unmarshal([]byte(argsJSON), &args) != nil || len(args) == 0 {
		return "", false, nil
	}
	if l == nil {
		return "", false, fmt.Errorf("a reference to a large string outside a render")
	}
	text, err := l.text(name, args, true)
	return text, err == nil, err
}

// hasRefs reports whether a decoded value holds a reference.
func hasRefs(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, refPrefix)
	case map[string]any:
		for _, e := range x {
			if hasRefs(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasRefs(e) {
				return true
			}
		}
	}
	return false
}

// resolveRefs puts in the decoded object m, in place of each reference,
// the text it stands for, and says whether there was any and how many
// bytes longer the object became; a reference
// anywhere but as a whole value of a ConfigMap's data is a bug in the
// prototype.
func (l *largeStrings) resolveRefs(apiVersion, kind string, m map[string]any) (replaced bool, grown int, err error) {
	for k, v := range m {
		data, isData := v.(map[string]any)
		if k != "data" || apiVersion != "v1" || kind != "ConfigMap" || !isData {
			if hasRefs(v) {
				return false, 0, fmt.Errorf("%s holds a large string (ts.asset, ts.indexedLines, ts.indexedList), which may only be a whole value of a ConfigMap's data", k)
			}
			continue
		}
		for key, e := range data {
			s, _ := e.(string)
			if !strings.Contains(s, refPrefix) {
				continue
			}
			text, whole, err := l.resolve(s)
			if err != nil {
				return false, 0, fmt.Errorf("data.%s: %w", key, err)
			}
			if !whole {
				return false, 0, fmt.Errorf("data.%s joins a large string (ts.asset, ts.indexedLines, ts.indexedList) to other text: it may only be a whole value", key)
			}
			data[key], replaced = text, true
			grown += len(text) - len(s)
		}
	}
	return replaced, grown, nil
}

// indexedRange is what indexedLines and indexedList make: head, then
// prefix+i+suffix for every i in [from, to), each followed by sep
// (terminated: lines) or with sep between them (a list).
type indexedRange struct {
	head, prefix, suffix, sep string
	from, to                  int
	terminated                bool
}

// indexedArgs reads the arguments of indexedLines and indexedLinesBytes
// (head, prefix, suffix, from, to) or of indexedList (prefix, suffix,
// sep, from, to).
func indexedArgs(name string, args []any) (indexedRange, error) {
	want := "(head, prefix, suffix, from, to) wants three strings and two numbers"
	if name == "indexedList" {
		want = "(prefix, suffix, sep, from, to) wants three strings and two numbers"
	}
	if len(args) != 5 {
		return indexedRange{}, fmt.Errorf("%s%s", name, want)
	}
	var text [3]string
	for i := range text {
		s, ok := args[i].(string)
		if !ok {
			return indexedRange{}, fmt.Errorf("%s%s", name, want)
		}
		text[i] = s
	}
	f, ok3 := args[3].(float64)
	t, ok4 := args[4].(float64)
	if !ok3 || !ok4 {
		return indexedRange{}, fmt.Errorf("%s%s", name, want)
	}
	if f != float64(int(f)) || t != float64(int(t)) || f < 0 || t < f || t-f > 1e7 {
		return indexedRange{}, fmt.Errorf("%s: bad range [%v, %v)", name, f, t)
	}
	if name == "indexedList" {
		return indexedRange{prefix: text[0], suffix: text[1], sep: text[2], from: int(f), to: int(t)}, nil
	}
	return indexedRange{head: text[0], prefix: text[1], suffix: text[2], sep: "\n", from: int(f), to: int(t), terminated: true}, nil
}

// text makes the string.
func (r indexedRange) text() string {
	var b strings.Builder
	b.Grow(len(r.head) + (r.to-r.from)*(len(r.prefix)+len(r.suffix)+len(r.sep)+6))
	b.WriteString(r.head)
	var num [20]byte
	for i := r.from; i < r.to; i++ {
		if !r.terminated && i > r.from {
			b.WriteString(r.sep)
		}
		b.WriteString(r.prefix)
		b.Write(strconv.AppendInt(num[:0], int64(i), 10))
		b.WriteString(r.suffix)
		if r.terminated {
			b.WriteString(r.sep)
		}
	}
	return b.String()
}

// bytes is the length of text(), without making it.
func (r indexedRange) bytes() int {
	n := len(r.head) + (r.to-r.from)*(len(r.prefix)+len(r.suffix))
	if r.to > r.from {
		if r.terminated {
			n += (r.to - r.from) * len(r.sep)
		} else {
			n += (r.to - r.from - 1) * len(r.sep)
		}
	}
	for lo, digits := 1, 1; lo <= r.to; lo, digits = lo*10, digits+1 {
		// numbers in [max(from, lo), min(to, 10*lo)) have `digits` digits
		// (0 is counted with the one-digit numbers below)
		a, b := max(r.from, lo), min(r.to, lo*10)
		if b > a {
			n += (b - a) * digits
		}
	}
	if r.from == 0 && r.to > 0 {
		n++ // the number 0
	}
	return n
}
