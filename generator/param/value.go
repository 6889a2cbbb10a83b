package param

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// Values of parameters are normalized to these Go types before a prototype
// sees them (as JSON): string (string, enum, quantity in canonical form),
// int64 (int, duration in seconds), bool, map[string]string, []string, and
// for objects the decoded JSON (map[string]any or []any).

// A Reading is a value of a source read for a parameter.
type Reading struct {
	// Value is the normalized value; nil when Unset.
	Value any
	// Unset: the value stands for the key left out, so the default
	// applies and no input counts as having set the parameter.
	Unset bool
	// Note says, when the value was read in one of the parameter's
	// Spellings, what it was taken as, for a warning after the input's
	// label ("" when it was written as declared).
	Note string
}

// Read checks a decoded value (from a params file or a Go caller) against
// the declared type and returns it normalized; a value that breaks the
// type but is written in one of the parameter's Spellings is read as what
// that spelling stands for, with a note. Otherwise it returns the rule the
// value breaks.
func (p *Param) Read(v any) (Reading, string) {
	nv, rule := p.Normalize(v)
	if rule == "" {
		return Reading{Value: nv}, ""
	}
	if r, ok := p.spelled(v, v, false); ok {
		return r, ""
	}
	return Reading{}, rule
}

// ReadText reads a value written as text (a flag, --set), as Parse does,
// and in the parameter's Spellings that text may hold.
func (p *Param) ReadText(s string) (Reading, string) {
	v, rule := p.Parse(s)
	if rule == "" {
		return Reading{Value: v}, ""
	}
	if r, ok := p.spelled(s, strings.TrimSpace(s), true); ok {
		return r, ""
	}
	return Reading{}, rule
}

// ReadTexts reads the texts of a repeated flag, as ParseAll does, and in
// the parameter's Spellings that text may hold. On a problem it returns
// the text at fault and the rule.
func (p *Param) ReadTexts(texts []string) (Reading, string, string) {
	v, text, rule := p.ParseAll(texts)
	if rule == "" {
		return Reading{Value: v}, "", ""
	}
	if r, ok := p.spelled(text, strings.TrimSpace(text), true); ok {
		return r, "", ""
	}
	return Reading{}, text, rule
}

// Parse parses a value written as text (a command-line flag, --set) by
// the parameter's declared type. It returns the normalized value, or the
// rule the text breaks.
func (p *Param) Parse(s string) (any, string) {
	switch p.Type {
	case TypeString, TypeEnum, TypeQuantity:
		return p.Normalize(s)
	case TypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, "must be an integer" + p.boundsText()
		}
		return p.Normalize(n)
	case TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, "must be true or false"
		}
		return b, ""
	case TypeDuration:
		return p.Normalize(strings.TrimSpace(s))
	case TypeMap:
		m := map[string]any{}
		for _, kv := range splitPairs(s) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, "must be key=value pairs separated by commas, such as a=1,b=2"
			}
			k = strings.TrimSpace(k)
			if prev, dup := m[k]; dup {
				// Which one was meant would be a guess.
				return nil, "gives " + k + " twice, as " + k + "=" + prev.(string) + " and as " + k + "=" + v + "; keep one"
			}
			m[k] = v
		}
		return p.Normalize(m)
	case TypeList:
		if p.Separator == "" {
			return p.Normalize([]any{s})
		}
		var l []any
		for _, item := range strings.Split(s, p.Separator) {
			if item = strings.TrimSpace(item); item != "" {
				l = append(l, item)
			}
		}
		return p.Normalize(l)
	case TypeObject:
		j, err := yaml.YAMLToJSON([]byte(s))
		if err != nil {
			return nil, "must be YAML or JSON for " + p.kindText() + ": " + oneLine(err.Error())
		}
		if rule := conflictRules(yamlConflicts([]byte(s))); rule != "" {
			return nil, rule
		}
		v, err := DecodeJSON(j)
		if err != nil {
			return nil, "must be YAML or JSON for " + p.kindText() + ": " + oneLine(err.Error())
		}
		return p.Normalize(v)
	}
	return nil, "cannot be set from text"
}

