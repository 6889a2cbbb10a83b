package param

import (
	"maps"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// Rule describes in words what values a parameter accepts, for describe
// and the JSON Schema: "an integer from 1 to 100000".
func (p *Param) Rule() string {
	switch p.Type {
	case TypeString:
		if p.Format == "" {
			return "text"
		}
		return format.Get(p.Format).Rule
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
		k := "keys: " + format.Get(p.Format).Rule
		v := "values: quantities"
		if p.ValueFormat != "quantity" {
			v = "values: " + format.Get(p.ValueFormat).Rule
		}
		return "key=value pairs (" + k + "; " + v + ")"
	case TypeList:
		if p.Format == "int" {
			return "integers separated by commas"
		}
		if p.Separator == "" {
			return "one item per flag (each " + format.Get(p.Format).Rule + ")"
		}
		return "items separated by commas (each " + format.Get(p.Format).Rule + ")"
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
		maps.Copy(s, format.Get(p.Format).Schema)
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
			s["additionalProperties"] = map[string]any{"type": "string"}
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
	return withChartSpellings(s, p.chartSpellings())
}

// chartSpellings are the other ways a params file may write a value of
// the parameter, which trainsonnet takes with a warning because the Helm
// charts' values files wrote them (generator/params.go): "" for unset, a
// quoted integer or boolean, bytes as 2GB, and {} for an empty list; and
// null, the default. An editor that uses the schema must not flag a file
// that gen takes.
func (p *Param) chartSpellings() []any {
	// null is "the default" too (an empty key in YAML).
	alt := []any{map[string]any{"type": "null"}}
	if p.Type != TypeString || format.Get(p.Format).Check("") != "" {
		alt = append(alt, map[string]any{"const": "", "description": "unset, as the charts wrote it: the default"})
	}
	switch p.Type {
	case TypeInt:
		alt = append(alt, map[string]any{"type": "string", "pattern": `^\s*[-+]?[0-9]+\s*$`, "description": "a quoted integer, as the charts wrote them"})
	case TypeBool:
		alt = append(alt, map[string]any{"type": "string", "pattern": `^\s*(true|false)\s*$`, "description": "a quoted boolean, as the charts wrote them"})
	case TypeQuantity:
		if p.Format == "bytes" {
			alt = append(alt, map[string]any{"type": "string", "pattern": `^\s*[0-9.]+\s*([kKMGTPE]i?)\s*B\s*$`, "description": "bytes as Dask and the charts wrote them (2GB)"})
		}
	case TypeList:
		alt = append(alt, map[string]any{"type": "object", "maxProperties": 0, "description": "{}, as the charts wrote an empty list"})
	}
	return alt
}

// withChartSpellings turns s, the schema of the declared type, into one
// that also takes the charts' spellings: anyOf the declared type and
// them, with the annotations kept on top.
func withChartSpellings(s map[string]any, alt []any) map[string]any {
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
