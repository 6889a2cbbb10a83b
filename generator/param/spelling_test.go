package param

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func build(t *testing.T, decls string) []*Param {
	t.Helper()
	var d map[string]*Decl
	if err := json.Unmarshal([]byte(decls), &d); err != nil {
		t.Fatal(err)
	}
	ps, err := Build(d)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestSpellings: a parameter takes the spellings its declaration names,
// and only those, in decoded values; in text, only the spellings read in
// text (byteUnits).
func TestSpellings(t *testing.T) {
	all := `["blankIsUnset", "quotedScalars", "byteUnits", "emptyMapList"]`
	ps := build(t, `{
		"port": {"type": "int", "doc": "p", "spellings": `+all+`},
		"on": {"type": "bool", "doc": "b", "spellings": `+all+`},
		"mem": {"type": "quantity", "doc": "m", "format": "bytes", "spellings": `+all+`},
		"args": {"type": "list", "doc": "a", "spellings": `+all+`},
		"tolerations": {"type": "object", "kind": "core/v1.Toleration", "list": true, "doc": "t", "spellings": `+all+`},
		"plain": {"type": "int", "doc": "p"}
	}`)
	port, on, mem, args, plain := Find(ps, "port"), Find(ps, "on"), Find(ps, "mem"), Find(ps, "args"), Find(ps, "plain")
	tolerations := Find(ps, "tolerations")
	for _, c := range []struct {
		p    *Param
		in   any
		want Reading
	}{
		{port, json.Number("3"), Reading{Value: int64(3)}},
		{port, " 3222 ", Reading{Value: int64(3222), Note: `" 3222 " is taken as 3222, as the chart took it; leave out the quotes`}},
		{port, "", Reading{Unset: true, Note: `"" is taken as unset (the default) here, as the chart meant it; leave the key out`}},
		{on, "true", Reading{Value: true, Note: `"true" is taken as true, as the chart took it; leave out the quotes`}},
		{mem, "2GB", Reading{Value: "2G", Note: "2GB is taken as 2G, its spelling as a Kubernetes quantity"}},
		{mem, "1.5 KB", Reading{Value: "1500", Note: "1.5 KB is taken as 1500, its spelling as a Kubernetes quantity"}},
		{args, map[string]any{}, Reading{Value: []string{}, Note: "{} is an empty map where a list is expected; taken as an empty list (args: [])"}},
		// a list of objects as a list of strings
		{tolerations, map[string]any{}, Reading{Value: []any{}, Note: "{} is an empty map where a list is expected; taken as an empty list (tolerations: [])"}},
	} {
		got, rule := c.p.Read(c.in)
		if rule != "" || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Read(%#v) = %#v, %q; want %#v", c.p.Path, c.in, got, rule, c.want)
		}
	}
	for _, c := range []struct {
		p  *Param
		in any
	}{{plain, "3"}, {plain, ""}, {on, "yes"}, {mem, "2XB"}, {port, map[string]any{}}} {
		if got, rule := c.p.Read(c.in); rule == "" {
			t.Errorf("%s: Read(%#v) = %#v, want a rule", c.p.Path, c.in, got)
		}
	}
	if got, rule := mem.ReadText(" 3 GB"); rule != "" || got.Value != "3G" {
		t.Errorf("ReadText: %#v, %q", got, rule)
	}
	if got, rule := port.ReadText(""); rule == "" {
		t.Errorf(`ReadText(""): %#v: "" is unset in files only`, got)
	}
	// The schema lists exactly the spellings gen takes.
	for _, c := range []struct {
		p    *Param
		want int // alternatives beside the declared type: null and spellings
	}{{port, 3}, {on, 3}, {mem, 3}, {args, 3}, {plain, 1}} {
		if got := len(c.p.Schema()["anyOf"].([]any)) - 1; got != c.want {
			t.Errorf("%s: %d alternatives in the schema, want %d", c.p.Path, got, c.want)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, c := range []struct{ decls, want string }{
		{`{"a": {"type": "int", "doc": "a", "spellings": ["twoGB"]}}`, `unknown spelling "twoGB"`},
		{`{"a": {"type": "string", "doc": "a", "format": "nope"}}`, `unknown format "nope"`},
		{`{"a": {"type": "int", "doc": "a", "format": {"name": "x", "rule": "r", "pattern": "x"}}}`, "a parameter of type int takes no format"},
		{`{"a": {"type": "int", "doc": "a", "atMost": {"param": "b"}}}`, `atMost "b": not a parameter of type int`},
		{`{"a": {"type": "int", "doc": "a", "atLeast": {"param": "a"}}}`, "atLeast names itself"},
		{`{"a": {"type": "string", "doc": "a", "needs": {"param": "b"}}}`, `needs "b": not a parameter`},
		{`{"a": {"type": "string", "doc": "a", "needs": {"param": "a"}}}`, "needs itself"},
		{`{"a": {"type": "string", "doc": "a", "needs": {"param": "b"}}, "b": {"type": "int", "doc": "b", "default": 1}}`, `needs "b": both must be unset (null) by default`},
	} {
		var d map[string]*Decl
		if err := json.Unmarshal([]byte(c.decls), &d); err != nil {
			t.Fatal(err)
		}
		if _, err := Build(d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.decls, err, c.want)
		}
	}
	// A format is a name, a declared format, or null (none).
	ps := build(t, `{"a": {"type": "string", "doc": "a", "format": null},
		"b": {"type": "string", "doc": "b", "format": {"name": "tag", "rule": "a tag", "pattern": "^[a-z]+$"}}}`)
	if a, b := Find(ps, "a"), Find(ps, "b"); a.Format != "" || b.Format != "tag" || b.FormatSpec().Check("X") != "must be a tag" {
		t.Errorf("a %q, b %q", a.Format, b.Format)
	}
}

// TestNumberAsText: a bare number is the text it was written as, with no
// warning, held to the declared format; a number YAML reads as another
// (a YAMLNumber: 012) is not, and a text parameter without the spelling
// takes no number.
func TestNumberAsText(t *testing.T) {
	ps := build(t, `{
		"nproc": {"type": "string", "doc": "n", "format": "nonEmpty", "spellings": ["numberAsText"]},
		"plain": {"type": "string", "doc": "p"}
	}`)
	nproc, plain := Find(ps, "nproc"), Find(ps, "plain")
	for in, want := range map[any]string{json.Number("8"): "8", 8: "8", int64(16): "16", "auto": "auto"} {
		got, rule := nproc.Read(in)
		if rule != "" || got.Value != want || got.Note != "" {
			t.Errorf("Read(%#v) = %#v, %q; want %q without a note", in, got, rule, want)
		}
	}
	for _, c := range []struct {
		p  *Param
		in any
	}{{nproc, YAMLNumber{Number: json.Number("10"), Text: "012"}}, {plain, json.Number("8")}, {nproc, true}} {
		if got, rule := c.p.Read(c.in); rule == "" {
			t.Errorf("%s: Read(%#v) = %#v, want a rule", c.p.Path, c.in, got)
		}
	}
	if got := len(nproc.Schema()["anyOf"].([]any)) - 1; got != 2 {
		t.Errorf("%d alternatives in the schema, want 2 (null, integer)", got)
	}
}
