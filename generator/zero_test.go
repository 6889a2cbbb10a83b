package generator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
)

// TestZeroValues drives every exported entry point of the package with
// zero values (nil pointers, zero structs, empty inputs): each returns an
// error or an empty answer, never a panic, and an error a Go caller can
// tell from a bug in trainsonnet (IsValidation).
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	var zero generator.Generator
	var nilGen *generator.Generator
	usage := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, generator.IsValidation(err), "%v: a usage error", err)
	}
	cases := map[string]func(t *testing.T){
		"Render(ctx, nil)": func(t *testing.T) { _, err := g.Render(ctx, nil); usage(t, err) },
		//nolint:staticcheck // a nil context on purpose
		"Render(nil, params)":           func(t *testing.T) { _, err := g.Render(nil, generator.NewParams("openmpi")); usage(t, err) },
		"Render(ctx, &Params{})":        func(t *testing.T) { _, err := g.Render(ctx, &generator.Params{}); usage(t, err) },
		"Render of a zero typed struct": func(t *testing.T) { _, err := g.Render(ctx, typed.OpenMPI{}.Params()); assert.NoError(t, err) },
		"zero Generator": func(t *testing.T) {
			for _, gen := range []*generator.Generator{&zero, nilGen} {
				_, err := gen.Render(ctx, generator.NewParams("openmpi"))
				usage(t, err)
				_, err = gen.Lookup("openmpi")
				usage(t, err)
				_, err = gen.Prototypes()
				usage(t, err)
				assert.Empty(t, gen.Names())
				_, err = gen.RenderAll(ctx, []generator.Job{{Name: "a", Params: generator.NewParams("openmpi")}})
				usage(t, err)
			}
		},
		"RenderAll(ctx, nil)": func(t *testing.T) {
			res, err := g.RenderAll(ctx, nil)
			assert.NoError(t, err)
			assert.Empty(t, res)
		},
		"RenderAll of a job without params": func(t *testing.T) { _, err := g.RenderAll(ctx, []generator.Job{{}}); usage(t, err) },
		"RenderEach without a function": func(t *testing.T) {
			usage(t, g.RenderEach(ctx, []generator.Job{{Params: generator.NewParams("openmpi")}}, nil))
		},
		"nil *Params": func(t *testing.T) {
			var p *generator.Params
			assert.Nil(t, p.Set("workers", 2).SetText("gpu", "1", "").SetTexts("env", nil, "").AddFile("f", nil))
			assert.Empty(t, p.Prototype())
		},
		"zero Params": func(t *testing.T) {
			var p generator.Params
			p.Set("", nil).SetText("", "", "")
			_, err := g.Render(ctx, &p)
			usage(t, err)
		},
		"nil and zero Result": func(t *testing.T) {
			var r *generator.Result
			_, err := r.YAML()
			usage(t, err)
			_, err = r.JSON()
			usage(t, err)
			_, err = r.KustomizeBase()
			usage(t, err)
			var z generator.Result
			y, err := z.YAML()
			assert.NoError(t, err)
			assert.Empty(t, y)
			_, err = z.JSON()
			assert.NoError(t, err)
			files, err := z.KustomizeBase()
			assert.NoError(t, err)
			assert.Len(t, files, 1, "a kustomization of no resources")
		},
		"nil and zero Prototype": func(t *testing.T) {
			var p *generator.Prototype
			_, err := p.JSONSchema()
			usage(t, err)
			assert.Nil(t, p.Param("workers"))
			assert.Nil(t, p.Defaults())
			var z generator.Prototype
			_, err = z.JSONSchema()
			assert.NoError(t, err)
			assert.Nil(t, z.Param("workers"))
		},
		"nil and zero Object": func(t *testing.T) {
			var o *generator.Object
			assert.Empty(t, o.ID())
			assert.Nil(t, o.JSON())
			var z generator.Object
			assert.NotEmpty(t, z.ID())
			_ = z.JSON()
		},
		"JobParams of nothing": func(t *testing.T) { _, err := newGenerator(t).JobParams("", nil); usage(t, err) },
		"GeneratedResources of nothing": func(t *testing.T) {
			_, ok := generator.GeneratedResources(nil)
			assert.False(t, ok)
		},
		"nil errors": func(t *testing.T) {
			var v *generator.ValidationError
			var u *generator.UsageError
			var b *generator.BatchError
			assert.NotEmpty(t, v.Error())
			assert.NotEmpty(t, u.Error())
			assert.NoError(t, u.Unwrap())
			assert.NotEmpty(t, b.Error())
			assert.Empty(t, b.Unwrap())
			assert.False(t, generator.IsValidation(nil))
		},
		"New with a missing prototype path": func(t *testing.T) {
			_, err := generator.New(generator.Options{PrototypePaths: []string{""}})
			usage(t, err)
		},
	}
	for name, f := range cases {
		t.Run(name, f)
	}
}
