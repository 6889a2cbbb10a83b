package param

import (
	"maps"
	"strings"

	"github.com/trainsonnet/trainsonnet/internal/format"
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
	nullable := func(t string) any {
		if p.Default == nil {
			return []string{t, "null"}
		}
		return t
	}
	switch p.Type {
	case TypeGroup:
		for k, v := range GroupSchema(p.Params) {
			s[k] = v
		}
	case TypeString:
		s["type"] = nullable("string")
		maps.Copy(s, format.Get(p.Format).Schema)
	case TypeInt:
		s["type"] = nullable("integer")
		addBounds(s, p)
	case TypeBool:
		s["type"] = "boolean"
	case TypeEnum:
		s["enum"] = p.Values
	case TypeQuantity:
		s["type"] = nullable("string")
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
			s["type"] = nullable("object")
		}
	}
	return s
}

func addBounds(s map[string]any, p *Param) {
	if p.Min != nil {
		s["minimum"] = *p.Min
	}
	if p.Max != nil {
		s["maximum"] = *p.Max
	}
}
