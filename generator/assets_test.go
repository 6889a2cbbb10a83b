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
// every output form exactly, whatever its shape, wherever it is used.
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
		cm, pod := objs[0], objs[1]
		for _, name := range []string{"plain.sh", "tabs.txt", "notrail.txt", "lead.txt", "blanks.txt"} {
			assert.Equal(t, file(name), cm["data"].(map[string]any)[name], name)
		}
		hostfile := "h-0 slots=1\nh-1 slots=1\nh-2 slots=1\n"
		assert.Equal(t, hostfile, cm["data"].(map[string]any)["hostfile"])
		for _, name := range []string{"plain.sh", "tabs.txt"} {
			assert.Equal(t, strconv.Itoa(len(file(name))), cm["metadata"].(map[string]any)["annotations"].(map[string]any)[name+"-bytes"], "assetBytes of %s", name)
		}
		c := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		assert.Equal(t, []any{file("plain.sh"), "prefix " + file("notrail.txt"), hostfile + "tail"}, c["args"])
		assert.Equal(t, file("lead.txt"), c["env"].([]any)[0].(map[string]any)["value"])
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
	t.Run("a missing file", func(t *testing.T) {
		_, err := g.Render(context.Background(), generator.NewParams("assetmissing"))
		require.Error(t, err)
		assert.False(t, generator.IsValidation(err), "a prototype bug, not the user's")
		assert.Contains(t, err.Error(), `asset "assets/none.sh"`)
	})
}
