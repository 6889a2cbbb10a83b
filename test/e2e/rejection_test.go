package e2e

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/golden"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestRejectionsReachTheOutput makes sure that a manifest the API server
// rejects fails the test, with the server's own message in the test's
// output, on each path of the suite: a golden case (env.check), a direct
// strict dry run (the kwok jobs), and a sweep set (dryRun + summarize) in a
// batch with sets the server accepts. The failures are caught with a
// recording testing.TB, so this test passes when they are reported right.
func TestRejectionsReachTheOutput(t *testing.T) {
	k := kube.E2E(t)
	t.Parallel()
	nss := newNamespaces(t, k)
	restricted := nss.create(t, "e2e-reject-restricted", kube.Restricted)
	env := &caseEnv{k: k, nss: nss, probe: map[kube.PodSecurityLevel]string{
		kube.Baseline:   nss.create(t, "e2e-reject-baseline", kube.Baseline),
		kube.Restricted: restricted,
	}}
	render := func(t testing.TB, args []string, ns string) []byte {
		code, stdout, stderr := runCLI(genArgs(args, "", ns))
		require.Equal(t, 0, code, "%s", stderr)
		return stdout
	}

	t.Run("golden case: invalid value", func(t *testing.T) {
		t.Parallel()
		failed, out := captureFailure(t, func(tb testing.TB) {
			env.check(tb, "openmpi/e2e-rejected-value", kube.PodSecurityLevel(golden.PodSecurity("openmpi")), func(tb testing.TB, ns string) []byte {
				y := render(tb, []string{"gen", "openmpi", "--name", "rejected", "--ssh-secret", "s"}, ns)
				return bytes.Replace(y, []byte("restartPolicy: Never"), []byte("restartPolicy: Sometimes"), 1)
			})
		})
		assert.True(t, failed, "the case must fail")
		assert.Contains(t, out, `spec.template.spec.restartPolicy: Unsupported value: "Sometimes"`)
		t.Logf("the failed case printed:\n%s", out)
	})

	t.Run("golden case: unknown field", func(t *testing.T) {
		t.Parallel()
		failed, out := captureFailure(t, func(tb testing.TB) {
			env.check(tb, "openmpi/e2e-rejected-field", kube.PodSecurityLevel(golden.PodSecurity("openmpi")), func(tb testing.TB, ns string) []byte {
				y := render(tb, []string{"gen", "openmpi", "--name", "typo", "--ssh-secret", "s"}, ns)
				return bytes.Replace(y, []byte("restartPolicy: Never"), []byte("restartPolicy: Never\n      restartPolicyy: Never"), 1)
			})
		})
		assert.True(t, failed, "the case must fail")
		assert.Contains(t, out, "field not declared in schema")
		assert.Contains(t, out, "restartPolicyy")
	})

	t.Run("dry run: Pod Security", func(t *testing.T) {
		t.Parallel()
		// Root pods in a restricted namespace: Pod Security only warns about a
		// Job's pod template; the suite's dry runs make that a failure.
		failed, out := captureFailure(t, func(tb testing.TB) {
			y := render(tb, []string{"gen", "openmpi", "--name", "root", "--ssh-secret", "s"}, restricted)
			require.NoError(tb, strictDryRun(tb.Context(), k, restricted, y))
		})
		assert.True(t, failed)
		assert.Contains(t, out, `would violate PodSecurity "restricted:latest"`)
	})

	t.Run("sweep", func(t *testing.T) {
		t.Parallel()
		g, err := generator.New(generator.Options{})
		require.NoError(t, err)
		pr, err := g.Lookup("openmpi")
		require.NoError(t, err)
		sw := &sweep{what: "sweep", k: k, g: g, pr: pr, seed: 42, ns: map[kube.PodSecurityLevel]string{kube.Restricted: restricted}}
		ctx := t.Context()
		// Values as drawn: the flag text, and the params file's value.
		value := func(p *param.Param, text string) any {
			if p.Type == param.TypeInt {
				n, err := strconv.ParseInt(text, 10, 64)
				require.NoError(t, err)
				return n
			}
			return text
		}
		set := func(index int, texts map[string]string) *sweepSet {
			s := &sweepSet{index: index, proto: "openmpi", seed: 42, sweepN: 4}
			for _, p := range param.Leaves(pr.Params) {
				if text, ok := texts[p.Path]; ok {
					s.values = append(s.values, drawnValue{param: p, text: text, value: value(p, text)})
				}
			}
			sw.render(ctx, s)
			require.Empty(t, s.problems)
			require.Equal(t, kube.Restricted, s.level)
			return s
		}
		nonRoot := map[string]string{"runAsUser": "1000", "ssh.secret": "s"}
		with := func(m map[string]string, k, v string) map[string]string {
			c := map[string]string{k: v}
			for a, b := range m {
				c[a] = b
			}
			return c
		}
		good := set(0, with(nonRoot, "name", "good-0"))
		bad := set(1, with(nonRoot, "name", "bad-1"))
		bad.manifests = bytes.Replace(bad.manifests, []byte("restartPolicy: Never"), []byte("restartPolicy: Sometimes"), 1)
		// A set whose pods the namespace refuses: a warning, attributed to
		// the set by its place in kubectl's output.
		root := &sweepSet{index: 2, proto: "openmpi", seed: 42, sweepN: 4}
		for p, v := range map[string]string{"name": "root-2", "ssh.secret": "s"} {
			root.values = append(root.values, drawnValue{param: pr.Param(p), text: v, value: v})
		}
		sw.render(ctx, root) // baseline: no namespace of its own here, rendered without one
		require.Empty(t, root.problems)
		require.Equal(t, kube.Baseline, root.level)
		good2 := set(3, with(nonRoot, "name", "good-3"))

		sets := []*sweepSet{good, bad, root, good2}
		require.NoError(t, sw.dryRun(ctx, restricted, sets))
		assert.Empty(t, good.problems, "accepted set")
		assert.Empty(t, good2.problems, "accepted set")
		failed, out := captureFailure(t, func(tb testing.TB) { sw.summarize(tb, sets) })
		assert.True(t, failed)
		assert.Contains(t, out, `spec.template.spec.restartPolicy: Unsupported value: "Sometimes"`)
		assert.Contains(t, out, `would violate PodSecurity "restricted:latest"`)
		assert.Contains(t, out, "sweep openmpi set 1 (seed 42)")
		assert.Contains(t, out, "replay:\n  trainsonnet gen openmpi --name=bad-1 --runAsUser=1000 --ssh.secret=s")
		assert.Contains(t, out, "name: bad-1\n")
		assert.Contains(t, out, "sweep openmpi set 2 (seed 42)")
		assert.NotContains(t, out, "set 0 (seed")
		assert.NotContains(t, out, "set 3 (seed")
		t.Logf("the failed sweep printed:\n%s", out)
	})
}
