// Package format is the vocabulary of string formats a parameter
// declaration can name (params.string(..., format='absPath')): for each
// format the rule in words, the check, what the JSON Schema says of it and
// a drawer of random valid values for the API-server sweep (test/e2e).
// The built-in ones are one entry each in formats.go, in Go, for what a
// pattern cannot say (parsing an image reference, a CIDR, base64); a
// format that is a pattern is declared in Jsonnet beside the parameters
// that use it (params.format: Declared), its drawer drawn from the
// pattern.
//
// The generator checks values and writes the schema with it (through
// generator/param), the end-to-end suite and the fuzz tests draw values
// with it; it imports no package of this module.
package format

import (
	"maps"
	"slices"
)

// A Format is one named check of a string value.
type Format struct {
	// Name is what a declaration writes: format='absPath'. The format ""
	// is any text.
	Name string
	// Rule says what a value must be, for describe and the JSON Schema:
	// "an absolute path".
	Rule string
	// Check returns the rule a value breaks, in words that follow the
	// value in an error ("must be an absolute path"), or "" when it is
	// valid. Checks come from k8s.io/apimachinery where Kubernetes has
	// them, so the rules are the API server's.
	Check func(string) string
	// Schema is what the JSON Schema of a string parameter of this format
	// says beside its type: pattern, maxLength, minLength. Nil says
	// nothing more.
	Schema map[string]any
	// Draw returns a random value that Check accepts and the API server
	// takes wherever the prototypes put it, for the sweep of test/e2e.
	Draw func(*Rand) string
}

// registry is every format by name, built once from formats.
var registry = func() map[string]*Format {
	m := make(map[string]*Format, len(formats))
	for i := range formats {
		f := &formats[i]
		if _, dup := m[f.Name]; dup {
			panic("format " + f.Name + " is registered twice")
		}
		if f.Check == nil || f.Draw == nil || (f.Rule == "" && f.Name != "") {
			panic("format " + f.Name + " needs a rule, a check and a drawer")
		}
		schema, ok := schemas[f.Name]
		if !ok {
			panic("format " + f.Name + " needs a schema (schemas.go)")
		}
		f.Schema = schema
		m[f.Name] = f
	}
	return m
}()

// Lookup returns the named format.
func Lookup(name string) (*Format, bool) {
	f, ok := registry[name]
	return f, ok
}

// Get returns the named format; it panics if there is none, which a
// declaration checked with Lookup cannot cause.
func Get(name string) *Format {
	f, ok := registry[name]
	if !ok {
		panic("unknown format " + name)
	}
	return f
}

// Names returns the names of every format but "", sorted.
func Names() []string {
	names := slices.Sorted(maps.Keys(registry))
	return slices.DeleteFunc(names, func(n string) bool { return n == "" })
}
