package generator

import (
	"encoding/json"
	"fmt"
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

// JSONSchema returns a JSON Schema (draft 2020-12) of the prototype's params
// file: every declared parameter, its type, bounds, allowed values and
// default; unknown keys are not allowed, as in trainsonnet itself. The keys
// of the replaced system that trainsonnet still takes with a warning
// (renamed or removed) are there too, marked deprecated, so that an editor
// flags them the same way instead of calling them errors.
func (pr *Prototype) JSONSchema() ([]byte, error) {
	root := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://trainsonnet.dev/schemas/" + pr.Name + ".json",
		"title":       "trainsonnet " + pr.Name + " parameters",
		"description": pr.Summary,
	}
	for k, v := range groupSchema(pr.Params) {
		root[k] = v
	}
	addOldKeys(root, pr)
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the schema of %s: %w", pr.Name, err)
	}
	return append(b, '\n'), nil
}

// addOldKeys adds a renamed parameter's old key (with the new one's schema)
// and each removed key (any value) where a params file may hold them: at
// the top or in a current group. A key inside an old group (master.image)
// comes with that group's copy.
func addOldKeys(root map[string]any, pr *Prototype) {
	groups := map[string]map[string]any{"": root["properties"].(map[string]any)}
	var all []*Param
	var walk func(node map[string]any, ps []*Param)
	walk = func(node map[string]any, ps []*Param) {
		for _, p := range ps {
			all = append(all, p)
			if p.Type == TypeGroup {
				sub := node[p.Name].(map[string]any)["properties"].(map[string]any)
				groups[p.Path] = sub
				walk(sub, p.Params)
			}
		}
	}
	walk(groups[""], pr.Params)
	split := func(key string) (parent, name string) {
		if i := strings.LastIndex(key, "."); i >= 0 {
			return key[:i], key[i+1:]
		}
		return "", key
	}
	// group returns the properties of the group at path, making a
	// deprecated old group (the chart's clusterConfig) where a key of the
	// replaced system sits in a group that is no longer there.
	var group func(path string) map[string]any
	group = func(path string) map[string]any {
		if props, ok := groups[path]; ok {
			return props
		}
		parent, name := split(path)
		up := group(parent)
		if _, copied := up[name]; up == nil || copied {
			return nil // an old group copied whole, keys and all (master)
		}
		props := map[string]any{}
		up[name] = map[string]any{
			"type": "object", "deprecated": true, "properties": props, "additionalProperties": false,
			"description": "Of the replaced system: its keys are read as their descriptions say.",
		}
		groups[path] = props
		return props
	}
	for _, p := range all {
		for _, old := range p.OldPaths {
			parent, name := split(old)
			if props := group(parent); props != nil {
				s := paramSchema(p)
				s["deprecated"] = true
				s["description"] = "Now called " + p.Path + ". " + s["description"].(string)
				props[name] = s
			}
		}
	}
	for key, why := range pr.Removed {
		parent, name := split(key)
		if props := group(parent); props != nil {
			props[name] = map[string]any{"deprecated": true, "description": "Not used: " + why + "."}
		}
	}
}

func groupSchema(ps []*Param) map[string]any {
	props := map[string]any{}
	for _, p := range ps {
		props[p.Name] = paramSchema(p)
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

func paramSchema(p *Param) map[string]any {
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
		for k, v := range groupSchema(p.Params) {
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
