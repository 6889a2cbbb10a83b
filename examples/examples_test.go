// Package examples holds kustomize overlays over bases that trainsonnet
// generates; this test builds every one of them with krusty, in memory,
// against a freshly generated base, and pins what they build.
package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/golden"
	"github.com/trainsonnet/trainsonnet/internal/goldentest"
	"github.com/trainsonnet/trainsonnet/lib"
)

// TestOverlays builds every overlay: each folder <prototype>/<overlay>
// with a kustomization.yaml, beside a <prototype>/params.yaml for its base
// (golden.ExampleOverlays finds them; the e2e suite applies the same). It
// pins what each builds in its expected.yaml, where the runtime scripts of
// lib/assets are one marker line each (pinned in golden/assets.txt).
func TestOverlays(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	assets, err := goldentest.LoadAssets(lib.FS, "assets")
	require.NoError(t, err)
	protos, err := golden.ExampleOverlays(".")
	require.NoError(t, err)
	for proto, overlays := range protos {
		t.Run(proto, func(t *testing.T) {
			res := renderBase(t, g, proto)
			fs := filesys.MakeFsInMemory()
			files, err := res.KustomizeBase()
			require.NoError(t, err)
			for _, f := range files {
				require.NoError(t, fs.WriteFile(filepath.Join("/", proto, "base", f.Name), f.Data))
			}
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())

			// The base alone builds to exactly the objects of the YAML
			// stream, in the same order.
			base, err := k.Run(fs, "/"+proto+"/base")
			require.NoError(t, err)
			built, err := base.AsYaml()
			require.NoError(t, err)
			stream, err := res.YAML()
			require.NoError(t, err)
			assert.Equal(t, documents(t, stream), documents(t, built), "kustomize build of the base differs from gen's YAML")

			for _, overlay := range overlays {
				t.Run(overlay, func(t *testing.T) {
					copyDir(t, fs, filepath.Join(proto, overlay), "/"+proto+"/"+overlay)
					m, err := k.Run(fs, "/"+proto+"/"+overlay)
					require.NoError(t, err)
					out, err := m.AsYaml()
					require.NoError(t, err)
					assets.Assert(t, out, filepath.Join(proto, overlay, "expected.yaml"))
				})
			}
		})
	}
}

// renderBase renders <proto>/params.yaml as `trainsonnet gen <proto> -f` does.
func renderBase(t *testing.T, g *generator.Generator, proto string) *generator.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(proto, "params.yaml"))
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams(proto).AddFile("params.yaml", data))
	require.NoError(t, err)
	return res
}

// copyDir copies an overlay from the repository into the in-memory file
// system (its expected.yaml too, which kustomize ignores).
func copyDir(t *testing.T, fs filesys.FileSystem, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			copyDir(t, fs, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, fs.WriteFile(filepath.Join(to, e.Name()), data))
	}
}

// documents decodes a YAML stream into its objects, for comparing streams
// whose formatting differs.
func documents(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(string(stream), "\n---\n") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		out = append(out, m)
	}
	return out
}