// ParseAll parses the texts of a repeated flag: list items and map
// entries of every text add up (a map key given twice is an error), a
// scalar is the last text. On a problem it
// returns the text at fault.
func (p *Param) ParseAll(texts []string) (any, string, string) {
	switch {
	case len(texts) == 0:
		return nil, "", "needs a value"
	case p.Type == TypeList && p.Separator == "":
		items := make([]any, len(texts))
		for i, t := range texts {
			items[i] = t
		}
		v, rule := p.Normalize(items)
		return v, strings.Join(texts, " "), rule
	case p.Type == TypeList || p.Type == TypeMap:
		joined := strings.Join(texts, ",")
		v, rule := p.Parse(joined)
		return v, joined, rule
	}
	last := texts[len(texts)-1]
	v, rule := p.Parse(last)
	return v, last, rule
}

// splitPairs splits "a=1,b=x,y,c=2" into "a=1", "b=x,y", "c=2": a piece
// without "=" belongs to the value before it, so values may hold commas.
func splitPairs(s string) []string {
	var out []string
	for _, piece := range strings.Split(s, ",") {
		if len(out) > 0 && !strings.Contains(piece, "=") {
			out[len(out)-1] += "," + piece
			continue
		}
		if strings.TrimSpace(piece) != "" {
			out = append(out, piece)
		}
	}
	return out
}

// Normalize checks a decoded value (from a params file, a Go caller or a
// default) against the declared type and returns it normalized, or the rule
// it breaks. Numbers arrive as json.Number or Go integers.
func (p *Param) Normalize(v any) (any, string) {
	switch p.Type {
	case TypeString:
		if n, ok := v.(YAMLNumber); ok {
			return nil, n.quoteIt()
		}
		s, ok := v.(string)
		if !ok {
			return nil, "must be a string (quote it in YAML)"
		}
		if rule := textRule(s); rule != "" {
			return nil, rule
		}
		if rule := p.FormatSpec().Check(s); rule != "" {
			return nil, rule
		}
		return s, ""
	case TypeEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(p.Values, s) {
			return nil, "must be one of " + strings.Join(p.Values, ", ")
		}
		return s, ""
	case TypeInt:
		n, ok := toInt(v)
		if !ok {
			return nil, "must be an integer" + p.boundsText()
		}
		if rule := p.checkBounds(n); rule != "" {
			return nil, rule
		}
		return n, ""
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case TypeQuantity:
		q, rule := normQuantity(v, p.Format == "bytes")
		if rule != "" {
			return nil, rule
		}
		return q, ""
	case TypeDuration:
		secs, ok := toSeconds(v)
		if !ok {
			return nil, "must be whole seconds" + p.boundsText() + ", such as 300, 300s, 5m or 2h"
		}
		if rule := p.checkBounds(secs); rule != "" {
			return nil, rule
		}
		return secs, ""
	case TypeMap:
		return p.mapValue(v)
	case TypeList:
		l, ok := v.([]any)
		if !ok {
			return nil, "must be a list of " + p.itemsText()
		}
		seen := map[string]bool{}
		if p.Format == "int" {
			ints := make([]int64, 0, len(l))
			for _, item := range l {
				n, ok := toInt(item)
				if s, isText := item.(string); isText {
					n, ok = parseInt(s)
				}
				if !ok || p.checkBounds(n) != "" {
					return nil, "must be a list of integers" + p.boundsText()
				}
				key := strconv.FormatInt(n, 10)
				if seen[key] {
					return nil, "item " + key + " is listed twice"
				}
				seen[key] = true
				ints = append(ints, n)
			}
			return ints, ""
		}
		out := make([]string, 0, len(l))
		for _, item := range l {
			if n, ok := item.(YAMLNumber); ok {
				return nil, n.quoteIt()
			}
			s, ok := item.(string)
			if !ok {
				return nil, "must be a list of strings"
			}
			if rule := textRule(s); rule != "" {
				return nil, fmt.Sprintf("item %q: %s", s, rule)
			}
			if rule := p.FormatSpec().Check(s); rule != "" {
				return nil, fmt.Sprintf("item %q: %s", s, rule)
			}
			// a list given one item per flag is words (a command's
			// arguments), which may repeat; the others are sets
			if seen[s] && p.Separator != "" {
				return nil, fmt.Sprintf("item %q is listed twice", s)
			}
			seen[s] = true
			out = append(out, s)
		}
		return out, ""
	case TypeObject:
		return p.objectValue(v)
	case TypeGroup:
		return nil, "is a group; set its members (" + p.Path + ".<name>)"
	}
	return nil, "has an unknown type"
}

