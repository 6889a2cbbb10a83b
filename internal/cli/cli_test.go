package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // the module's one -update flag
)

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestStdoutCarriesManifestsOnly(t *testing.T) {
	code, stdout, stderr := run("gen", "openmpi", "--workers", "2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning: the output holds a private ssh key")
	for _, doc := range strings.Split(stdout, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		assert.NotEmpty(t, obj["kind"])
	}
}

func TestOutputDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	code, stdout, stderr := run("gen", "openmpi", "--name", "a", "--output-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.ElementsMatch(t, []string{"kustomization.yaml", "networkpolicy_a.yaml", "secret_a-ssh.yaml",
		"configmap_a-config.yaml", "service_a.yaml", "service_a-launcher.yaml", "job_a-launcher.yaml", "job_a-worker.yaml"}, names(t, dir))

	// A base trainsonnet wrote is replaced as a whole: stale files go.
	code, _, stderr = run("gen", "openmpi", "--name", "b", "--ssh-secret", "s", "--output-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.ElementsMatch(t, []string{"kustomization.yaml", "networkpolicy_b.yaml",
		"configmap_b-config.yaml", "service_b.yaml", "service_b-launcher.yaml", "job_b-launcher.yaml", "job_b-worker.yaml"}, names(t, dir))

	// Invalid parameters: exit 2 and the previous base untouched.
	before := snapshot(t, dir)
	code, _, stderr = run("gen", "openmpi", "--name", "c", "--workers", "-1", "--output-dir", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--workers")
	assert.Equal(t, before, snapshot(t, dir))
	assertNoLeftovers(t, filepath.Dir(dir))
}

func TestOutputDirNeverReplacesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	code, _, stderr := run("gen", "openmpi", "--output-dir", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "is not empty and not a base trainsonnet wrote; refusing to replace it")
	assert.Equal(t, []string{"notes.txt"}, names(t, dir))
	assertNoLeftovers(t, filepath.Dir(dir))

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, stderr = run("gen", "openmpi", "--output-dir", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "exists and is not a directory")
}

func TestOutputDirIsNotCreatedOnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	code, _, _ := run("gen", "openmpi", "--memory", "lots", "--output-dir", dir)
	assert.Equal(t, 2, code)
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the directory must not exist")
	assertNoLeftovers(t, filepath.Dir(dir))
}

func TestOutputDirThatCannotBeCreatedLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	code, stdout, stderr := run("gen", "openmpi", "--output-dir", filepath.Join(blocker, "base"))
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "--output-dir")
	assert.Equal(t, []string{"file"}, names(t, parent))
}

// TestDeclarationsDriveEverything checks that no parameter is missing from
// the flags, describe or the schema: all three come from the declaration.
func TestDeclarationsDriveEverything(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"testdata/prototypes"}})
	require.NoError(t, err)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	for _, p := range protos {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		_, err := addParamFlags(fs, p)
		require.NoError(t, err)
		var text bytes.Buffer
		describe(&text, p)
		schema, err := p.JSONSchema()
		require.NoError(t, err)
		var s map[string]any
		require.NoError(t, json.Unmarshal(schema, &s))
		for _, prm := range generator.Leaves(p.Params) {
			for _, n := range prm.FlagNames() {
				assert.NotNil(t, fs.Lookup(n), "%s: no flag --%s", p.Name, n)
			}
			assert.Contains(t, text.String(), "--"+prm.Flag()+" ", "%s: describe misses %s", p.Name, prm.Path)
			node := s
			for _, part := range strings.Split(prm.Path, ".") {
				props, _ := node["properties"].(map[string]any)
				node, _ = props[part].(map[string]any)
				require.NotNil(t, node, "%s: schema misses %s", p.Name, prm.Path)
			}
			assert.True(t, strings.HasPrefix(node["description"].(string), prm.Doc), "%s: schema description of %s", p.Name, prm.Path)
		}
		// The keys of the replaced system that a params file may still
		// hold are in the schema, deprecated: renamed ones (at the top or
		// in a current group; master.image comes with master) and removed.
		old := map[string]bool{}
		for _, prm := range allParams(p.Params) {
			for _, o := range prm.OldPaths {
				old[o] = true
			}
		}
		for k := range p.Removed {
			old[k] = true
		}
		for k := range old {
			node, deprecated := s, false
			for _, part := range strings.Split(k, ".") {
				props, _ := node["properties"].(map[string]any)
				node, _ = props[part].(map[string]any)
				require.NotNil(t, node, "%s: schema misses the old key %s", p.Name, k)
				if node["deprecated"] == true {
					deprecated = true // the key, or the old group it is in
					break
				}
			}
			assert.True(t, deprecated, "%s: old key %s is not marked deprecated", p.Name, k)
		}
	}
}

// allParams is every parameter, groups included.
func allParams(ps []*generator.Param) []*generator.Param {
	var out []*generator.Param
	for _, p := range ps {
		out = append(out, p)
		if p.Type == generator.TypeGroup {
			out = append(out, allParams(p.Params)...)
		}
	}
	return out
}

func TestUserPrototype(t *testing.T) {
	code, stdout, stderr := run("gen", "hello", "-J", "testdata/prototypes", "--replicas", "3", "--greeting", "hi")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "replicas: 3")
	assert.Contains(t, stdout, "echo hi; sleep 3600")

	code, _, stderr = run("-J", "testdata/prototypes", "gen", "hello", "--replicas", "7")
	assert.Equal(t, 2, code)
	assert.Equal(t, "error: --replicas: invalid value \"7\": must not be 7 (an example of a rule of the prototype)\n", stderr)

	code, stdout, _ = run("list", "-J", "testdata/prototypes")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "hello")
	assert.Contains(t, stdout, "openmpi")

	code, stdout, _ = run("describe", "-J", "testdata/prototypes", "hello")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--replicas int\n")
}

func TestPrototypeBugExitsOne(t *testing.T) {
	code, stdout, stderr := run("gen", "broken", "-J", "testdata/prototypes")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `broken: ConfigMap broken: unknown field "dataa"`)
}

func TestCompletion(t *testing.T) {
	code, stdout, _ := run("__complete", "gen", "")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "openmpi\t")

	_, stdout, _ = run("__complete", "gen", "openmpi", "--wor")
	assert.Contains(t, stdout, "--workers\t")
	assert.Contains(t, stdout, "--node-selector\t")

	_, stdout, _ = run("__complete", "gen", "openmpi", "--image-pull-policy", "")
	assert.Contains(t, stdout, "IfNotPresent\n")

	_, stdout, _ = run("__complete", "describe", "")
	assert.Contains(t, stdout, "openmpi\n")

	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, _ := run("completion", shell)
		assert.Equal(t, 0, code, shell)
		assert.Contains(t, stdout, "trainsonnet", shell)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, stdout, _ := run("version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "trainsonnet "))

	code, stdout, _ = run("--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "gen")

	code, _, stderr := run("frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "frobnicate"`)
}

func TestBoolFlagWithSeparateValue(t *testing.T) {
	code, _, stderr := run("gen", "openmpi", "--network-policy", "false")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "write bool flags with =, as --network-policy=false")
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		out[n] = string(b)
	}
	return out
}

// assertNoLeftovers checks that no temporary directory was left beside the
// output directory.
func assertNoLeftovers(t *testing.T, parent string) {
	t.Helper()
	for _, n := range names(t, parent) {
		assert.False(t, strings.HasPrefix(n, "."), "leftover %s in %s", n, parent)
	}
}
