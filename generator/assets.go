package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	yamlv2 "go.yaml.in/yaml/v2"
)

// Assets are files the pods need verbatim, such as the runtime script a
// ConfigMap carries. A prototype names one with ts.asset(path, importstr
// path): under trainsonnet that is a short reference (this file), which
// travels through Jsonnet, the strict decode and the YAML encoder as a few
// bytes, and the file's content - encoded once per Generator - takes its
// place in the output. A 27 KB script copied through every stage of every
// render was a third of the render's time. Under the stock jsonnet binary
// ts.asset is the content itself.

// assetPrefix starts every asset reference. The NUL keeps it from ever
// being mistaken for text a prototype meant.
const assetPrefix = "\x00trainsonnet.asset:"

// asset is one file's content and its encodings, computed once.
type asset struct {
	content string
	ref     string // the reference the prototype holds: assetPrefix + path
	jsonRef []byte // the reference as a JSON string token
	json    []byte // the content as a JSON string token
	yamlRef []byte // `: <reference as a YAML scalar>`, as the YAML encoder writes it
	yaml    []string
}

// assets resolves and caches asset files for a Generator.
type assets struct {
	im *importer
	mu sync.Mutex
	by map[string]*asset // by reference
}

func newAssets(im *importer) *assets { return &assets{im: im, by: map[string]*asset{}} }

// ref returns the reference for path, reading the file on first use.
func (a *assets) ref(path string) (string, error) {
	ref := assetPrefix + path
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.by[ref]; ok {
		return ref, nil
	}
	contents, _, err := a.im.Import("", path)
	if err != nil {
		return "", fmt.Errorf("asset %q: %w", path, err)
	}
	as := &asset{content: contents.String(), ref: ref}
	if as.jsonRef, err = json.Marshal(ref); err != nil {
		return "", err
	}
	if as.json, err = json.Marshal(as.content); err != nil {
		return "", err
	}
	y, err := yamlv2.Marshal(ref)
	if err != nil {
		return "", err
	}
	as.yamlRef = append([]byte(": "), bytes.TrimSuffix(y, []byte("\n"))...)
	// The content as the YAML encoder writes a map value: after "k: " comes
	// its first line; the others are indented relative to the key.
	y, err = yamlv2.Marshal(map[string]string{"k": as.content})
	if err != nil {
		return "", err
	}
	as.yaml = strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(y), "k: "), "\n"), "\n")
	a.by[ref] = as
	return ref, nil
}

// hasRefs reports whether a decoded object holds an asset reference.
func hasRefs(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.HasPrefix(x, assetPrefix)
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

// fillJSON replaces every reference in an object's compact JSON with the
// content, as a JSON string. It returns false if a reference is left (one
// inside a longer string).
func (a *assets) fillJSON(raw []byte) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, as := range a.by {
		raw = bytes.ReplaceAll(raw, as.jsonRef, as.json)
	}
	return raw, !bytes.Contains(raw, []byte("trainsonnet.asset:"))
}

// fillYAML replaces every reference that is a map value in an object's
// YAML with the content, indented for its key. It returns false if a
// reference is left (one inside a longer string, or a list item), for the
// caller to encode the object with the content in place instead.
func (a *assets) fillYAML(y []byte) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, as := range a.by {
		for {
			i := bytes.Index(y, as.yamlRef)
			if i < 0 {
				break
			}
			end := i + len(as.yamlRef)
			if end < len(y) && y[end] != '\n' {
				return y, false
			}
			lineStart := bytes.LastIndexByte(y[:i], '\n') + 1
			indent := keyColumn(y[lineStart:i])
			var b bytes.Buffer
			b.Grow(len(y) + len(as.content) + len(as.yaml)*indent)
			b.Write(y[:i])
			b.WriteString(": ")
			for n, line := range as.yaml {
				if n > 0 {
					b.WriteByte('\n')
					if line != "" {
						b.WriteString(strings.Repeat(" ", indent))
					}
				}
				b.WriteString(line)
			}
			b.Write(y[end:])
			y = b.Bytes()
		}
	}
	return y, !bytes.Contains(y, []byte("trainsonnet.asset:"))
}

// keyColumn is the column at which a mapping key starts in a YAML line
// such as "  key" or "  - key".
func keyColumn(line []byte) int {
	col := 0
	for col < len(line) && (line[col] == ' ' || (line[col] == '-' && col+1 < len(line) && line[col+1] == ' ')) {
		col++
	}
	return col
}

// fill returns a copy of a decoded object with every reference replaced by
// the content, for the slow path.
func (a *assets) fill(v any) any {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, assetPrefix) {
			return x
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, as := range a.by {
			x = strings.ReplaceAll(x, as.ref, as.content)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = a.fill(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = a.fill(e)
		}
		return out
	}
	return v
}