func (p *Param) mapValue(v any) (any, string) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "must be a map of key: value"
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if rule := p.FormatSpec().Check(k); rule != "" {
			return nil, fmt.Sprintf("key %q: %s", k, rule)
		}
		raw := m[k]
		if p.ValueFormat == "quantity" {
			q, rule := normQuantity(raw, false)
			if rule == "" && p.Format == "resourceName" {
				// whole units as a pattern of the schema says them
				// (format.ResourceMapSchema), and whole pages
				if text, ok := quantityText(raw); ok {
					rule = format.WholeResourceRule(k, text)
				}
				if rule == "" {
					rule = format.CheckResourceValue(k, resource.MustParse(q.(string)))
				}
			}
			if rule != "" {
				return nil, fmt.Sprintf("key %q: %s", k, rule)
			}
			out[k] = q.(string)
			continue
		}
		var s string
		switch x := raw.(type) {
		case string:
			s = x
		case YAMLNumber:
			return nil, fmt.Sprintf("key %q: %s", k, x.quoteIt())
		case json.Number:
			s = x.String()
		case bool:
			s = strconv.FormatBool(x)
		case int, int32, int64:
			s = fmt.Sprint(x)
		default:
			return nil, fmt.Sprintf("key %q: value must be a string", k)
		}
		if rule := textRule(s); rule != "" {
			return nil, fmt.Sprintf("key %q: %s", k, rule)
		}
		if rule := p.ValueFormatSpec().Check(s); rule != "" {
			return nil, fmt.Sprintf("key %q: value %q: %s", k, s, rule)
		}
		out[k] = s
	}
	return out, ""
}

// objectValue strictly decodes v into the declared k8s.io/api type, so an
// unknown or mistyped field is reported with its path. The value passed on
// is the user's own JSON, not a re-encoding of the Go struct (which would
// add empty fields).
func (p *Param) objectValue(v any) (any, string) {
	if p.List {
		if _, ok := v.([]any); !ok {
			return nil, "must be a list of " + strings.Replace(p.Kind, ".", " ", 1) + " objects"
		}
	} else if _, ok := v.(map[string]any); !ok {
		return nil, "must be a " + p.kindText() + " object"
	}
	v, rule := checkResourcesValue(p.Kind, v)
	if rule != "" {
		return nil, rule
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "cannot be encoded: " + err.Error()
	}
	t := objectKinds[p.Kind]
	if p.List {
		t = reflect.SliceOf(t)
	}
	ptr := reflect.New(t)
	strict, err := sigsjson.UnmarshalStrict(raw, ptr.Interface())
	if err != nil {
		return nil, "is not a valid " + p.kindText() + ": " + oneLine(err.Error())
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, "is not a valid " + p.kindText() + ": " + strings.Join(msgs, "; ")
	}
	if rule := checkObject(ptr.Elem().Interface()); rule != "" {
		return nil, rule
	}
	// The prototype gets the value as JSON decodes it (json.Number, maps,
	// lists), whatever Go types a caller's map held (float64, int32, ...).
	out, err := DecodeJSON(raw)
	if err != nil {
		return nil, "cannot be encoded: " + err.Error()
	}
	if p.Kind == "core/v1.VolumeMount" {
		cleanMountPaths(out)
	}
	return out, ""
}

// cleanMountPaths writes each mount path of a VolumeMount value (one or a
// list) as path.Clean does: /dev/shm/ and /dev//shm are the directory
// /dev/shm to the kubelet, and so they are to every prototype that
// compares a user's mount with its own (a volumeMount at /dev/shm replaces
// the job's own) or asks whether a directory is under one.
func cleanMountPaths(v any) {
	switch v := v.(type) {
	case []any:
		for _, item := range v {
			cleanMountPaths(item)
		}
	case map[string]any:
		if s, ok := v["mountPath"].(string); ok {
			v["mountPath"] = path.Clean(s)
		}
	}
}

func (p *Param) kindText() string {
	k := strings.Replace(p.Kind, ".", " ", 1)
	if p.List {
		return k + " list"
	}
	return k
}

func (p *Param) boundsText() string {
	switch {
	case p.Min != nil && p.Max != nil:
		return fmt.Sprintf(" from %d to %d", *p.Min, *p.Max)
	case p.Min != nil:
		return fmt.Sprintf(" of at least %d", *p.Min)
	case p.Max != nil:
		return fmt.Sprintf(" of at most %d", *p.Max)
	}
	return ""
}

