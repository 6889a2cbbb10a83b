package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Large strings are held in Go, and a render passes around references to
// them instead: a file the pods need verbatim (ts.asset, such as the
// runtime script in a ConfigMap) and a string a native function built
// (ts.indexedLines, such as a hostfile of 10,000 lines). A reference
// travels through Jsonnet, the strict decode and the YAML encoder as a few
// bytes, and the content takes its place in the output. Copying a 27 KB
// script or a 330 KB hostfile through every stage of a render cost more
// than everything else in it.
//
// A reference has one place: a whole value of a ConfigMap's data, which
// is where every large string of a job lives (scripts, hostfiles, host
// lists). checkRefs holds every rendered object to that, so the outputs
// fill references in at that one level: a JSON string token, or a YAML
// map value two spaces in, under data. For a prototype a reference is
// opaque: it cannot be inspected (std.length of it is not the content's)
// or joined to other text. Under the stock jsonnet binary the natives are
// missing and the content is used directly.

// refPrefix starts every reference. The NUL keeps it from ever being
// mistaken for text a prototype meant.
const refPrefix = "\x00trainsonnet.ref:"

// blob is one large string and its encodings, made on first use.
type blob struct {
	ref     string
	content string

	once    sync.Once
	jsonRef []byte   // the reference as a JSON string token
	json    []byte   // the content as a JSON string token
	yamlRef []byte   // ": " and the reference as the YAML encoder writes a scalar
	yaml    []string // the content as the YAML encoder writes a map value, by line
	err     error
}

func (b *blob) encode() error {
	b.once.Do(func() {
		if b.jsonRef, b.err = json.Marshal(b.ref); b.err != nil {
			return
		}
		if b.json, b.err = json.Marshal(b.content); b.err != nil {
			return
		}
		var y []byte
		if y, b.err = yamlv2.Marshal(b.ref); b.err != nil {
			return
		}
		b.yamlRef = append([]byte(": "), bytes.TrimSuffix(y, []byte("\n"))...)
		if lines, ok := literalBlock(b.content); ok {
			b.yaml = lines
			return
		}
		// After "k: " comes the first line; the others are indented
		// relative to the key.
		if y, b.err = yamlv2.Marshal(map[string]string{"k": b.content}); b.err != nil {
			return
		}
		b.yaml = strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(y), "k: "), "\n"), "\n")
	})
	return b.err
}

// literalBlock writes the common case of a large string the way the YAML
// encoder does, without its per-character machinery (which took 8 ms for
// the hostfile of 10,000 workers): printable ASCII lines, no blank at the
// start or before a line break, one line break at the end. That is a
// literal block, "|", with each line indented two spaces under its key and
// blank lines left empty. Anything else gets false, for the encoder to
// decide; TestLiteralBlock holds the two to the same bytes.
func literalBlock(s string) ([]string, bool) {
	if len(s) < 2 || s[0] == ' ' || s[0] == '\n' || s[len(s)-1] != '\n' || s[len(s)-2] == '\n' {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			if s[i-1] == ' ' {
				return nil, false
			}
		case c < 0x20 || c > 0x7e:
			return nil, false
		}
	}
	body := strings.Split(s[:len(s)-1], "\n")
	lines := make([]string, 1, len(body)+1)
	lines[0] = "|"
	for _, l := range body {
		if l != "" {
			l = "  " + l
		}
		lines = append(lines, l)
	}
	return lines, true
}

// fileBlobs caches the files of a Generator's prototypes, read once.
type fileBlobs struct {
	im *importer
	mu sync.Mutex
	by map[string]*blob // by path
}

func newFileBlobs(im *importer) *fileBlobs { return &fileBlobs{im: im, by: map[string]*blob{}} }

func (f *fileBlobs) get(path string) (*blob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.by[path]; ok {
		return b, nil
	}
	contents, _, err := f.im.Import("", path)
	if err != nil {
		return nil, fmt.Errorf("asset %q: %w", path, err)
	}
	b := &blob{ref: refPrefix + "file:" + path, content: contents.String()}
	f.by[path] = b
	return b, nil
}

// blobSet is the blobs one render refers to. A render fills it on one
// goroutine; the outputs read it afterwards.
type blobSet struct {
	by map[string]*blob // by reference
}

func (s *blobSet) add(b *blob) string {
	if s.by == nil {
		s.by = map[string]*blob{}
	}
	s.by[b.ref] = b
	return b.ref
}

// value holds a string a native built during the render.
func (s *blobSet) value(content string) string {
	return s.add(&blob{ref: refPrefix + "value:" + strconv.Itoa(len(s.by)), content: content})
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

// checkRefs reports whether the decoded object m holds references, and
// refuses one anywhere but as a whole value of a ConfigMap's data (a bug
// in the prototype): the one place the outputs fill them in.
func (s *blobSet) checkRefs(apiVersion, kind string, m map[string]any) (bool, error) {
	found := false
	for k, v := range m {
		data, isData := v.(map[string]any)
		if k != "data" || apiVersion != "v1" || kind != "ConfigMap" || !isData {
			if hasRefs(v) {
				return false, fmt.Errorf("%s holds a large string (ts.asset, ts.indexedLines, ts.indexedList), which may only be a whole value of a ConfigMap's data", k)
			}
			continue
		}
		for key, e := range data {
			text, _ := e.(string)
			if !strings.Contains(text, refPrefix) {
				continue
			}
			if _, whole := s.by[text]; !whole {
				return false, fmt.Errorf("data.%s joins a large string (ts.asset, ts.indexedLines, ts.indexedList) to other text: it may only be a whole value", key)
			}
			found = true
		}
	}
	return found, nil
}

// fillJSON replaces every reference in an object's compact JSON, each a
// whole string token, with the content.
func (s *blobSet) fillJSON(raw []byte) ([]byte, error) {
	for _, b := range s.by {
		if err := b.encode(); err != nil {
			return nil, err
		}
		raw = bytes.ReplaceAll(raw, b.jsonRef, b.json)
	}
	return raw, nil
}

// dataIndent is the column of a ConfigMap's data keys in its YAML.
const dataIndent = 2

// fillYAML replaces every reference in a ConfigMap's YAML, each the value
// of a data key (checkRefs), with the content as the YAML encoder would
// have written it there.
func (s *blobSet) fillYAML(y []byte) ([]byte, error) {
	for _, b := range s.by {
		if err := b.encode(); err != nil {
			return nil, err
		}
		for {
			i := bytes.Index(y, b.yamlRef)
			if i < 0 {
				break
			}
			end := i + len(b.yamlRef)
			var out bytes.Buffer
			out.Grow(len(y) + len(b.content) + len(b.yaml)*dataIndent)
			out.Write(y[:i])
			out.WriteString(": ")
			for n, line := range b.yaml {
				if n > 0 {
					out.WriteByte('\n')
					if line != "" {
						out.WriteString(strings.Repeat(" ", dataIndent))
					}
				}
				out.WriteString(line)
			}
			out.Write(y[end:])
			y = out.Bytes()
		}
	}
	return y, nil
}
