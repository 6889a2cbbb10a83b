package generator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/format"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// TestSchemaAgreesWithGen: `trainsonnet schema` is for editors, which must
// agree with gen on every params file. For every parameter of every
// prototype, values drawn at and around its bounds and format (valid ones
// from the format's drawer, and each mutated into near misses) go into a
// params file of their own, and the prototype's JSON Schema (a real
// validator) takes exactly those whose reading by their declarations
// (gen's checks of a params file, before the prototype's own rules) finds
// no problem.
func TestSchemaAgreesWithGen(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	r := format.NewRand(rand.New(rand.NewPCG(1, 2)))
	for _, name := range g.Names() {
		t.Run(name, func(t *testing.T) {
			pr, err := g.Lookup(name)
			require.NoError(t, err)
			raw, err := pr.JSONSchema()
			require.NoError(t, err)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			require.NoError(t, err)
			c := jsonschema.NewCompiler()
			require.NoError(t, c.AddResource(name+".json", doc))
			schema, err := c.Compile(name + ".json")
			require.NoError(t, err)
			var disagree []string
			for _, p := range param.Leaves(pr.Params) {
				for _, v := range corpus(p, r) {
					file := corpusFile(p.Path, v)
					data, err := json.Marshal(file)
					require.NoError(t, err)
					problems, err := generator.ValueProblems(g, generator.NewParams(name).AddFile("corpus.json", data))
					require.NoError(t, err)
					genTakes := len(problems) == 0
					inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
					require.NoError(t, err)
					schemaTakes := schema.Validate(inst) == nil
					if genTakes != schemaTakes {
						why := ""
						if !genTakes {
							why = ": " + problems[0].Error()
						}
						disagree = append(disagree, fmt.Sprintf("%s = %s: gen takes it %v, the schema %v%s", p.Path, data, genTakes, schemaTakes, why))
					}
				}
			}
			if len(disagree) > 0 {
				t.Errorf("%d values on which schema and gen disagree:\n%s", len(disagree), strings.Join(disagree, "\n"))
			}
		})
	}
}

// TestSchemaAgreesOnTheReportedCases: the values an earlier schema and gen
// disagreed on, each with gen's verdict, which the schema now shares.
func TestSchemaAgreesOnTheReportedCases(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, c := range []struct {
		proto, file string
		takes       bool
	}{
		{"openmpi", `{"cpu": "1.2.3"}`, false},
		{"openmpi", `{"memory": "5iG"}`, false},
		{"openmpi", `{"memory": "100m"}`, false},
		{"openmpi", `{"memory": "1.5Gi"}`, true},
		{"pytorch", `{"nprocPerNode": 0}`, false},
		{"pytorch", `{"nprocPerNode": 2000}`, false},
		{"pytorch", `{"nprocPerNode": 8}`, true},
		{"openmpi", `{"initTimeout": "1.5s"}`, false},
		{"openmpi", `{"initTimeout": "0s"}`, false},
		{"openmpi", `{"activeDeadlineSeconds": "600000h"}`, false},
		{"openmpi", `{"activeDeadlineSeconds": "2h"}`, true},
		{"openmpi", `{"labels": {"team": "a b"}}`, false},
		{"horovod-spark", `{"sparkConf": {"spark.executor memory": "8g"}}`, false},
		{"horovod-spark", `{"sparkConf": {"spark.executor.memory": "8g"}}`, true},
		{"openmpi", `{"ttlSecondsAfterFinished": "300"}`, true},
		{"openmpi", `{"env": {"TS_EXEC": "x"}}`, false},
		{"openmpi", `{"launcher": {"env": {"OMPI_MCA_btl": "tcp"}}}`, false},
		{"pytorch", `{"env": {"JOB_COMPLETION_INDEX": "3"}}`, false},
		{"pytorch", `{"env": {"PET_NNODES": "3"}}`, false},
		{"pytorch", `{"env": {"PET_TEE": "1"}}`, true},
	} {
		pr, err := g.Lookup(c.proto)
		require.NoError(t, err)
		raw, err := pr.JSONSchema()
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err)
		comp := jsonschema.NewCompiler()
		require.NoError(t, comp.AddResource(c.proto+".json", doc))
		schema, err := comp.Compile(c.proto + ".json")
		require.NoError(t, err)
		problems, err := generator.ValueProblems(g, generator.NewParams(c.proto).AddFile("case.json", []byte(c.file)))
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.file))
		require.NoError(t, err)
		assert.Equal(t, c.takes, len(problems) == 0, "%s %s: gen: %v", c.proto, c.file, problems)
		assert.Equal(t, c.takes, schema.Validate(inst) == nil, "%s %s: the schema", c.proto, c.file)
	}
}

