package param

import (
	"encoding/json"
	"fmt"
	"maps"
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
	TypeDuration Type = "duration" // whole seconds; accepts 300, "300s" or "5m"
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
	// Format checks strings, list items and map keys: a name in generator/format.
	Format string `json:"format,omitempty"`
	// ValueFormat checks map values ("quantity" makes a map of quantities).
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
	// Replaces says what the parameter was called in the system the prototype
	// replaces, when the name changed.
	Replaces string `json:"replaces,omitempty"`
	// Params are the members of a group, sorted by name.
	Params []*Param `json:"params,omitempty"`
	// OldPaths are the paths the replaced system used for the parameter,
	// from its own Replaces and its groups': still accepted, with a warning.
	OldPaths []string `json:"oldPaths,omitempty"`
}

// Decl is the shape of one declaration as lib/params.libsonnet emits it.
type Decl struct {
	Type        Type             `json:"type"`
	Doc         string           `json:"doc"`
	Default     json.RawMessage  `json:"default"`
	Min         *int64           `json:"min"`
	Max         *int64           `json:"max"`
	Values      []string         `json:"values"`
	Format      string           `json:"format"`
	ValueFormat string           `json:"valueFormat"`
	Separator   *string          `json:"separator"`
	Kind        string           `json:"kind"`
	List        bool             `json:"list"`
	Aliases     []string         `json:"aliases"`
	Common      bool             `json:"common"`
	Replaces    string           `json:"replaces"`
	Params      map[string]*Decl `json:"params"`
}

// Build turns the declarations of a prototype's parameters into sorted
// Params, checking that each declaration is well formed and its default
// valid, so that a prototype bug shows when the prototype loads.
func Build(decls map[string]*Decl) ([]*Param, error) {
	return buildParamsOld("", nil, decls)
}

// buildParamsOld builds a group's members; oldPrefixes are the paths the
// replaced system used for the group, if it was renamed.
func buildParamsOld(prefix string, oldPrefixes []string, decls map[string]*Decl) ([]*Param, error) {
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
		if !isIdentifier(n) {
			return nil, fmt.Errorf("parameter %q: a name must be a camelCase identifier", path)
		}
		sep := ","
		if d.Separator != nil {
			sep = *d.Separator
		}
		p := &Param{
			Name: n, Path: path, Type: d.Type, Doc: strings.TrimSpace(d.Doc), Separator: sep,
			Min: d.Min, Max: d.Max, Values: d.Values, Format: d.Format, ValueFormat: d.ValueFormat,
			Kind: d.Kind, List: d.List, Aliases: d.Aliases, Common: d.Common, Replaces: d.Replaces,
		}
		if p.Doc == "" {
			return nil, fmt.Errorf("parameter %q: doc is empty; every parameter needs one", path)
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
			kids, err := buildParamsOld(path, p.OldPaths, d.Params)
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
				return nil, fmt.Errorf("parameter %q: default %s: %s", path, Show(v), rule)
			}
			p.Default = def
		}
		out = append(out, p)
	}
	return out, nil
}

// checkDecl rejects declarations that cannot work, so that a prototype bug
// shows when the prototype loads, not when a user hits it.
func (p *Param) checkDecl() error {
	switch p.Type {
	case TypeString, TypeList:
		if _, ok := format.Lookup(p.Format); !ok {
			return fmt.Errorf("unknown format %q (known: %s)", p.Format, strings.Join(format.Names(), ", "))
		}
	case TypeMap:
		if _, ok := format.Lookup(p.Format); !ok {
			return fmt.Errorf("unknown key format %q (known: %s)", p.Format, strings.Join(format.Names(), ", "))
		}
		if _, ok := format.Lookup(p.ValueFormat); !ok && p.ValueFormat != "quantity" {
			return fmt.Errorf("unknown value format %q", p.ValueFormat)
		}
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

func isIdentifier(s string) bool {
	if s == "" || !unicode.IsLower(rune(s[0])) {
		return false
	}
	for _, r := range s {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
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
