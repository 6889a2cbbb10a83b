package format

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestFormatSchemas: each format's JSON Schema (a real validator) takes
// exactly the values its Check takes: values drawn from it, and each
// mutated into near misses (spaces, case, a dash or dot at an end, a
// slash, a long tail, ...).
func TestFormatSchemas(t *testing.T) {
	r := NewRand(rand.New(rand.NewPCG(7, 8)))
	for _, name := range append(Names(), "") {
		f := Get(name)
		t.Run(name, func(t *testing.T) {
			s := compileString(t, f.Schema)
			for _, v := range NearMisses(f, r, 12) {
				want := f.Check(v) == ""
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustJSON(v)))
				if err != nil {
					t.Fatal(err)
				}
				if got := s.Validate(inst) == nil; got != want {
					t.Errorf("%q: the schema takes it %v, the check %v (%s)", v, got, want, f.Check(v))
				}
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// compileString compiles the schema of a string of the format schema.
func compileString(t *testing.T, schema map[string]any) *jsonschema.Schema {
	t.Helper()
	doc := map[string]any{"type": "string"}
	for k, v := range schema {
		doc[k] = v
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustJSON(doc)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("f.json", parsed); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("f.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