// corpusFile is the params file that sets the dotted path to v.
func corpusFile(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	out := any(v)
	for i := len(parts) - 1; i >= 0; i-- {
		out = map[string]any{parts[i]: out}
	}
	return out.(map[string]any)
}

// corpus are values for p: valid ones and near misses, at and around its
// bounds and format, as a params file would hold them.
func corpus(p *param.Param, r *format.Rand) []any {
	var out []any
	ints := func() []int64 {
		vs := []int64{-1, 0, 1, 2, 1000000000}
		for _, b := range []*int64{p.Min, p.Max} {
			if b != nil {
				vs = append(vs, *b-1, *b, *b+1)
			}
		}
		return vs
	}
	switch p.Type {
	case param.TypeInt:
		for _, n := range ints() {
			out = append(out, n, strconv.FormatInt(n, 10))
		}
		out = append(out, 1.5, "1.5", true, "", " 3 ")
	case param.TypeBool:
		out = append(out, true, false, "true", "yes", 1, "")
	case param.TypeEnum:
		for _, v := range p.Values {
			out = append(out, v, strings.ToUpper(v), v+" ")
		}
		out = append(out, "nope", 1, "")
	case param.TypeQuantity:
		out = append(out, "1", "0", "-1", "100m", "1.5", ".5", "5.", "+1", "1.2.3", "5iG", "5Gi", "5G", "5g", "5K", "5k", "5Ki",
			"1e3", "1E3", "1e-3", "2GB", "2 GB", "1.5KB", "", " 1Gi", "1Gi ", "0.5Ki", "1n", "1u", "1m", 1, 0, 0.5, -1, 1e30, "1Ei", "100Ei")
	case param.TypeDuration:
		for _, n := range ints() {
			out = append(out, n, strconv.FormatInt(n, 10), strconv.FormatInt(n, 10)+"s")
		}
		out = append(out, "0s", "1s", "1.5s", "1500ms", "1000ms", "5m", "1h30m", "600000h", "-1s", "1ms", "abc", 1.5, "", "1d", "300 s")
	case param.TypeString:
		for _, v := range strs(p.FormatSpec(), r) {
			out = append(out, v)
		}
		out = append(out, 1, 0, -1, 2000, 100001, 1.5, true)
	case param.TypeMap:
		for _, k := range strs(p.FormatSpec(), r) {
			vf := p.ValueFormat
			if vf == "quantity" {
				out = append(out, map[string]any{k: "1Gi"}, map[string]any{k: "1.2.3"})
				continue
			}
			out = append(out, map[string]any{k: "v"})
		}
		for _, v := range strs(p.ValueFormatSpec(), r) {
			out = append(out, map[string]any{"key": v})
		}
		out = append(out, map[string]any{"a": 1}, map[string]any{"a": true}, map[string]any{"a": 1.10}, []any{}, "a=b")
	case param.TypeList:
		if p.Format == "int" {
			for _, n := range ints() {
				out = append(out, []any{n})
			}
			out = append(out, []any{1, 1}, []any{"1"})
			break
		}
		for _, v := range strs(p.FormatSpec(), r) {
			out = append(out, []any{v})
		}
		out = append(out, []any{"a", "a"}, []any{1}, "a", map[string]any{})
	}
	return out
}

// strs are valid values of the format f (drawn) and near misses of each.
func strs(f *format.Format, r *format.Rand) []string {
	return format.NearMisses(f, r, 2)
}
