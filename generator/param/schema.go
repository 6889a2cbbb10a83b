package param

import (
	"maps"
	"strings"
)

// Rule describes in words what values a parameter accepts, for describe
// and the JSON Schema: "an integer from 1 to 100000".
func (p *Param) Rule() string {
	switch p.Type {
	case TypeString:
		if p.Format == "" {
			return "text"
		}
		return p.FormatSpec().Rule
	case TypeInt:
		return "an integer" + p.boundsText()
	case TypeBool:
		return "true or false"
	case TypeEnum:
		return "one of " + strings.Join(p.Values, ", ")
	case TypeQuantity:
		return "a Kubernetes quantity such as 500m, 2 or 4Gi"
	case TypeDuration:
		return "seconds (300, 300s or 5m)" + p.boundsText()
	case TypeMap:
		k := "keys: " + p.FormatSpec().Rule
		v := "values: quantities"
		if p.ValueFormat != "quantity" {
			v = "values: " + p.ValueFormatSpec().Rule
		}
		return "key=value pairs (" + k + "; " + v + ")"
	case TypeList:
		if p.Format == "int" {
			return "integers separated by commas"
		}
		if p.Separator == "" {
			return "one item per flag (each " + p.FormatSpec().Rule + ")"
		}
		return "items separated by commas (each " + p.FormatSpec().Rule + ")"
	case TypeObject:
		return "YAML or JSON: a " + p.kindText()
	case TypeGroup:
		return "a group of parameters"
	}
	return ""
}

// GroupSchema is the JSON Schema (draft 2020-12) of a map holding the
// parameters ps: a params file's top level, or a group's value.
func GroupSchema(ps []*Param) map[string]any {
	props := map[string]any{}
	for _, p := range ps {
		props[p.Name] = p.Schema()
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// Schema is the JSON Schema of the parameter's value: its type, bounds,
// allowed values, default and description.
func (p *Param) Schema() map[string]any {
	s := map[string]any{"description": p.Doc}
	if p.Default != nil {
		s["default"] = p.Default
	}
	switch p.Type {
	case TypeGroup:
		for k, v := range GroupSchema(p.Params) {
			s[k] = v
		}
		s["type"] = []string{"object", "null"} // null: every member's default
		return s
	case TypeString:
		s["type"] = "string"
		maps.Copy(s, p.FormatSpec().Schema)
	case TypeInt:
		s["type"] = "integer"
		addBounds(s, p)
	case TypeBool:
		s["type"] = "boolean"
	case TypeEnum:
		s["enum"] = p.Values
	case TypeQuantity:
		s["type"] = "string"
		s["oneOf"] = []any{
			map[string]any{"type": "string", "pattern": `^[+]?([0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`},
			map[string]any{"type": "number", "minimum": 0},
		}
		delete(s, "type")
	case TypeDuration:
		s["oneOf"] = []any{
			map[string]any{"type": "integer"},
			map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`},
		}
		addBounds(s, p)
	case TypeMap:
		s["type"] = "object"
		if p.ValueFormat == "quantity" {
			s["additionalProperties"] = map[string]any{"type": []string{"string", "number"}}
		} else {
			// a bare number or boolean is taken as the text it is
			// written as (a number whose text is not its value, 1.10, is
			// refused: value.go)
			s["additionalProperties"] = map[string]any{"type": []string{"string", "number", "boolean"}}
		}
	case TypeList:
		item := "string"
		if p.Format == "int" {
			item = "integer"
		}
		s["type"] = "array"
		s["items"] = map[string]any{"type": item}
	case TypeObject:
		desc := p.Doc + " (" + p.kindText() + ", checked against k8s.io/api)"
		s["description"] = desc
		if p.List {
			s["type"] = "array"
			s["items"] = map[string]any{"type": "object"}
		} else {
			s["type"] = "object"
		}
	}
	// null is the default too (an empty key in YAML).
	return withSpellings(s, append([]any{map[string]any{"type": "null"}}, p.spellingSchemas()...))
}

// withSpellings turns s, the schema of the declared type, into one that
// also takes the values of alt (null, the parameter's Spellings): anyOf
// the declared type and them, with the annotations kept on top.
func withSpellings(s map[string]any, alt []any) map[string]any {
	if len(alt) == 0 {
		return s
	}
	out := map[string]any{}
	strict := map[string]any{}
	for k, v := range s {
		switch k {
		case "description", "default", "deprecated":
			out[k] = v
		default:
			strict[k] = v
		}
	}
	out["anyOf"] = append([]any{strict}, alt...)
	return out
}

func addBounds(s map[string]any, p *Param) {
	if p.Min != nil {
		s["minimum"] = *p.Min
	}
	if p.Max != nil {
		s["maximum"] = *p.Max
	}
}
