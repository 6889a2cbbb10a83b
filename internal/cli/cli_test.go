package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
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

// base writes a base of openmpi into dir and returns its file names.
func base(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	code, _, stderr := run(append([]string{"gen", "openmpi", "--output-dir", dir}, args...)...)
	require.Equal(t, 0, code, stderr)
	return names(t, dir)
}

// refused checks that gen refused --output-dir dir with one line
// containing want, exit code 2, and left the directory tree under root
// exactly as it was.
func refused(t *testing.T, root, dir, want string) {
	t.Helper()
	before := tree(t, root)
	code, stdout, stderr := run("gen", "openmpi", "--name", "b", "--output-dir", dir)
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, want)
	assert.True(t, strings.HasPrefix(stderr, "error: --output-dir "), "refused before rendering: %s", stderr)
	assert.Equal(t, 1, strings.Count(stderr, "error:"), "one line: %s", stderr)
	assert.Equal(t, before, tree(t, root), "nothing may change")
}

func TestOutputDirKeepsTheUsersFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "base")
	base(t, dir, "--name", "a")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "my-patch.yaml"), []byte("mine"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	refused(t, root, dir, "--output-dir "+dir+": holds my-patch.yaml, notes.txt, which trainsonnet did not write; refusing to replace the base (move them to an overlay, or delete them, and run again)")

	// A subdirectory is the user's too.
	require.NoError(t, os.Remove(filepath.Join(dir, "notes.txt")))
	require.NoError(t, os.Remove(filepath.Join(dir, "my-patch.yaml")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "patches"), 0o755))
	refused(t, root, dir, "holds patches/, which trainsonnet did not write")
	require.NoError(t, os.Remove(filepath.Join(dir, "patches")))

	// A kustomization edited by hand (here: listing the user's patch as a
	// resource, which would otherwise pass for a file trainsonnet wrote).
	k := filepath.Join(dir, generator.KustomizationFile)
	data, err := os.ReadFile(k)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(k, append(data, []byte("- my-patch.yaml\n")...), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "my-patch.yaml"), []byte("mine"), 0o644))
	refused(t, root, dir, "kustomization.yaml was edited since trainsonnet wrote it and regenerating would lose the edit")
}

func TestOutputDirReplacesStaleObjects(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "base")
	// A generated key pair makes one object more than --ssh-secret.
	assert.Contains(t, base(t, dir, "--name", "a"), "secret_a-ssh.yaml")
	require.NoError(t, os.Chmod(dir, 0o750))
	assert.NotContains(t, base(t, dir, "--name", "a", "--ssh-secret", "s"), "secret_a-ssh.yaml")
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm(), "the directory keeps its mode")
	// An object file of the previous base the user deleted is no problem.
	require.NoError(t, os.Remove(filepath.Join(dir, "service_a.yaml")))
	assert.Contains(t, base(t, dir, "--name", "a", "--ssh-secret", "s"), "service_a.yaml")
	assertNoLeftovers(t, root)
}

func TestOutputDirFollowsASymlink(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "bases", "v1")
	link := filepath.Join(root, "base")
	require.NoError(t, os.MkdirAll(target, 0o755))
	require.NoError(t, os.Symlink("bases/v1", link))

	// An empty target, then a base in it: written through the link.
	base(t, link, "--name", "a")
	base(t, link, "--name", "b", "--ssh-secret", "s")
	to, err := os.Readlink(link)
	require.NoError(t, err, "the link must stay a link")
	assert.Equal(t, "bases/v1", to)
	assert.Contains(t, names(t, target), "job_b-worker.yaml")
	assert.NotContains(t, names(t, target), "job_a-worker.yaml")
	assertNoLeftovers(t, filepath.Join(root, "bases"))

	// A link to a directory of other files is refused like the directory.
	other := filepath.Join(root, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	require.NoError(t, os.Symlink("other", filepath.Join(root, "to-other")))
	refused(t, root, filepath.Join(root, "to-other"), "(a symlink to "+other+"): is not empty and not a base trainsonnet wrote")

	// A link to a file.
	require.NoError(t, os.Symlink("other/notes.txt", filepath.Join(root, "to-file")))
	refused(t, root, filepath.Join(root, "to-file"), "exists and is not a directory")

	// A dangling link: not replaced by a directory, nor its target made.
	dangling := filepath.Join(root, "dangling")
	require.NoError(t, os.Symlink("nowhere/base", dangling))
	refused(t, root, dangling, "--output-dir "+dangling+": is a symlink to nowhere/base, which does not exist; create that directory or point --output-dir elsewhere")
}

