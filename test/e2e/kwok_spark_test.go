package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestKwokHorovodSpark: a horovod-spark job of 4 workers x 4 GPUs on a GPU
// pool, its master and driver on a CPU pool, through the roles' node
// selectors: the workers run on the 2 matching GPU nodes only (2 each, 8
// GPUs each), not on a GPU node of another product, and the master and the
// driver on the CPU nodes only, without GPUs.
func TestKwokHorovodSpark(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	ctx := t.Context()
	pool := kube.UniqueName("spark")
	node := func(name, product string, gpus int, role string) poolNode {
		return poolNodeOf(pool, name, product, gpus, role)
	}
	gpuNodes := []string{pool + "-a100-0", pool + "-a100-1"}
	cpuNodes := []string{pool + "-cpu-0"}
	createPool(t, k, pool, []poolNode{
		node("a100-0", a100, 8, "train"), node("a100-1", a100, 8, "train"),
		node("h100-0", h100, 8, "train"),
		node("cpu-0", "", 0, "spark"),
	})
	ns := newNamespaces(t, k).create(t, "e2e-kwok-spark", kube.Restricted)

	const name, workers, gpus = "mnist", 4, 4
	tol := []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	cpuPool := map[string]string{poolLabel: pool, roleLabel: "spark"}
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(ctx, generator.NewParams("horovod-spark").
		Set("name", name).
		Set("worker.number", workers).
		Set("worker.gpu", gpus).
		Set("taskCpus", 2).
		Set("worker.nodeSelector", map[string]string{poolLabel: pool, roleLabel: "train", gpuLabel: a100}).
		Set("worker.tolerations", tol).
		Set("master.nodeSelector", cpuPool).
		Set("master.tolerations", tol).
		Set("driver.nodeSelector", cpuPool).
		Set("driver.tolerations", tol))
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
	for _, role := range []string{"master", "driver"} {
		for _, p := range running(role, 1) {
			assert.Contains(t, cpuNodes, p.NodeName, "%s %s on the CPU node of its selector", role, p.Name)
			assert.Zero(t, p.gpus, "%s %s has no GPU", role, p.Name)
		}
	}
	t.Logf("workers: %v GPUs per node", perNode)
}
