// Package kubeflow checks a user's object of a Kubeflow operator (a
// PyTorchJob, a TFJob, an MPIJob) before a prototype's from function reads
// it: its shape against the operator's API types (mirrored here, field by
// field, over k8s.io/api's pod template) and the rules the operator's
// admission webhook applies. What the operator's API server would refuse
// is a Problem naming the field as the user wrote it, its value and the
// rule; what passes is returned with its nulls removed (the API server's
// meaning of null: unset), so that the Jsonnet that reads it meets only
// the types it expects.
package kubeflow

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/generator/suggest"
)

// Problem is one place where an object is not what its API takes.
type Problem struct {
	// Path is the field as the user wrote it:
	// spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image.
	Path string
	// Value is the offending value as text (param.Show), "" when none.
	Value string
	Rule  string
}

// fieldInfo is one JSON field of a struct type.
type fieldInfo struct {
	name     string
	typ      reflect.Type
	required bool
	// allowEmpty: a required string that may be "" (an HTTP header's value)
	allowEmpty bool
}

var fieldsCache sync.Map // reflect.Type → []fieldInfo

// fields lists the JSON fields of struct type t, inline members merged.
// A field is required as the Kubernetes API conventions (and the OpenAPI
// schemas generated from them) have it: no omitempty, not a pointer.
func fields(t reflect.Type) []fieldInfo {
	if f, ok := fieldsCache.Load(t); ok {
		return f.([]fieldInfo)
	}
	var out []fieldInfo
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || (!sf.IsExported() && !sf.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" && (sf.Anonymous || strings.Contains(opts, "inline")) {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, fields(ft)...)
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		req := !strings.Contains(opts, "omitempty") && sf.Type.Kind() != reflect.Pointer
		out = append(out, fieldInfo{name: name, typ: sf.Type, required: req,
			allowEmpty: slices.Contains(emptyAllowed, t.Name()+"."+sf.Name)})
	}
	fieldsCache.Store(t, out)
	return out
}

// emptyAllowed: required strings of the core types that the API takes
// empty.
var emptyAllowed = []string{"HTTPHeader.Value", "Sysctl.Value"}

var (
	quantityType     = reflect.TypeFor[resource.Quantity]()
	intstrType       = reflect.TypeFor[intstr.IntOrString]()
	timeType         = reflect.TypeFor[metav1.Time]()
	microType        = reflect.TypeFor[metav1.MicroTime]()
	durationType     = reflect.TypeFor[metav1.Duration]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
)

type walker struct {
	problems []Problem
}

func (w *walker) add(path string, v any, rule string) {
	shown := ""
	if v != nil {
		shown = param.Show(v)
	}
	w.problems = append(w.problems, Problem{Path: path, Value: shown, Rule: rule})
}

// child is path's member key: .key, or ["key"] for a key that dots or
// brackets would misread.
func child(path, key string) string {
	if key == "" || strings.ContainsAny(key, ".[]\"") && !strings.Contains(key, "/") {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// number reads a JSON number of the file: its value and whether it is
// whole.
func number(v any) (float64, bool, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case param.YAMLNumber:
		s = x.String()
	case float64:
		return x, x == math.Trunc(x), true
	case int:
		return float64(x), true, true
	case int64:
		return float64(x), true, true
	default:
		return 0, false, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false, false
	}
	return f, f == math.Trunc(f) && !math.IsInf(f, 0), true
}

// kindOf names what a value of the file is, for "must be X, not Y".
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "text"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	if _, _, ok := number(v); ok {
		return "a number"
	}
	return "a value of another kind"
}

