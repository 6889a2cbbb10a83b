package generator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
)

// TestAssetsComeOutVerbatim checks that a file given with ts.asset reaches
// every output form exactly, whatever its shape, under any data key.
func TestAssetsComeOutVerbatim(t *testing.T) {
	dir := "testdata/assetproto"
	g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams("assetcheck"))
	require.NoError(t, err)
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, "assets", name))
		require.NoError(t, err)
		return string(b)
	}
	check := func(t *testing.T, objs []map[string]any) {
		require.Len(t, objs, 2)
		cm, again := objs[0], objs[1]
		for _, name := range []string{"plain.sh", "tabs.txt", "notrail.txt", "lead.txt", "blanks.txt"} {
			assert.Equal(t, file(name), cm["data"].(map[string]any)[name], name)
		}
		hostfile := "h-0 slots=1\nh-1 slots=1\nh-2 slots=1\n"
		assert.Equal(t, hostfile, cm["data"].(map[string]any)["hostfile"])
		for _, name := range []string{"plain.sh", "tabs.txt"} {
			assert.Equal(t, strconv.Itoa(len(file(name))), cm["metadata"].(map[string]any)["annotations"].(map[string]any)[name+"-bytes"], "assetBytes of %s", name)
		}
		assert.Equal(t, map[string]any{"true": file("plain.sh"), "1e3": hostfile}, again["data"])
	}

	t.Run("yaml", func(t *testing.T) {
		y, err := res.YAML()
		require.NoError(t, err)
		assert.NotContains(t, string(y), "trainsonnet.ref")
		var objs []map[string]any
		for _, doc := range strings.Split(string(y), "\n---\n") {
			var m map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
			objs = append(objs, m)
		}
		check(t, objs)
		assert.Contains(t, string(y), "  plain.sh: |\n    #!/bin/sh\n", "a literal block, indented under its key")
	})
	t.Run("json", func(t *testing.T) {
		j, err := res.JSON()
		require.NoError(t, err)
		var list struct{ Items []map[string]any }
		require.NoError(t, json.Unmarshal(j, &list))
		check(t, list.Items)
	})
	t.Run("kustomize base", func(t *testing.T) {
		files, err := res.KustomizeBase()
		require.NoError(t, err)
		var objs []map[string]any
		for _, f := range files[1:] {
			var m map[string]any
			require.NoError(t, yaml.Unmarshal(f.Data, &m))
			objs = append(objs, m)
		}
		check(t, objs)
	})
	for _, c := range []struct{ name, set, want string }{
		{"outside a ConfigMap's data", "", "Pod assetmisplaced: spec holds a large string (ts.asset, ts.indexedLines, ts.indexedList), which may only be a whole value of a ConfigMap's data"},
		{"joined to other text", "true", "ConfigMap assetmisplaced: data.run.sh joins a large string (ts.asset, ts.indexedLines, ts.indexedList) to other text: it may only be a whole value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := generator.NewParams("assetmisplaced")
			if c.set != "" {
				params = params.Set("joined", true)
			}
			_, err := g.Render(context.Background(), params)
			require.Error(t, err)
			assert.False(t, generator.IsValidation(err), "a prototype bug, not the user's")
			assert.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("a missing file", func(t *testing.T) {
		_, err := g.Render(context.Background(), generator.NewParams("assetmissing"))
		require.Error(t, err)
		assert.False(t, generator.IsValidation(err), "a prototype bug, not the user's")
		assert.Contains(t, err.Error(), `asset "assets/none.sh"`)
	})
}