func (p *Param) checkBounds(n int64) string {
	if (p.Min != nil && n < *p.Min) || (p.Max != nil && n > *p.Max) {
		what := "an integer"
		if p.Type == TypeDuration {
			what = "a number of seconds"
		}
		return "must be " + what + p.boundsText()
	}
	return ""
}

// quantityText is the text of a quantity as a params file or Go gives it.
func quantityText(v any) (string, bool) {
	if n, ok := v.(YAMLNumber); ok {
		v = n.Number
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), true
	case json.Number:
		return x.String(), true
	case int, int32, int64, float64:
		return fmt.Sprint(x), true
	case resource.Quantity:
		return x.String(), true
	}
	return "", false
}

func normQuantity(v any, bytes bool) (any, string) {
	s, ok := quantityText(v)
	if !ok {
		return nil, "must be a Kubernetes quantity such as 500m, 2 or 4Gi"
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, "must be a Kubernetes quantity such as 500m, 2 or 4Gi"
	}
	if q.Sign() < 0 {
		return nil, "must not be negative"
	}
	// The patterns the JSON Schema has too (format/quantity.go).
	if rule := format.QuantityTooLarge(s); rule != "" {
		return nil, rule
	}
	if bytes {
		if rule := format.QuantityNotWholeBytes(s); rule != "" {
			return nil, rule
		}
	}
	return q.String(), ""
}

func parseInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

func (p *Param) itemsText() string {
	if p.Format == "int" {
		return "integers"
	}
	return "strings"
}

func toInt(v any) (int64, bool) {
	if n, ok := v.(YAMLNumber); ok {
		v = n.Number
	}
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		// 2.0 and 2e3 are integers to JSON Schema
		f, ok := new(big.Float).SetString(x.String())
		if !ok || !f.IsInt() {
			return 0, false
		}
		n, acc := f.Int64()
		return n, acc == big.Exact
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

func toSeconds(v any) (int64, bool) {
	switch x := v.(type) {
	case time.Duration:
		if x%time.Second != 0 {
			return 0, false
		}
		return int64(x / time.Second), true
	case string:
		// digits, and one unit at most: what a pattern of the schema can
		// bound (format.DurationPattern); 1h30m is 90m.
		m := durationText.FindStringSubmatch(x)
		if m == nil {
			return 0, false
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, false
		}
		unit := map[string]int64{"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]
		if n > math.MaxInt64/unit {
			return 0, false
		}
		return n * unit, true
	}
	return toInt(v)
}

// durationText is a duration's text: digits, and s, m or h.
var durationText = regexp.MustCompile(`^\+?(\d+)(s|m|h)?$`)

// DecodeJSON decodes JSON keeping numbers exact (json.Number).
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Show renders a value for an error message: strings quoted, maps and
// lists as typed on a command line, everything else as compact JSON; whole
// (an Error shows it Brief).
func Show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return ""
	case map[string]string: // as typed on a command line: k=v,k2=v2
		keys := slices.Sorted(maps.Keys(x))
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = k + "=" + x[k]
		}
		return strconv.Quote(strings.Join(pairs, ","))
	case []string:
		return strconv.Quote(strings.Join(x, ","))
	case time.Duration:
		return strconv.Quote(x.String())
	case resource.Quantity:
		return strconv.Quote(x.String())
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strconv.Quote(string(b))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// GoValue turns a Go value from a caller into the decoded-JSON form that
// Normalize understands. Durations and quantities keep their meaning.
func GoValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int, int32, int64, json.Number, time.Duration, resource.Quantity:
		return x
	case *resource.Quantity:
		if x == nil {
			return nil
		}
		return *x
	case *time.Duration:
		if x == nil {
			return nil
		}
		return *x
	case map[string]any:
		return x
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unencodable %T>", v)
	}
	out, err := DecodeJSON(raw)
	if err != nil {
		return fmt.Sprintf("<unencodable %T>", v)
	}
	return out
}

// textRule is what every text value obeys: UTF-8 (YAML and JSON have no
// other), without a NUL byte (no program can be given one, and a C string
// ends there).
func textRule(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "must not hold a NUL byte"
	}
	return ""
}
