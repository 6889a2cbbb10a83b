package param

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// Type is the declared type of a parameter.
type Type string

// The parameter types a prototype can declare (lib/params.libsonnet builds them).
const (
	TypeString   Type = "string"   // text, optionally checked against a Format
	TypeInt      Type = "int"      // integer with optional Min/Max
	TypeBool     Type = "bool"     // true or false
	TypeEnum     Type = "enum"     // one of Values
	TypeQuantity Type = "quantity" // a Kubernetes quantity (resource.Quantity), such as 500m or 4Gi
	TypeDuration Type = "duration" // whole seconds; accepts 300, "300", "300s", "5m" or "2h"
	TypeMap      Type = "map"      // string keys to string (or quantity) values
	TypeList     Type = "list"     // a list of strings
	TypeObject   Type = "object"   // structured pass-through checked against a k8s.io/api type
	TypeGroup    Type = "group"    // a nested set of parameters
)

// Param is one declared parameter of a prototype. Declarations live in the
// prototype's Jsonnet file; everything else (how values are parsed and
// checked, the JSON Schema, and in the programs above: flags, describe, Go
// types) is derived from them.
type Param struct {
	// Name is the key within its group, as written in a params file: "port".
	Name string `json:"name"`
	// Path is the dotted key from the top: "ssh.port".
	Path string `json:"path"`
	// Type is the declared type.
	Type Type `json:"type"`
	// Doc is the one-paragraph description shown by describe and in flag help.
	Doc string `json:"doc"`
	// Default is the normalized default value; nil means "not set".
	Default any `json:"default,omitempty"`
	// Min and Max bound int and duration values (inclusive), when set.
	Min *int64 `json:"min,omitempty"`
	Max *int64 `json:"max,omitempty"`
	// Values lists the allowed values of an enum.
	Values []string `json:"values,omitempty"`
	// Format checks strings, list items and map keys: the name of a format
	// of generator/format, or of one the prototype declares in Jsonnet
	// (params.format); FormatSpec is the format itself. (A quantity's is
	// its unit: "" or "bytes".)
	Format string `json:"format,omitempty"`
	// ValueFormat checks map values, as Format does ("quantity" makes a
	// map of quantities); ValueFormatSpec is the format itself.
	ValueFormat string `json:"valueFormat,omitempty"`
	// Separator splits a list given as text; "" makes each flag one item.
	Separator string `json:"separator,omitempty"`
	// Kind names the k8s.io/api type an object parameter is checked against,
	// such as "core/v1.Volume"; List makes it a list of them.
	Kind string `json:"kind,omitempty"`
	List bool   `json:"list,omitempty"`
	// Aliases are other names the parameter answers to, such as the names
	// used by the system the prototype replaces ("secret" for "ssh.secret").
	Aliases []string `json:"aliases,omitempty"`
	// Common marks the parameters every prototype shares (lib/common.libsonnet).
	Common bool `json:"common,omitempty"`
	// Owner is the library piece that declares the parameter, or its
	// group (ts.declare: common.params, batch.params, storage.params, ...);
	// "" for the prototype's own.
	Owner string `json:"-"`
	// Replaces says what the parameter was called in the system the prototype
	// replaces, when the name changed.
	Replaces string `json:"replaces,omitempty"`
	// ReplacesNote says how the parameter's meaning differs from what
	// Replaces meant there, when it does: the warning for the old path
	// says it, instead of asking for a rename.
	ReplacesNote string `json:"replacesNote,omitempty"`
	// Params are the members of a group, sorted by name.
	Params []*Param `json:"params,omitempty"`
	// OldPaths are the paths the replaced system used for the parameter,
	// from its own Replaces and its groups': still accepted, with a warning.
	OldPaths []string `json:"oldPaths,omitempty"`
	// Spellings are the other ways of writing a value that the parameter
	// takes with a warning, as the replaced system wrote them (spelling.go).
	Spellings []Spelling `json:"spellings,omitempty"`
	// OwnKeys are the keys of a map that the prototype keeps for itself
	// (the variables its own machinery reads, for a map of environment
	// variables): names, and prefixes ending in *. Its reading refuses
	// them (generator), its JSON Schema too.
	OwnKeys []string `json:"ownKeys,omitempty"`
	// AtMost and AtLeast relate an int or seconds parameter to another
	// (params.atMost, params.atLeast): when both are set, its value is at
	// most (at least) the other's. The render checks them (Related), after
	// the prototype's own rules.
	AtMost  *Relation `json:"atMost,omitempty"`
	AtLeast *Relation `json:"atLeast,omitempty"`
	// Needs names a parameter without which this one means nothing
	// (params.needs): a value given without the other one is refused.
	// Both are unset by default.
	Needs *Relation `json:"needs,omitempty"`

	// The formats of Format and ValueFormat, when declared by the
	// prototype (nil: by name, from generator/format).
	format, valueFormat *format.Format
}

