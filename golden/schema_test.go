package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestSchemaTakesWhatGenTakes: `trainsonnet schema <prototype>` is for
// editors, so it must not flag a params file that gen takes. Every params
// file (-f) of every golden render and base, the charts' own values among
// them, and every examples/*/params*.yaml, validates against its
// prototype's schema with a real JSON Schema validator.
func TestSchemaTakesWhatGenTakes(t *testing.T) {
	type use struct{ proto, file string }
	var uses []use
	for proto, cases := range Renders {
		for _, c := range append(slices.Clone(cases), Bases[proto]...) {
			for i, a := range c.Args {
				if (a == "-f" || a == "--params") && i+1 < len(c.Args) {
					uses = append(uses, use{proto, c.Args[i+1]})
				}
			}
		}
	}
	examples, err := filepath.Glob("../examples/*/params*.yaml")
	require.NoError(t, err)
	for _, f := range examples {
		proto := filepath.Base(filepath.Dir(f))
		if _, ok := Renders[proto]; ok {
			uses = append(uses, use{proto, f})
		}
	}
	require.NotEmpty(t, uses)
	schemas := map[string]*jsonschema.Schema{}
	for _, u := range uses {
		t.Run(u.proto+"/"+filepath.Base(u.file), func(t *testing.T) {
			s := schemas[u.proto]
			if s == nil {
				code, out, stderr := run(t, []string{"schema", u.proto})
				require.Equal(t, 0, code, string(stderr))
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
				require.NoError(t, err)
				c := jsonschema.NewCompiler()
				require.NoError(t, c.AddResource(u.proto+".json", doc))
				s, err = c.Compile(u.proto + ".json")
				require.NoError(t, err)
				schemas[u.proto] = s
			}
			data, err := os.ReadFile(u.file)
			require.NoError(t, err)
			j, err := yaml.YAMLToJSON(data)
			require.NoError(t, err)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
			require.NoError(t, err)
			if m, ok := v.(map[string]any); ok {
				delete(m, "prototype") // a batch job's file names its prototype
			}
			if err := s.Validate(v); err != nil {
				msg := err.Error()
				var ve *jsonschema.ValidationError
				if errors.As(err, &ve) {
					b, _ := json.MarshalIndent(ve.BasicOutput(), "", " ")
					msg = string(b)
				}
				assert.Fail(t, "gen takes "+u.file+", its schema does not", msg)
			}
		})
	}
}
