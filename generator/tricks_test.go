package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
)

// TestTricksKeepTheOutput: the speed tricks of a render, each behind its
// seam, change no byte of any output. Every built-in's job of the
// benchmarks, at 4 and 1,000 workers, and the large strings of every
// shape of testdata/assetproto, render the same with references to large
// strings or the text itself (internal/eval/refs.go), the value of the render handed
// over or printed and parsed (internal/eval/engine.go), and the YAML encoding's fast
// path or the encoder alone (generator/internal/yamlenc).
func TestTricksKeepTheOutput(t *testing.T) {
	opts := generator.Options{PrototypePaths: []string{"testdata/assetproto"}}
	tricks, err := generator.New(opts)
	require.NoError(t, err)
	plain, err := generator.NewWith(opts, false, false)
	require.NoError(t, err)
	render := func(g *generator.Generator, params *generator.Params) *generator.Result {
		cryptotest.SetGlobalRandom(t, 1) // the same ssh keys and tokens
		res, err := g.Render(context.Background(), params)
		require.NoError(t, err)
		return res
	}
	for _, name := range tricks.Names() {
		if name == "assetmisplaced" || name == "assetmissing" {
			continue // prototype bugs: TestAssetsComeOutVerbatim
		}
		for _, workers := range []int{4, 1000} {
			t.Run(name+"/"+strconv.Itoa(workers), func(t *testing.T) {
				res := render(tricks, benchParams(t, tricks, name, workers))
				without := render(plain, benchParams(t, plain, name, workers))
				y, err := res.YAML()
				require.NoError(t, err)
				yPlain, err := without.YAML()
				require.NoError(t, err)
				assert.Equal(t, string(yPlain), string(y), "YAML")
				yEncoder, err := generator.YAMLByEncoder(res)
				require.NoError(t, err)
				assert.Equal(t, string(yEncoder), string(y), "YAML by the encoder alone")
				j, err := res.JSON()
				require.NoError(t, err)
				jPlain, err := without.JSON()
				require.NoError(t, err)
				assert.Equal(t, string(jPlain), string(j), "JSON")
				assert.Equal(t, res.Warnings, without.Warnings)
			})
		}
	}
}

// TestHandOver: the value of a render is what the prototype evaluates
// to, handed over by ts.prototype or printed by a wrapper of one's own;
// a hand-over that is not the whole output is a prototype bug.
func TestHandOver(t *testing.T) {
	dir := t.TempDir()
	spec := `{name: '%s', summary: 'A wrapper of its own.', params: {name: {type: 'string', doc: 'Name.', default: 'x'}}}`
	cm := `{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: params.name}, data: {a: 'b'}}`
	for name, value := range map[string]string{
		"printed": `{errors: [], warnings: ['w'], objects: [` + cm + `]}`,
		"nested":  `{value: std.native('handOver')({errors: [], warnings: [], objects: [` + cm + `]})}`,
		"twice":   `[std.native('handOver')({errors: [], warnings: [], objects: []}), std.native('handOver')({})]`,
		"shape":   `{errors: [], objects: []}`,
	} {
		src := "function(params={}, output='objects') if output == 'spec' then " + strings.ReplaceAll(spec, "%s", name) + " else " + value + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".jsonnet"), []byte(src), 0o644))
	}
	g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams("printed"))
	require.NoError(t, err)
	assert.Equal(t, []string{"w"}, res.Warnings)
	assert.Equal(t, `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"x"}}`, string(res.Objects[0].JSON()))
	for name, want := range map[string]string{
		"nested": "its output is not the value it handed over",
		"twice":  "handOver(value) is called once per evaluation",
		"shape":  "its output 'full' is not {errors, warnings, objects}",
	} {
		_, err := g.Render(context.Background(), generator.NewParams(name))
		assert.ErrorContains(t, err, want, name)
		assert.False(t, generator.IsValidation(err), name)
	}
}

// TestJSONIsTheTreeEncoded: Object.JSON hands out the encoding its check
// made, unless a reference was replaced after it; for every built-in, with
// text the kubelet and YAML 1.1 would change, it is the tree encoded anew.
func TestJSONIsTheTreeEncoded(t *testing.T) {
	g := newGenerator(t)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	for _, pr := range protos {
		res, err := g.Render(context.Background(), generator.NewParams(pr.Name).
			Set("labels", map[string]string{"v": "1.10", "yes": "on"}).
			Set("env", map[string]string{"X": "$(HOME) $$"}))
		require.NoError(t, err, pr.Name)
		for _, o := range res.Objects {
			assert.Equal(t, string(generator.EncodeTree(o)), string(o.JSON()), "%s: %s", pr.Name, o.ID())
		}
	}
}
