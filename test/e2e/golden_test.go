package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/trainsonnet/trainsonnet/golden"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

var (
	goldenDir   = filepath.Join(repoRoot, "golden")
	examplesDir = filepath.Join(repoRoot, "examples")
)

// Every golden case runs at the Pod Security level its cases.yaml gives
// (podSecurity, per prototype and per case: the strictest one the case's
// pods pass), and the examples of a prototype at the prototype's level
// (golden.PodSecurity). The suite checks the level three ways:
// podSecurityLevel derives the same level from the rendered pod specs, the
// API server admits the case in a namespace enforcing it, and a namespace of
// the next stricter level refuses it. A case without a level runs at the
// level podSecurityLevel derives, which the server then checks.

// caseEnv is what the golden cases share: the cluster, their namespaces,
// and one namespace per level for the stricter-level checks.
type caseEnv struct {
	k     *kube.Kubectl
	nss   *namespaces
	probe map[kube.PodSecurityLevel]string
}

// TestGoldenCases applies every golden case (golden.Renders, golden.Bases)
// and every example overlay to the API server, each in a namespace of its
// own, in parallel.
func TestGoldenCases(t *testing.T) {
	k := kube.E2E(t)
	t.Parallel()
	nss := newNamespaces(t, k)
	env := &caseEnv{k: k, nss: nss, probe: map[kube.PodSecurityLevel]string{
		kube.Baseline:   nss.create(t, "e2e-probe-baseline", kube.Baseline),
		kube.Restricted: nss.create(t, "e2e-probe-restricted", kube.Restricted),
	}}

	for _, proto := range sortedKeys(golden.Renders) {
		for _, c := range golden.Renders[proto] {
			t.Run("renders/"+proto+"/"+c.Name, func(t *testing.T) {
				skipNotApplied(t, c)
				t.Parallel()
				env.check(t, proto+"/"+c.Name, kube.PodSecurityLevel(c.PodSecurity), func(t testing.TB, ns string) []byte {
					args := genArgs(c.Args, goldenDir, ns)
					code, stdout, stderr := runCLI(args)
					require.Equalf(t, 0, code, "trainsonnet %s: exit code %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
					return stdout
				})
			})
		}
	}
	for _, proto := range sortedKeys(golden.Bases) {
		for _, c := range golden.Bases[proto] {
			t.Run("bases/"+proto+"/"+c.Name, func(t *testing.T) {
				skipNotApplied(t, c)
				t.Parallel()
				env.check(t, proto+"/"+c.Name, kube.PodSecurityLevel(c.PodSecurity), func(t testing.TB, ns string) []byte {
					dir := filepath.Join(t.TempDir(), "base")
					args := append(genArgs(c.Args, goldenDir, ns), "--output-dir", dir)
					code, stdout, stderr := runCLI(args)
					require.Equalf(t, 0, code, "trainsonnet %s: exit code %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
					require.Empty(t, stdout, "--output-dir must keep stdout empty")
					return kustomizeBuild(t, filesys.MakeFsOnDisk(), dir)
				})
			})
		}
	}
	overlays, err := golden.ExampleOverlays(examplesDir)
	require.NoError(t, err)
	for _, proto := range sortedKeys(overlays) {
		for _, overlay := range overlays[proto] {
			t.Run("examples/"+proto+"/"+overlay, func(t *testing.T) {
				t.Parallel()
				env.check(t, proto+"/examples/"+overlay, kube.PodSecurityLevel(golden.PodSecurity(proto)), func(t testing.TB, ns string) []byte {
					return buildOverlay(t, proto, overlay, ns)
				})
			})
		}
	}
}

// skipNotApplied skips a case whose cases.yaml says why it is not applied.
func skipNotApplied(t *testing.T, c golden.Case) {
	if c.NotApplied != "" {
		t.Skipf("golden/%s/cases.yaml: not applied: %s", c.Dir, c.NotApplied)
	}
}

// check runs one case: render(t, ns) renders it for namespace ns ("" for
// no namespace), and want is its Pod Security level ("" to take the one its
// pod specs give). The case gets a namespace of its own at its Pod Security
// level; there it is (a) dry-run applied server-side with strict field
// validation, server warnings being errors, (b) applied, (c) re-applied,
// which must change nothing, and (d) its namespace is deleted (the test
// waits for that at its end). The next stricter level must refuse it.
func (env *caseEnv) check(t testing.TB, key string, want kube.PodSecurityLevel, render func(t testing.TB, ns string) []byte) {
	t.Helper()
	k, ctx := env.k, t.Context()

	objs, err := decodeObjects(render(t, ""))
	require.NoError(t, err)
	require.NotEmpty(t, objs, "%s renders no objects", key)
	level, why := podSecurityLevel(objs)
	if want != "" {
		require.Equalf(t, want, level, "%s: expected Pod Security level %s, but its pod specs give %s (not baseline: %s; not restricted: %s)",
			key, want, level, levelReasons(why, kube.Baseline), levelReasons(why, kube.Restricted))
	} else {
		t.Logf("%s: no podSecurity in its cases.yaml; using %s from its pod specs", key, level)
	}
	if s := stricter(level); s != "" {
		t.Logf("%s: Pod Security %s (not %s: %s)", key, level, s, levelReasons(why, s))
	} else {
		t.Logf("%s: Pod Security %s", key, level)
	}

	sets := jobSetsOf(objs)
	if len(sets) > 0 {
		kube.JobSet(t)
	}
	ns := env.nss.create(t, "e2e-"+strings.ReplaceAll(key, "/", "-"), level)
	if len(sets) > 0 {
		k.JobSetNamespace(t, ns)
	}
	manifests := render(t, ns)
	require.NoErrorf(t, strictDryRun(ctx, k, ns, manifests), "%s: dry run in namespace %s (Pod Security %s)", key, ns, level)
	require.NoErrorf(t, k.Apply(ctx, ns, manifests), "%s: apply in namespace %s", key, ns)
	live, err := k.Live(ctx, ns, manifests)
	require.NoError(t, err)
	assert.Lenf(t, live, len(objs), "%s: objects in namespace %s after apply", key, ns)
	require.NoErrorf(t, k.ReapplyUnchanged(ctx, ns, manifests), "%s: re-apply in namespace %s", key, ns)
	for _, set := range sets {
		checkJobSetMade(t, k, ns, set)
	}

	// The level is the strictest one: the next stricter level refuses it
	// (a JobSet's pods as its Jobs': Pod Security reads no JobSet).
	if s := stricter(level); s != "" {
		pns := env.probe[s]
		probe := render(t, pns)
		if len(sets) > 0 {
			probe = jobSetJobs(t, probe)
		}
		err := strictDryRun(ctx, k, pns, probe)
		require.Errorf(t, err, "%s: passes Pod Security %s too; run it at that level (podSecurity in its cases.yaml)", key, s)
		require.ErrorContainsf(t, err, `would violate PodSecurity "`+string(s)+`:latest"`,
			"%s: refused in a %s namespace for a reason other than Pod Security", key, s)
	}
	require.NoError(t, env.nss.startDelete(ns))
}

// kustomizeBuild builds the kustomization in dir with krusty, as `kustomize
// build` (and kubectl apply -k) would.
func kustomizeBuild(t testing.TB, fs filesys.FileSystem, dir string) []byte {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	// The kustomizations here all set sortOptions; "unspecified" lets them
	// (krusty warns on stderr when both are set).
	opts.Reorder = krusty.ReorderOptionUnspecified
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	require.NoErrorf(t, err, "kustomize build %s", dir)
	out, err := m.AsYaml()
	require.NoError(t, err)
	return out
}

// buildOverlay builds examples/<proto>/<overlay> with krusty against a base
// freshly generated from examples/<proto>/params.yaml, the way the README
// says (`trainsonnet gen <proto> -f params.yaml --output-dir base`), in a
// temporary copy of examples/<proto>.
//
// The overlays hard-code their namespaces (ml-prod, ml-dev). Rather than
// create namespaces of those names, which concurrent runs would share and
// which an existing cluster may really use, a wrapper kustomization sets
// the test's namespace on top of the unchanged overlay:
//
//	resources: [../<overlay>]
//	namespace: <test namespace>
//	sortOptions: {order: fifo}   # keep the overlay's order
//
// and the test checks that the wrapper changes nothing but
// metadata.namespace. With ns empty, the overlay's own build is returned.
func buildOverlay(t testing.TB, proto, overlay, ns string) []byte {
	t.Helper()
	root := filepath.Join(t.TempDir(), proto)
	copyTree(t, filepath.Join(examplesDir, proto), root)
	args := []string{"gen", proto, "-f", filepath.Join(root, "params.yaml"), "--output-dir", filepath.Join(root, "base")}
	code, stdout, stderr := runCLI(args)
	require.Equalf(t, 0, code, "trainsonnet %s: exit code %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
	require.Empty(t, stdout)
	fs := filesys.MakeFsOnDisk()
	plain := kustomizeBuild(t, fs, filepath.Join(root, overlay))
	if ns == "" {
		return plain
	}
	wrapper := filepath.Join(root, "e2e-namespace-"+overlay)
	require.NoError(t, os.MkdirAll(wrapper, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(wrapper, "kustomization.yaml"), []byte(
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../"+overlay+"\nnamespace: "+ns+
			"\nsortOptions:\n  order: fifo\n"), 0o644))
	wrapped := kustomizeBuild(t, fs, wrapper)
	a, err := decodeObjects(plain)
	require.NoError(t, err)
	b, err := decodeObjects(wrapped)
	require.NoError(t, err)
	require.Equal(t, withoutNamespaces(a), withoutNamespaces(b),
		"the namespace wrapper around %s/%s must change nothing but metadata.namespace", proto, overlay)
	for _, o := range b {
		require.Equal(t, ns, nested(o, "metadata", "namespace"), "%v %v", o["kind"], nested(o, "metadata", "name"))
	}
	return wrapped
}

// withoutNamespaces returns the objects without metadata.namespace.
func withoutNamespaces(objs []map[string]any) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		c := make(map[string]any, len(o))
		for k, v := range o {
			c[k] = v
		}
		if md := asMap(o["metadata"]); md != nil {
			m := make(map[string]any, len(md))
			for k, v := range md {
				if k != "namespace" {
					m[k] = v
				}
			}
			c["metadata"] = m
		}
		out[i] = c
	}
	return out
}

// copyTree copies a directory tree, leaving out a generated base/.
func copyTree(t testing.TB, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "base" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	}))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