// walk checks v against type t at path and returns it with null members
// of maps removed.
func (w *walker) walk(v any, t reflect.Type, path string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case quantityType:
		return w.quantity(v, path)
	case intstrType:
		if _, whole, ok := number(v); ok && whole {
			return v
		}
		if _, ok := v.(string); ok {
			return v
		}
		w.add(path, v, "must be a whole number or text, not "+kindOf(v))
		return v
	case timeType, microType, durationType:
		if _, ok := v.(string); !ok {
			w.add(path, v, "must be text, not "+kindOf(v))
		}
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			w.add(path, v, "must be a map of fields, not "+kindOf(v))
			return v
		}
		return w.object(m, t, path)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			w.add(path, v, "must be a map, not "+kindOf(v))
			return v
		}
		out := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e := m[k]
			if e == nil {
				w.add(child(path, k), nil, "must not be null: give a value or leave the key out")
				continue
			}
			n := len(w.problems)
			out[k] = w.walk(e, t.Elem(), child(path, k))
			if t == resourceListType && extended(corev1.ResourceName(k)) && len(w.problems) == n {
				// one form for the from functions: the API's text "2"
				// and the number 2 alike, a number
				out[k] = w.wholeDevices(e, child(path, k), k)
			}
		}
		return out
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			w.add(path, v, "must be a list, not "+kindOf(v))
			return v
		}
		out := make([]any, len(l))
		for i, e := range l {
			at := path + "[" + strconv.Itoa(i) + "]"
			if e == nil {
				w.add(at, nil, "must not be null: an entry of a list is a value")
				continue
			}
			out[i] = w.walk(e, t.Elem(), at)
		}
		return out
	case reflect.String:
		if _, ok := v.(string); !ok {
			rule := "must be text, not " + kindOf(v)
			if _, _, isNum := number(v); isNum {
				rule += ": quote it"
			} else if _, isBool := v.(bool); isBool {
				rule += ": quote it"
			}
			w.add(path, v, rule)
		}
		return v
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.add(path, v, "must be true or false, not "+kindOf(v))
		}
		return v
	case reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, whole, ok := number(v)
		switch {
		case !ok:
			w.add(path, v, "must be a whole number, not "+kindOf(v))
		case !whole:
			w.add(path, v, "must be a whole number")
		case t.Kind() == reflect.Int32 && (f > math.MaxInt32 || f < math.MinInt32):
			w.add(path, v, "must be a whole number of at most "+strconv.Itoa(math.MaxInt32)+" (a 32-bit integer)")
		case t.Kind() >= reflect.Uint16 && t.Kind() <= reflect.Uint64 && f < 0:
			w.add(path, v, "must be 0 or more")
		}
		return v
	case reflect.Float32, reflect.Float64:
		if _, _, ok := number(v); !ok {
			w.add(path, v, "must be a number, not "+kindOf(v))
		}
		return v
	}
	return v // an interface: any value
}

// object checks the members of m against struct type t.
func (w *walker) object(m map[string]any, t reflect.Type, path string) map[string]any {
	fs := fields(t)
	byName := make(map[string]fieldInfo, len(fs))
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		byName[f.name] = f
		names = append(names, f.name)
	}
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f, known := byName[k]
		if !known {
			rule := "not a field of " + typeName(t)
			if s := suggest.Closest(k, names); s != "" {
				rule += ": did you mean " + s + "?"
			}
			w.add(child(path, k), nil, rule)
			continue
		}
		if m[k] == nil {
			continue // null: unset, as the API server takes it
		}
		v := w.walk(m[k], f.typ, child(path, k))
		if !f.required && empty(v) && (f.typ.Kind() == reflect.Slice || f.typ.Kind() == reflect.Map) {
			continue // an empty list or map of an omitempty field: unset, as the API has it (command: [] runs the image's ENTRYPOINT)
		}
		out[k] = v
	}
	for _, f := range fs {
		if !f.required {
			continue
		}
		v, has := out[f.name]
		if !has {
			w.add(child(path, f.name), nil, "required: "+article(typeName(t))+" has one")
			continue
		}
		if s, ok := v.(string); ok && s == "" && !f.allowEmpty && f.typ.Kind() == reflect.String {
			w.add(child(path, f.name), nil, "must not be empty")
		}
		if l, ok := v.([]any); ok && len(l) == 0 && f.typ.Kind() == reflect.Slice {
			w.add(child(path, f.name), nil, "must have at least one entry")
		}
	}
	return out
}

// empty reports whether v is an empty list or map.
func empty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func typeName(t reflect.Type) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return t.Name()
}

// article puts "a" or "an" before a type's name.
func article(s string) string {
	if s != "" && strings.ContainsRune("AEIOU", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// extended reports whether a resource is an extended one (a device such
// as nvidia.com/gpu): not Kubernetes' own.
func extended(k corev1.ResourceName) bool {
	s := string(k)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/") && !strings.Contains(s, ".kubernetes.io/") &&
		!strings.HasPrefix(s, "requests.")
}

// wholeDevices: an extended resource (a device such as nvidia.com/gpu) is
// counted in whole devices; it returns the count as a number.
func (w *walker) wholeDevices(v any, path, name string) any {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	case param.YAMLNumber:
		s = x.String()
	default:
		f, _, _ := number(v)
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return v
	}
	if q.MilliValue()%1000 != 0 {
		w.add(path, v, "must be a whole number: "+name+" is counted in whole devices")
		return v
	}
	return json.Number(strconv.FormatInt(q.Value(), 10))
}

// quantity checks a resource quantity: a number or text Kubernetes parses.
func (w *walker) quantity(v any, path string) any {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case param.YAMLNumber:
		s = x.String()
	case json.Number:
		s = x.String()
	default:
		if _, _, ok := number(v); !ok {
			w.add(path, v, "must be a quantity (a number, or text such as 500m, 4Gi), not "+kindOf(v))
			return v
		}
		return v
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		w.add(path, v, "must be a quantity such as 2, 500m or 4Gi")
		return v
	}
	if q.Sign() < 0 {
		w.add(path, v, "must be 0 or more")
	}
	return v
}