// A Relation names the parameter another one is held to, and why.
type Relation struct {
	// Param is the other parameter's dotted path.
	Param string `json:"param"`
	// Why is what breaking it would do, after the rule in the message.
	Why string `json:"why,omitempty"`
	// UnlessZero: the relation holds whatever this parameter's value
	// when the other one is 0 (deepspeed's slots, at most gpu on a GPU
	// node, any number on CPU).
	UnlessZero bool `json:"unlessZero,omitempty"`
}

// FormatSpec is the format of strings, list items and map keys (Format):
// one of generator/format's, or one the prototype declares.
func (p *Param) FormatSpec() *format.Format { return formatOr(p.format, p.Format) }

// ValueFormatSpec is the format of a map's values (ValueFormat), as
// FormatSpec is of its keys; any text for "quantity", which is no format.
func (p *Param) ValueFormatSpec() *format.Format { return formatOr(p.valueFormat, p.ValueFormat) }

func formatOr(f *format.Format, name string) *format.Format {
	if f != nil {
		return f
	}
	if f, ok := format.Lookup(name); ok {
		return f
	}
	return format.Get("")
}

// FormatRef is a declaration's format: the name of one of
// generator/format's ("absPath"), or, as an object, a format the
// prototype declares (params.format: format.Declared).
type FormatRef struct {
	Name     string
	Declared *format.Declared
}

// UnmarshalJSON reads a name or a declared format.
func (f *FormatRef) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*f = FormatRef{}
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &f.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d format.Declared
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("a format is a name or a declared format (params.format): %w", err)
	}
	f.Name, f.Declared = d.Name, &d
	return nil
}

// Decl is the shape of one declaration as lib/params.libsonnet emits it.
type Decl struct {
	Type         Type             `json:"type"`
	Doc          string           `json:"doc"`
	Default      json.RawMessage  `json:"default"`
	Min          *int64           `json:"min"`
	Max          *int64           `json:"max"`
	Values       []string         `json:"values"`
	Format       FormatRef        `json:"format"`
	ValueFormat  FormatRef        `json:"valueFormat"`
	Separator    *string          `json:"separator"`
	Kind         string           `json:"kind"`
	List         bool             `json:"list"`
	Aliases      []string         `json:"aliases"`
	Common       bool             `json:"common"`
	Replaces     string           `json:"replaces"`
	ReplacesNote string           `json:"replacesNote"`
	Spellings    []Spelling       `json:"spellings"`
	AtMost       *Relation        `json:"atMost"`
	AtLeast      *Relation        `json:"atLeast"`
	Needs        *Relation        `json:"needs"`
	Params       map[string]*Decl `json:"params"`
}

