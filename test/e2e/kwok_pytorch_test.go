package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestKwokPyTorch: a pytorch job of 4 pods x 8 GPUs with a node selector,
// on 4 matching A100 nodes of 8 GPUs each, next to H100 nodes that do not
// match and a matching node with too few GPUs: each pod takes a whole
// node of the selector (8 GPUs), none runs elsewhere, and every pod runs
// torchrun with one process per GPU, 4 nodes, its completion index as its
// node rank and worker 0 as the rendezvous. The Job is one Indexed Job
// whose indexes are retried on their own and which ends with index 0.
func TestKwokPyTorch(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	ctx := t.Context()
	pool := kube.UniqueName("pt")
	node := func(name, product string, gpus int) poolNode {
		return poolNodeOf(pool, name, product, gpus, "train")
	}
	matching := []string{pool + "-a100-0", pool + "-a100-1", pool + "-a100-2", pool + "-a100-3"}
	createPool(t, k, pool, []poolNode{
		node("a100-0", a100, 8), node("a100-1", a100, 8), node("a100-2", a100, 8), node("a100-3", a100, 8),
		node("a100-small", a100, 4), // matches, but 4 GPUs < 8
		node("h100-0", h100, 8), node("h100-1", h100, 8),
	})
	ns := newNamespaces(t, k).create(t, "e2e-kwok-pytorch", kube.Baseline)

	const name, workers, gpus = "resnet", 4, 8
	tol := []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(ctx, typed.PyTorch{
		Common:       typed.Common{Name: name},
		Image:        "registry.invalid/trainsonnet/pytorch:e2e",
		Exec:         "/opt/resnet/train.py --epochs 90",
		Workers:      new(workers),
		GPU:          new(gpus),
		Batch:        typed.Batch{BackoffLimit: new(2)},
		NodeSelector: map[string]string{poolLabel: pool, roleLabel: "train", gpuLabel: a100},
		Tolerations:  tol,
	}.Params())
	require.NoError(t, err)
	manifests, err := res.YAML()
	require.NoError(t, err)
	require.NoError(t, strictDryRun(ctx, k, ns, manifests))
	require.NoError(t, k.Apply(ctx, ns, manifests))

	perNode := map[string]int{}
	for _, p := range waitRunning(t, k, ns, name, "worker", workers) {
		assert.Contains(t, matching, p.NodeName, "pod %s on an A100 node of its selector with 8 free GPUs", p.Name)
		assert.Equal(t, gpus, p.gpus, "pod %s: nvidia.com/gpu limit", p.Name)
		perNode[p.NodeName]++
	}
	for _, n := range matching {
		assert.Equal(t, 1, perNode[n], "pods on %s (8 GPUs, 8 each)", n)
	}

	// What the API server holds: the Job's per-index retries and end, and
	// torchrun's command line in every pod.
	out, err := k.Run(ctx, nil, "get", "job", name+"-worker", "--namespace", ns, "-o", "json")
	require.NoError(t, err)
	var job struct {
		Spec struct {
			BackoffLimitPerIndex *int `json:"backoffLimitPerIndex"`
			MaxFailedIndexes     *int `json:"maxFailedIndexes"`
			CompletionMode       string
			SuccessPolicy        struct {
				Rules []struct{ SucceededIndexes string }
			}
			Template struct {
				Spec struct {
					Containers []struct{ Command []string }
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(out, &job))
	require.NotNil(t, job.Spec.BackoffLimitPerIndex)
	assert.Equal(t, 2, *job.Spec.BackoffLimitPerIndex, "each index is retried twice")
	require.NotNil(t, job.Spec.MaxFailedIndexes)
	assert.Zero(t, *job.Spec.MaxFailedIndexes, "an index that fails for good fails the job")
	assert.Equal(t, "Indexed", job.Spec.CompletionMode)
	require.Len(t, job.Spec.SuccessPolicy.Rules, 1)
	assert.Equal(t, "0", job.Spec.SuccessPolicy.Rules[0].SucceededIndexes, "the job ends with index 0")
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	cmd := strings.Join(job.Spec.Template.Spec.Containers[0].Command, " ")
	for _, want := range []string{"--nnodes=4 ", "--nproc_per_node=8 ", `--node_rank="$JOB_COMPLETION_INDEX"`, "--master_addr=resnet-worker-0.resnet ", "--master_port=29500 "} {
		assert.Contains(t, cmd, want, "torchrun's command line")
	}
	t.Logf("4 pods x 8 GPUs on %v", perNode)
}