func TestOutputDirRefusesASymlinkInTheBase(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "base")
	base(t, dir, "--name", "a")
	// service_a.yaml is the user's link now, to a file of theirs.
	mine := filepath.Join(root, "service.yaml")
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "service_a.yaml")))
	require.NoError(t, os.Symlink(mine, filepath.Join(dir, "service_a.yaml")))
	refused(t, root, dir, "service_a.yaml is a symlink where trainsonnet wrote a file; refusing to replace the base")
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
		if alts, ok := s["oneOf"].([]any); ok {
			// a params file, or a whole object of the replaced system
			// (and a TrainJob's runtime, of either kind, beside it)
			want := 1 + len(p.From)
			if slices.Contains(p.From, "trainer.kubeflow.org/v1alpha1/TrainJob") {
				want += 2
			}
			require.Len(t, alts, want, "%s: schema alternatives", p.Name)
			s = alts[0].(map[string]any)
		}
		for _, prm := range param.Leaves(p.Params) {
			for _, n := range flagNames(prm) {
				assert.NotNil(t, fs.Lookup(n), "%s: no flag --%s", p.Name, n)
			}
			assert.Contains(t, text.String(), "--"+flagName(prm)+" ", "%s: describe misses %s", p.Name, prm.Path)
			assert.Regexp(t, `^[a-z0-9]+(-[a-z0-9]+)*$`, flagName(prm), "%s: the flag of %s is not kebab-case", p.Name, prm.Path)
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
func allParams(ps []*param.Param) []*param.Param {
	var out []*param.Param
	for _, p := range ps {
		out = append(out, p)
		if p.Type == param.TypeGroup {
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

// tree returns every path under root with its content, or its link target
// for a symlink, or "dir".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			to, err := os.Readlink(p)
			require.NoError(t, err)
			out[p] = "-> " + to
		case d.IsDir():
			st, err := d.Info()
			require.NoError(t, err)
			out[p] = "dir " + st.Mode().String()
		default:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[p] = string(b)
		}
		return nil
	}))
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

// TestWriteDirChecksAgain checks that writeDir itself refuses what gen's
// early check refuses: the directory may change while gen renders.
func TestWriteDirChecksAgain(t *testing.T) {
	root := t.TempDir()
	files := []generator.File{{Name: generator.KustomizationFile, Data: []byte("x")}}
	dir := filepath.Join(root, "base")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte("mine"), 0o644))
	dangling := filepath.Join(root, "dangling")
	require.NoError(t, os.Symlink("nowhere", dangling))
	before := tree(t, root)
	for _, d := range []string{dir, dangling} {
		err := writeDir(d, files)
		var ue *usageError
		assert.ErrorAs(t, err, &ue, d)
	}
	assert.Equal(t, before, tree(t, root))
}

// TestNamespaceShorthand: -n, which gen --help shows, works for every
// prototype, a user's own (-J) included, exactly as --namespace.
func TestNamespaceShorthand(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	protos := [][]string{{"-J", "../../examples/own-prototype", "gen", "pytorch-ddp"}}
	for _, n := range g.Names() {
		protos = append(protos, []string{"gen", n})
	}
	for _, gen := range protos {
		t.Run(gen[len(gen)-1], func(t *testing.T) {
			code, short, stderr := run(append(gen, "--name", "x", "-n", "ml", "-o", "json")...)
			require.Equal(t, 0, code, stderr)
			code, long, stderr := run(append(gen, "--name", "x", "--namespace", "ml", "-o", "json")...)
			require.Equal(t, 0, code, stderr)
			var a, b struct {
				Items []struct {
					Metadata struct{ Namespace string } `json:"metadata"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal([]byte(short), &a))
			require.NoError(t, json.Unmarshal([]byte(long), &b))
			require.NotEmpty(t, a.Items)
			for _, it := range a.Items {
				assert.Equal(t, "ml", it.Metadata.Namespace)
			}
			assert.Equal(t, len(b.Items), len(a.Items))
		})
	}
}
