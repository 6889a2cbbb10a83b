package goldentest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
)

// Assets are files that outputs hold verbatim, such as the runtime scripts
// of lib/assets in a ConfigMap. Each is pinned once, in a golden file of its
// own; in every other golden file its content is one marker line,
//
//	<asset assets/mpi.sh sha256:…>
//
// so that the goldens stay readable and a change of a script is one
// reviewed diff. The marking is exact: only a value that is the asset's
// content byte for byte, written the one way the encoder writes it, becomes
// the marker, so an output whose copy differs at all keeps it in full and
// fails against its golden. Everything else stays byte for byte.
type Assets struct {
	files  map[string][]byte // by name, relative to the assets' directory
	yaml   map[string]string // content -> marker
	json   map[string]string // content as a JSON string -> marker as one
	prefix string            // of every marker
}

// LoadAssets takes every file under dir in fsys as an asset, named by its
// path in fsys (assets/mpi.sh).
func LoadAssets(fsys fs.FS, dir string) (*Assets, error) {
	a := &Assets{files: map[string][]byte{}, yaml: map[string]string{}, json: map[string]string{}, prefix: "<asset "}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		marker := a.prefix + p + " sha256:" + hex.EncodeToString(sum[:]) + ">"
		if prev, dup := a.yaml[string(data)]; dup {
			return fmt.Errorf("assets %s and %s are the same file; a marker could not tell them apart", prev, p)
		}
		a.yaml[string(data)] = marker
		j, err := json.Marshal(string(data))
		if err != nil {
			return err
		}
		a.json[string(j)] = `"` + marker + `"` // readable: not \u003c…\u003e
		a.files[strings.TrimPrefix(p, dir+"/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading assets %s: %w", dir, err)
	}
	if len(a.files) == 0 {
		return nil, fmt.Errorf("loading assets: no files under %s", dir)
	}
	return a, nil
}

// Files returns the assets by name relative to their directory, to pin
// each once (golden/assets.txt: its sha256 and size).
func (a *Assets) Files() map[string][]byte { return maps.Clone(a.files) }

// Mark replaces each asset in out by its marker: a YAML literal block
// ("key: |") whose value is an asset keeps its header and becomes one line
// holding the marker, at the block's indentation; a JSON string that is an
// asset, as encoding/json writes it, becomes the marker as a JSON string.
// It refuses an output that holds a marker already, which a golden file
// could not tell from the asset.
func (a *Assets) Mark(out []byte) ([]byte, error) {
	if bytes.Contains(out, []byte(a.prefix)) || bytes.Contains(out, []byte(`\u003casset `)) {
		return nil, fmt.Errorf("the output holds %q itself, so its golden file could not tell it from an asset", a.prefix)
	}
	for _, token := range slices.Sorted(maps.Keys(a.json)) {
		out = bytes.ReplaceAll(out, []byte(token), []byte(a.json[token]))
	}
	return []byte(a.markYAML(string(out))), nil
}

// markYAML replaces the literal blocks that hold an asset.
func (a *Assets) markYAML(s string) string {
	if !strings.Contains(s, "|") {
		return s
	}
	lines := strings.SplitAfter(s, "\n") // each with its line break; "" last after a final one
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i])
		chomp, ok := literalHeader(lines[i])
		if !ok {
			continue
		}
		value, indent, end, ok := literalBody(lines, i+1, chomp)
		if !ok {
			continue
		}
		if marker, ok := a.yaml[value]; ok {
			b.WriteString(strings.Repeat(" ", indent) + marker + "\n")
			i = end - 1
		}
	}
	return b.String()
}

// literalHeader recognizes the line that starts a literal block scalar
// without an explicit indentation: "key: |", "- |", "|", with its chomping
// indicator ("", "-" or "+").
func literalHeader(line string) (chomp string, ok bool) {
	line = strings.TrimSuffix(line, "\n")
	for _, c := range []string{"", "-", "+"} {
		h := "|" + c
		if line == h || strings.HasSuffix(line, ": "+h) || strings.HasSuffix(line, "- "+h) {
			return c, true
		}
	}
	return "", false
}

// literalBody reads the block from lines[start] on, written as encoders
// write one: every line indented by the first line's indentation, empty
// lines empty. It returns the block's value, its indentation and the end
// (exclusive) of the lines that hold the value; ok is false for anything
// else, which is then left as it is.
func literalBody(lines []string, start int, chomp string) (value string, indent, end int, ok bool) {
	if start >= len(lines) {
		return "", 0, 0, false
	}
	first := strings.TrimSuffix(lines[start], "\n")
	indent = len(first) - len(strings.TrimLeft(first, " "))
	if indent == 0 || indent == len(first) {
		return "", 0, 0, false
	}
	pad := first[:indent]
	var content []string
	last := -1 // the last line with text
	for j := start; j < len(lines) && lines[j] != ""; j++ {
		l := strings.TrimSuffix(lines[j], "\n")
		if l == "" {
			content = append(content, "")
			continue
		}
		if strings.TrimLeft(l, " ") == "" {
			return "", 0, 0, false // a blank line of spaces: not the way encoders write one
		}
		if !strings.HasPrefix(l, pad) {
			break // the block ends
		}
		content = append(content, l[indent:])
		last = j
	}
	content = content[:last-start+1]
	value = strings.Join(content, "\n")
	end = last + 1
	finalBreak := strings.HasSuffix(lines[last], "\n")
	switch chomp {
	case "":
		if finalBreak {
			value += "\n"
		}
	case "+":
		if finalBreak {
			value += "\n"
		}
		for end < len(lines) && lines[end] == "\n" {
			value += "\n"
			end++
		}
	}
	return value, indent, end, true
}

// Assert marks the assets in got and compares it with the golden file at
// path, as the package's Assert does.
func (a *Assets) Assert(t testing.TB, got []byte, path string) {
	t.Helper()
	marked, err := a.Mark(got)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	Assert(t, marked, path)
}

// AssertDir marks the assets in every file and compares them with the
// golden directory dir, as the package's AssertDir does.
func (a *Assets) AssertDir(t testing.TB, files map[string][]byte, dir string) {
	t.Helper()
	marked := make(map[string][]byte, len(files))
	for name, data := range files {
		m, err := a.Mark(data)
		if err != nil {
			t.Fatalf("%s: %v", path.Join(dir, name), err)
		}
		marked[name] = m
	}
	AssertDir(t, marked, dir)
}
