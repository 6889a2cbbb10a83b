package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestKwokTFDistributed: a tf-distributed job of 2 parameter servers on a
// CPU pool and 8 workers x 2 GPUs on a GPU pool, through the roles' node
// selectors: the parameter servers run on the CPU nodes only, the workers
// on the 2 matching GPU nodes only (4 each, 8 GPUs each), not on a GPU node
// of another product, and no task on a node of the other role (the chart
// hard-wired jobrole=ps and jobrole=worker node labels for this).
func TestKwokTFDistributed(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	ctx := t.Context()
	pool := kube.UniqueName("tf")
	node := func(name, product string, gpus int, role string) poolNode {
		return poolNodeOf(pool, name, product, gpus, role)
	}
	gpuNodes := []string{pool + "-a100-0", pool + "-a100-1"}
	cpuNodes := []string{pool + "-cpu-0", pool + "-cpu-1"}
	createPool(t, k, pool, []poolNode{
		node("a100-0", a100, 8, "train"), node("a100-1", a100, 8, "train"),
		node("h100-0", h100, 8, "train"),
		node("cpu-0", "", 0, "ps"), node("cpu-1", "", 0, "ps"),
	})
	ns := newNamespaces(t, k).create(t, "e2e-kwok-tf", kube.Restricted)

	const name, workers, gpus = "cars", 8, 2
	tol := []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(ctx, generator.NewParams("tf-distributed").
		Set("name", name).
		Set("exec", "python /app/train.py").
		Set("ps.number", 2).
		Set("ps.nodeSelector", map[string]string{poolLabel: pool, roleLabel: "ps"}).
		Set("ps.tolerations", tol).
		Set("worker.number", workers).
		Set("gpu", gpus).
		Set("nodeSelector", map[string]string{poolLabel: pool, roleLabel: "train", gpuLabel: a100}).
		Set("tolerations", tol))
	require.NoError(t, err)
	manifests, err := res.YAML()
	require.NoError(t, err)
	require.NoError(t, strictDryRun(ctx, k, ns, manifests))
	require.NoError(t, k.Apply(ctx, ns, manifests))

	running := func(role string, want int) []podPlacement { return waitRunning(t, k, ns, name, role, want) }
	perNode := map[string]int{}
	for _, p := range running("worker", workers) {
		assert.Contains(t, gpuNodes, p.NodeName, "worker %s on a node of its selector (A100, train)", p.Name)
		assert.Equal(t, gpus, p.gpus, "worker %s: nvidia.com/gpu limit", p.Name)
		perNode[p.NodeName] += p.gpus
	}
	for _, n := range gpuNodes {
		assert.Equal(t, 8, perNode[n], "GPUs used on %s", n)
	}
	for _, p := range running("ps", 2) {
		assert.Contains(t, cpuNodes, p.NodeName, "parameter server %s on a CPU node of its selector", p.Name)
		assert.Zero(t, p.gpus, "parameter server %s has no GPU", p.Name)
	}
	t.Logf("workers: %v GPUs per node", perNode)
}