// Build turns the declarations of a prototype's parameters into sorted
// Params, checking that each declaration is well formed and its default
// valid, so that a prototype bug shows when the prototype loads.
func Build(decls map[string]*Decl) ([]*Param, error) {
	b := &builder{declared: map[string]*declaredFormat{}}
	ps, err := b.params("", nil, decls)
	if err != nil {
		return nil, err
	}
	if err := checkRelations(ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// relation is one of a parameter's relations to another: its name in a
// declaration, its words in a rule, and whether two values keep it.
type relation struct {
	*Relation
	name, word string
	holds      func(a, b int64) bool
}

// relations are the parameter's relations that are declared, in order.
func (p *Param) relations() []relation {
	var out []relation
	for _, r := range []relation{
		{p.AtMost, "atMost", "at most", func(a, b int64) bool { return a <= b }},
		{p.AtLeast, "atLeast", "at least", func(a, b int64) bool { return a >= b }},
	} {
		if r.Relation != nil {
			out = append(out, r)
		}
	}
	return out
}

// checkRelations: a relation holds an int or seconds parameter to another
// one of the same type; a parameter needs another one when both are unset
// by default.
func checkRelations(ps []*Param) error {
	numeric := func(p *Param) bool { return p != nil && (p.Type == TypeInt || p.Type == TypeDuration) }
	for _, p := range Leaves(ps) {
		if r := p.Needs; r != nil {
			other := Lookup(ps, r.Param)
			switch {
			case other == nil || other.Type == TypeGroup:
				return fmt.Errorf("parameter %q: needs %q: not a parameter", p.Path, r.Param)
			case other == p:
				return fmt.Errorf("parameter %q: needs itself", p.Path)
			case p.Default != nil || other.Default != nil:
				return fmt.Errorf("parameter %q: needs %q: both must be unset (null) by default", p.Path, r.Param)
			}
		}
		for _, r := range p.relations() {
			other := Lookup(ps, r.Param)
			switch {
			case !numeric(p):
				return fmt.Errorf("parameter %q: %s relates ints or seconds, not a %s", p.Path, r.name, p.Type)
			case !numeric(other) || other.Type != p.Type:
				return fmt.Errorf("parameter %q: %s %q: not a parameter of type %s", p.Path, r.name, r.Param, p.Type)
			case other == p:
				return fmt.Errorf("parameter %q: %s names itself", p.Path, r.name)
			}
		}
	}
	return nil
}

// Related checks the relations of the parameters ps (AtMost, AtLeast, Needs) on
// their values (value returns the value at a dotted path, nil when
// unset): a problem (its Param and Rule) for each value that breaks its
// relation, in the order of ps. Relations hold between set values only.
func Related(ps []*Param, value func(path string) any) []*Error {
	var out []*Error
	for _, p := range Leaves(ps) {
		for _, r := range p.relations() {
			v, vok := value(p.Path).(int64)
			other, ook := value(r.Param).(int64)
			if !vok || !ook || r.holds(v, other) || (r.UnlessZero && other == 0) {
				continue
			}
			rule := fmt.Sprintf("must be %s %s (%d)", r.word, r.Param, other)
			if r.UnlessZero {
				rule += " while " + r.Param + " is not 0"
			}
			if r.Why != "" {
				rule += ": " + r.Why
			}
			out = append(out, &Error{Param: p.Path, Rule: rule})
		}
		if r := p.Needs; r != nil && value(p.Path) != nil && value(r.Param) == nil {
			rule := "needs " + r.Param
			if r.Why != "" {
				rule += ": " + r.Why
			}
			out = append(out, &Error{Param: p.Path, Rule: rule})
		}
	}
	return out
}

// Lookup returns the parameter at a dotted path of ps, or nil.
func Lookup(ps []*Param, path string) *Param {
	var p *Param
	for _, part := range strings.Split(path, ".") {
		if p = Find(ps, part); p == nil {
			return nil
		}
		ps = p.Params
	}
	return p
}

// builder builds one prototype's parameters.
type builder struct {
	// declared are the formats the prototype declares, by name: one name
	// is one format.
	declared map[string]*declaredFormat
}

type declaredFormat struct {
	decl   format.Declared
	format *format.Format
}

// format resolves a declaration's format: a built-in one by name (nil,
// found by name later), or a declared one, made once per name.
func (b *builder) format(ref FormatRef) (*format.Format, error) {
	if ref.Declared == nil {
		if _, ok := format.Lookup(ref.Name); !ok {
			return nil, fmt.Errorf("unknown format %q (known: %s; or declare one with params.format)", ref.Name, strings.Join(format.Names(), ", "))
		}
		return nil, nil
	}
	if prev, ok := b.declared[ref.Name]; ok {
		if !reflect.DeepEqual(prev.decl, *ref.Declared) {
			return nil, fmt.Errorf("format %q is declared twice, differently", ref.Name)
		}
		return prev.format, nil
	}
	f, err := ref.Declared.Format()
	if err != nil {
		return nil, err
	}
	b.declared[ref.Name] = &declaredFormat{decl: *ref.Declared, format: f}
	return f, nil
}

// params builds a group's members; oldPrefixes are the paths the
// replaced system used for the group, if it was renamed.
func (b *builder) params(prefix string, oldPrefixes []string, decls map[string]*Decl) ([]*Param, error) {
	names := slices.Sorted(maps.Keys(decls))
	out := make([]*Param, 0, len(names))
	for _, n := range names {
		d := decls[n]
		path := n
		if prefix != "" {
			path = prefix + "." + n
		}
		if d == nil {
			return nil, fmt.Errorf("parameter %q: declaration is null", path)
		}
		if !format.IsIdentifier(n) {
			return nil, fmt.Errorf("parameter %q: a name must be a camelCase identifier", path)
		}
		sep := ","
		if d.Separator != nil {
			sep = *d.Separator
		}
		p := &Param{
			Name: n, Path: path, Type: d.Type, Doc: strings.TrimSpace(d.Doc), Separator: sep,
			Min: d.Min, Max: d.Max, Values: d.Values, Format: d.Format.Name, ValueFormat: d.ValueFormat.Name,
			Kind: d.Kind, List: d.List, Aliases: d.Aliases, Common: d.Common, Replaces: d.Replaces, ReplacesNote: d.ReplacesNote,
			Spellings: d.Spellings, AtMost: d.AtMost, AtLeast: d.AtLeast, Needs: d.Needs,
		}
		if p.Doc == "" {
			return nil, fmt.Errorf("parameter %q: doc is empty; every parameter needs one", path)
		}
		if err := b.formats(p, d); err != nil {
			return nil, fmt.Errorf("parameter %q: %w", path, err)
		}
		if err := p.checkDecl(); err != nil {
			return nil, fmt.Errorf("parameter %q: %w", path, err)
		}
		for _, op := range oldPrefixes {
			p.OldPaths = append(p.OldPaths, op+"."+n)
		}
		if p.Replaces != "" && !slices.Contains(p.OldPaths, p.Replaces) {
			p.OldPaths = append(p.OldPaths, p.Replaces)
		}
		if p.Type == TypeGroup {
			if len(d.Params) == 0 {
				return nil, fmt.Errorf("parameter %q: a group needs params", path)
			}
			kids, err := b.params(path, p.OldPaths, d.Params)
			if err != nil {
				return nil, err
			}
			p.Params = kids
		} else if len(d.Default) > 0 && string(d.Default) != "null" {
			v, err := DecodeJSON(d.Default)
			if err != nil {
				return nil, fmt.Errorf("parameter %q: default: %w", path, err)
			}
			def, rule := p.Normalize(v)
			if rule != "" {
				return nil, fmt.Errorf("parameter %q: default %s: %s", path, Brief(Show(v)), rule)
			}
			p.Default = def
		}
		out = append(out, p)
	}
	return out, nil
}

// formats resolves the formats the declaration d of p names: of strings,
// list items (but integers) and map keys, and of map values (but
// quantities).
func (b *builder) formats(p *Param, d *Decl) error {
	var err error
	switch {
	case p.Type == TypeString || p.Type == TypeList:
		p.format, err = b.format(d.Format)
	case p.Type == TypeMap:
		if p.format, err = b.format(d.Format); err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		if p.ValueFormat != "quantity" {
			if p.valueFormat, err = b.format(d.ValueFormat); err != nil {
				return fmt.Errorf("values: %w", err)
			}
		}
	case d.Format.Declared != nil || d.ValueFormat.Declared != nil:
		return fmt.Errorf("a parameter of type %s takes no format", p.Type)
	}
	return err
}

// checkDecl rejects declarations that cannot work, so that a prototype bug
// shows when the prototype loads, not when a user hits it.
func (p *Param) checkDecl() error {
	switch p.Type {
	case TypeString, TypeList, TypeMap: // formats: builder.formats
	case TypeEnum:
		if len(p.Values) == 0 {
			return fmt.Errorf("an enum needs values")
		}
	case TypeObject:
		if _, ok := objectKinds[p.Kind]; !ok {
			return fmt.Errorf("unknown object kind %q (known: %s)", p.Kind, strings.Join(objectKindNames(), ", "))
		}
	case TypeQuantity:
		if p.Format != "" && p.Format != "bytes" {
			return fmt.Errorf("a quantity's unit is \"\" or \"bytes\", not %q", p.Format)
		}
	case TypeInt, TypeBool, TypeDuration, TypeGroup:
	default:
		return fmt.Errorf("unknown type %q", p.Type)
	}
	if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
		return fmt.Errorf("min %d is above max %d", *p.Min, *p.Max)
	}
	for _, a := range p.Aliases {
		if !isKeyName(a) {
			return fmt.Errorf("alias %q is not a valid name (letters, digits, - and .)", a)
		}
	}
	for _, sp := range p.Spellings {
		if spellingNamed(sp) == nil {
			return fmt.Errorf("unknown spelling %q (known: %s)", sp, strings.Join(SpellingNames(), ", "))
		}
	}
	return nil
}

// Leaves returns the non-group parameters under ps, depth first, in order.
func Leaves(ps []*Param) []*Param {
	var out []*Param
	for _, p := range ps {
		if p.Type == TypeGroup {
			out = append(out, Leaves(p.Params)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

func isKeyName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// Find returns the member of ps called name, or nil.
func Find(ps []*Param, name string) *Param {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Defaults returns the default value of every parameter of ps as the tree
// a params file would hold; unset parameters are nil.
func Defaults(ps []*Param) map[string]any {
	m := make(map[string]any, len(ps))
	for _, p := range ps {
		if p.Type == TypeGroup {
			m[p.Name] = Defaults(p.Params)
		} else {
			m[p.Name] = p.Default
		}
	}
	return m
}
