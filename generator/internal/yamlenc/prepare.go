package yamlenc

import (
	"encoding/json"
	"math"
)

// Prepare readies a decoded tree for Document: it replaces json.Number with int64 or float64, and whole
// float64s with int64, in place, so YAML shows 4, not "4" or 4e+00. (Converting a decoded tree directly is several
// times faster than sigs.k8s.io/yaml.JSONToYAML, which re-parses the JSON
// with the YAML parser; the output is the same.) It turns the strings
// that YAML 1.1 readers would misread into yaml11Text (yaml11.go), and
// reports whether there was any.
func Prepare(v any) bool {
	quoted := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch y := e.(type) {
			case map[string]any, []any:
				quoted = Prepare(y) || quoted
			case string:
				if quoteForYAML11(y) {
					x[k], quoted = yaml11Text(y), true
				}
			default:
				x[k] = number64(e)
			}
		}
	case []any:
		for i, e := range x {
			switch y := e.(type) {
			case map[string]any, []any:
				quoted = Prepare(y) || quoted
			case string:
				if quoteForYAML11(y) {
					x[i], quoted = yaml11Text(y), true
				}
			default:
				x[i] = number64(e)
			}
		}
	}
	return quoted
}

func number64(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
	case float64: // a tree handed over by the evaluation: Jsonnet has only doubles
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}
