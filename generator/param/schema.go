package param

import (
	"maps"
	"math"
	"regexp"
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
		return "seconds (300, 300s, 5m or 2h)" + p.boundsText()
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
		maps.Copy(s, stringSchema(p.FormatSpec().Schema))
	case TypeInt:
		s["type"] = "integer"
		addBounds(s, p)
	case TypeBool:
		s["type"] = "boolean"
	case TypeEnum:
		s["enum"] = p.Values
	case TypeQuantity:
		maps.Copy(s, format.QuantitySchema(p.Format == "bytes"))
	case TypeDuration:
		n := map[string]any{"type": "integer"}
		addBounds(n, p)
		s["anyOf"] = []any{n, map[string]any{"type": "string", "pattern": durationPattern(p.Min, p.Max)}}
	case TypeMap:
		s["type"] = "object"
		s["propertyNames"] = stringSchema(p.FormatSpec().Schema)
		if len(p.OwnKeys) > 0 {
			var own []any
			for _, k := range p.OwnKeys {
				if prefix, ok := strings.CutSuffix(k, "*"); ok {
					own = append(own, map[string]any{"pattern": "^" + regexp.QuoteMeta(prefix)})
				} else {
					own = append(own, map[string]any{"const": k})
				}
			}
			s["propertyNames"] = map[string]any{"allOf": []any{s["propertyNames"], map[string]any{"not": map[string]any{"anyOf": own}}}}
		}
		switch {
		case p.ValueFormat == "quantity" && p.Format == "resourceName":
			maps.Copy(s, format.ResourceMapSchema())
		case p.ValueFormat == "quantity":
			s["additionalProperties"] = format.QuantitySchema(false)
		default:
			// a bare number or boolean is taken as the text it is
			// written as (a number whose text is not its value, 1.10, is
			// refused: value.go); a number's text, which a schema cannot
			// see, is the value format's too
			s["additionalProperties"] = map[string]any{"anyOf": []any{
				stringSchema(p.ValueFormatSpec().Schema),
				map[string]any{"type": []string{"number", "boolean"}},
			}}
		}
	case TypeList:
		s["type"] = "array"
		if p.Separator != "" {
			s["uniqueItems"] = true // an item twice is refused (not words: value.go)
		}
		if p.Format == "int" {
			// an integer, or its text (value.go: parseInt)
			n := map[string]any{"type": "integer"}
			addBounds(n, p)
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if p.Min != nil {
				lo = *p.Min
			}
			if p.Max != nil {
				hi = *p.Max
			}
			s["items"] = map[string]any{"anyOf": []any{n, map[string]any{"type": "string", "pattern": `^\s*` + format.IntRange(lo, hi) + `\s*$`}}}
		} else {
			s["items"] = stringSchema(p.FormatSpec().Schema)
		}
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

// stringSchema is the schema of a string of the format schema f, without
// a NUL byte (textRule).
func stringSchema(f map[string]any) map[string]any {
	return map[string]any{"type": "string", "allOf": []any{f, map[string]any{"pattern": `^[^\x00]*$`}}}
}

// durationPattern is the pattern of a duration's text within min and max
// seconds: digits, then s, m or h at most (value.go's durationText).
func durationPattern(lo, hi *int64) string {
	from, to := int64(0), int64(math.MaxInt64)
	if lo != nil && *lo > 0 {
		from = *lo
	}
	if hi != nil {
		to = *hi
	}
	var alts []string
	for _, u := range []struct {
		unit string
		secs int64
	}{{"s?", 1}, {"m", 60}, {"h", 3600}} {
		a, b := (from+u.secs-1)/u.secs, to/u.secs
		if a > b {
			continue
		}
		alts = append(alts, format.UintRange(a, b)+u.unit)
	}
	if len(alts) == 0 {
		return `^[^\s\S]$`
	}
	return `^\+?0*(` + strings.Join(alts, "|") + `)$`
}

func addBounds(s map[string]any, p *Param) {
	if p.Min != nil {
		s["minimum"] = *p.Min
	}
	if p.Max != nil {
		s["maximum"] = *p.Max
	}
}
