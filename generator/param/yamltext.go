package param

import (
	"encoding/json"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// A params file is YAML, read as YAML 1.1 (sigs.k8s.io/yaml): an unquoted
// 1.10 is the number 1.1, 012 is 10 (octal), 1e3 is 1000 and 0x1F is 31.
// Where a parameter wants a number that is what the user meant; where it
// wants text (a label, an annotation, an env value) the text would change
// without a word. ReadFile marks such numbers, those whose text as written
// differs from the number's, as a YAMLNumber: a number where a number is
// wanted, refused with "quote it" where text is.

// YAMLNumber is a number of a params file written in a form whose text is
// not the number's (1.10, 012, 1e3, 0x1F).
type YAMLNumber struct {
	json.Number
	Text string // as written
}

// MarshalJSON writes the number.
func (n YAMLNumber) MarshalJSON() ([]byte, error) { return []byte(n.Number), nil }

// quoteIt is the rule for a YAMLNumber where text is wanted.
func (n YAMLNumber) quoteIt() string {
	return "YAML reads " + n.Text + " as the number " + n.String() + ": quote it (\"" + n.Text + "\") to keep the text"
}

// markNumbers replaces, in v (the file decoded), each number whose text in
// the file differs from its value with a YAMLNumber.
func markNumbers(data []byte, v any) any {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return v
	}
	return markNode(doc.Content[0], v)
}

func markNode(n *yamlv3.Node, v any) any {
	switch n.Kind {
	case yamlv3.MappingNode:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if e, has := m[k]; has {
				m[k] = markNode(n.Content[i+1], e)
			}
		}
	case yamlv3.SequenceNode:
		l, ok := v.([]any)
		if !ok || len(l) != len(n.Content) {
			return v
		}
		for i, c := range n.Content {
			l[i] = markNode(c, l[i])
		}
	case yamlv3.ScalarNode:
		num, ok := v.(json.Number)
		if ok && n.Style == 0 && n.Value != num.String() {
			return YAMLNumber{Number: num, Text: n.Value}
		}
	}
	return v
}

// notANumber finds the plain .nan and .inf scalars of a file that JSON
// cannot hold, each with its dotted path.
func notANumber(data []byte) [][2]string {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var out [][2]string
	var walk func(n *yamlv3.Node, at string)
	walk = func(n *yamlv3.Node, at string) {
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], dottedKey(at, n.Content[i].Value))
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(c, at+"["+strconv.Itoa(i)+"]")
			}
		case yamlv3.ScalarNode:
			s := strings.TrimLeft(strings.ToLower(n.Value), "+-")
			if n.Style == 0 && (s == ".nan" || s == ".inf") {
				out = append(out, [2]string{at, n.Value})
			}
		}
	}
	walk(doc.Content[0], "")
	return out
}

func dottedKey(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}
