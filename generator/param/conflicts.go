package param

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// A conflict is something one source says twice, differently or not,
// that decoding would resolve without a word: a key given twice in one
// YAML or JSON mapping (the last would win), or a second YAML document
// (it would be ignored). At is the key's dotted path ("" for the file).
type conflict struct {
	at, rule string
}

// yamlConflicts finds the conflicts of YAML or JSON text. sigs.k8s.io/yaml,
// which decodes it, keeps the last of two equal keys and reads only the
// first document; go.yaml.in/yaml/v2's MapSlice keeps both keys and its
// decoder reads every document, so they can be named. Text that does not
// parse has no conflicts here: the decoder that reads it says what is wrong.
func yamlConflicts(data []byte) []conflict {
	var out []conflict
	d := yamlv2.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n document
		err := d.Decode(&n)
		switch {
		case doc == 1 && err != nil:
			return out // not YAML: the caller says so
		case doc == 1:
			duplicateKeys(n.v, "", &out)
		case errors.Is(err, io.EOF):
			return out
		case err != nil || !n.empty():
			return append(out, conflict{rule: "holds a second YAML document (after ---), which would be ignored: " +
				"put every parameter in one document, or the second in a file of its own (-f)"})
		}
		// an empty document, as after a trailing ---, is nothing
	}
}

// document decodes a YAML document that is a map or a list of maps with
// every map, at any depth, as a MapSlice, which keeps a key given twice.
type document struct{ v any }

func (n *document) empty() bool {
	switch x := n.v.(type) {
	case nil:
		return true
	case yamlv2.MapSlice:
		return len(x) == 0
	}
	return false
}

func (n *document) UnmarshalYAML(unmarshal func(any) error) error {
	var shape any
	if err := unmarshal(&shape); err != nil {
		return err
	}
	switch shape.(type) {
	case map[any]any:
		var m yamlv2.MapSlice
		if err := unmarshal(&m); err != nil {
			return err
		}
		n.v = m
	case []any:
		var l []yamlv2.MapSlice
		if unmarshal(&l) != nil {
			n.v = shape // not a list of maps: its maps cannot be checked
			return nil
		}
		items := make([]any, len(l))
		for i, e := range l {
			items[i] = e
		}
		n.v = items
	default:
		n.v = shape
	}
	return nil
}

// duplicateKeys adds a conflict for every key given twice in a mapping of
// v, at any depth.
func duplicateKeys(v any, at string, out *[]conflict) {
	switch x := v.(type) {
	case yamlv2.MapSlice:
		first := map[string]any{}
		for _, item := range x {
			k := fmt.Sprint(item.Key)
			path := k
			if at != "" {
				path = at + "." + k
			}
			if prev, dup := first[k]; dup {
				*out = append(*out, conflict{at: path, rule: "given twice in one mapping, as " + shortValue(prev) +
					" and as " + shortValue(item.Value) + "; keep one"})
				continue
			}
			first[k] = item.Value
			duplicateKeys(item.Value, path, out)
		}
	case []any:
		for i, e := range x {
			duplicateKeys(e, at+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

// shortValue shows a decoded YAML value in a message: scalars as they
// are, quoted, and maps and lists by what they are.
func shortValue(v any) string {
	switch x := v.(type) {
	case yamlv2.MapSlice:
		return "a map"
	case []any:
		return "a list"
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

// conflictRules joins the conflicts of text given as one value (a flag,
// --set) into one rule, or "" without any.
func conflictRules(cs []conflict) string {
	rules := make([]string, len(cs))
	for i, c := range cs {
		rules[i] = c.rule
		if c.at != "" {
			rules[i] = c.at + ": " + c.rule
		}
	}
	return strings.Join(rules, "; ")
}

// ReadFile decodes a params file (YAML or JSON) that source names, and
// finds what it says twice. It returns the decoded value (nil for an
// empty file) and every problem: text that does not parse, a key given
// twice in one mapping, a second document.
func ReadFile(source string, data []byte) (any, []*Error) {
	j, err := yaml.YAMLToJSON(data)
	if err == nil {
		var v any
		if v, err = DecodeJSON(j); err == nil {
			v = markNumbers(data, v)
			var problems []*Error
			for _, c := range yamlConflicts(data) {
				at := source
				if c.at != "" {
					at += ": " + c.at
				}
				problems = append(problems, &Error{Param: c.at, Source: at, Rule: c.rule})
			}
			return v, problems
		}
	}
	if nans := notANumber(data); len(nans) > 0 {
		var problems []*Error
		for _, n := range nans {
			problems = append(problems, &Error{Param: n[0], Source: source + ": " + n[0], Value: strconv.Quote(n[1]),
				Rule: "YAML reads " + n[1] + " as a floating-point " + n[1] + ", which no parameter takes: quote it if it is text"})
		}
		return nil, problems
	}
	return nil, []*Error{{Source: source, Rule: "not valid YAML: " + oneLine(err.Error())}}
}
