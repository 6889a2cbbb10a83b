package kube_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// bundle is a small hand-written stand-in for a generated MPI bundle.
const bundle = `apiVersion: v1
kind: ConfigMap
metadata:
  name: harness-hostfile
data:
  hostfile: |
    harness-worker-0.harness-worker slots=1
---
apiVersion: v1
kind: Service
metadata:
  name: harness-worker
spec:
  clusterIP: None
  selector:
    app: harness
  ports:
  - name: ssh
    port: 2222
---
apiVersion: batch/v1
kind: Job
metadata:
  name: harness-launcher
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app: harness
    spec:
      restartPolicy: Never
      containers:
      - name: launcher
        image: registry.invalid/trainsonnet/launcher:v1
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "cat /etc/mpi/hostfile"]
        resources:
          limits:
            cpu: 100m
            memory: 64Mi
        volumeMounts:
        - name: hostfile
          mountPath: /etc/mpi
      volumes:
      - name: hostfile
        configMap:
          name: harness-hostfile
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: harness-allow-peers
spec:
  podSelector:
    matchLabels:
      app: harness
  policyTypes: ["Ingress"]
  ingress:
  - from:
    - podSelector:
        matchLabels:
          app: harness
`

// unknownField has a typo'd field in a container.
const unknownField = `apiVersion: batch/v1
kind: Job
metadata:
  name: harness-typo
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: registry.invalid/x:v1
        resourcez:
          limits:
            cpu: 100m
`

// privilegedPod is forbidden by the baseline Pod Security level.
const privilegedPod = `apiVersion: v1
kind: Pod
metadata:
  name: harness-privileged
spec:
  containers:
  - name: c
    image: registry.invalid/x:v1
    securityContext:
      privileged: true
`

// TestHarness proves the harness against a real API server: strict
// server-side dry run, real apply, idempotent re-apply, and rejections
// carrying the server's message.
func TestHarness(t *testing.T) {
	k := kube.E2E(t)
	ns := k.Namespace(t, "harness", kube.Baseline)
	ctx := t.Context()

	t.Run("dry-run accepts the bundle and stores nothing", func(t *testing.T) {
		require.NoError(t, k.ApplyDryRun(ctx, ns, []byte(bundle)))
		live, err := k.Live(ctx, ns, []byte(bundle))
		require.NoError(t, err)
		assert.Empty(t, live, "a dry run must not create objects")
	})

	t.Run("dry-run rejects an unknown field with the server's message", func(t *testing.T) {
		err := k.ApplyDryRun(ctx, ns, []byte(unknownField))
		var kerr *kube.Error
		require.ErrorAs(t, err, &kerr)
		// Server-side apply reports unknown fields as an HTTP 500 while it
		// converts the patch to the schema; match the text, not the code.
		assert.Contains(t, kerr.Stderr, "field not declared in schema")
		assert.Contains(t, kerr.Stderr, "resourcez")
		t.Logf("server said: %s", strings.TrimSpace(kerr.Stderr))
	})

	t.Run("dry-run enforces the namespace's Pod Security level", func(t *testing.T) {
		err := k.ApplyDryRun(ctx, ns, []byte(privilegedPod))
		var kerr *kube.Error
		require.ErrorAs(t, err, &kerr)
		assert.Contains(t, kerr.Stderr, `violates PodSecurity "baseline:latest"`)
	})

	t.Run("apply creates every object", func(t *testing.T) {
		require.NoError(t, k.Apply(ctx, ns, []byte(bundle)))
		live, err := k.Live(ctx, ns, []byte(bundle))
		require.NoError(t, err)
		var kinds []string
		for _, o := range live {
			kinds = append(kinds, o.Kind+"/"+o.Metadata.Name)
		}
		assert.ElementsMatch(t, []string{
			"ConfigMap/harness-hostfile", "Service/harness-worker",
			"Job/harness-launcher", "NetworkPolicy/harness-allow-peers",
		}, kinds)
	})

	t.Run("re-apply changes nothing", func(t *testing.T) {
		require.NoError(t, k.ReapplyUnchanged(ctx, ns, []byte(bundle)))
	})

	t.Run("re-apply detects a change", func(t *testing.T) {
		changed := strings.Replace(bundle, "slots=1", "slots=2", 1)
		err := k.ReapplyUnchanged(ctx, ns, []byte(changed))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ConfigMap "+ns+"/harness-hostfile")
		assert.NotContains(t, err.Error(), "Job "+ns+"/harness-launcher")
	})
}

// TestKwokGPUScheduling checks that GPU limits and node selectors are
// enforced by the real scheduler on kwok's fake GPU nodes.
func TestKwokGPUScheduling(t *testing.T) {
	k := kube.E2E(t)
	if os.Getenv(kube.EnvE2EKwok) != "1" {
		t.Skipf("needs kwok: set %s=1 and start the cluster with WITH_KWOK=1", kube.EnvE2EKwok)
	}
	ctx := t.Context()

	// A label unique to this run keeps other tests' pods off these nodes'
	// selector and this test's pods off other tests' nodes.
	pool := kube.UniqueName("pool")
	const product = "nvidia.com/gpu.product"
	node := func(name, gpu string, gpus int) kube.FakeNode {
		labels := map[string]string{"trainsonnet.io/pool": pool}
		if gpu != "" {
			labels[product] = gpu
		}
		return kube.FakeNode{Name: pool + "-" + name, Labels: labels, GPUs: gpus}
	}
	nodes := []kube.FakeNode{
		node("a100-0", "NVIDIA-A100-SXM4-80GB", 4),
		node("a100-1", "NVIDIA-A100-SXM4-80GB", 4),
		node("h100-0", "NVIDIA-H100-80GB-HBM3", 8),
		node("cpu-0", "", 0),
	}
	k.FakeNodes(t, nodes...) // before Namespace: its cleanup must run last
	ns := k.Namespace(t, "gpu", kube.Baseline)

	// 4 workers x 2 GPUs fill both A100 nodes exactly; the H100 node has 8
	// free GPUs but does not match the selector. A StatefulSet, because kwok's
	// default stages complete pods owned by a Job (phase Succeeded), which
	// would free their GPUs again.
	workers := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: workers
spec:
  clusterIP: None
  selector:
    app: workers
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: workers
spec:
  serviceName: workers
  replicas: 4
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: workers
  template:
    metadata:
      labels:
        app: workers
    spec:
      nodeSelector:
        trainsonnet.io/pool: %[1]s
        %[2]s: NVIDIA-A100-SXM4-80GB
      containers:
      - name: worker
        image: registry.invalid/trainsonnet/worker:v1
        resources:
          limits:
            nvidia.com/gpu: 2
`, pool, product)
	require.NoError(t, k.ApplyDryRun(ctx, ns, []byte(workers)))
	require.NoError(t, k.Apply(ctx, ns, []byte(workers)))

	var pods []kube.Pod
	require.Eventually(t, func() bool {
		var err error
		pods, err = k.Pods(ctx, ns, "app=workers")
		if err != nil || len(pods) != 4 {
			return false
		}
		for _, p := range pods {
			if p.NodeName == "" || p.Phase != "Running" {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "4 worker pods Running; last seen: %+v", &pods)
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.NodeName]++
	}
	assert.Equal(t, map[string]int{pool + "-a100-0": 2, pool + "-a100-1": 2}, perNode)

	// One more GPU on the A100s does not exist: the pod must stay Pending.
	extra := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: one-too-many
spec:
  nodeSelector:
    trainsonnet.io/pool: %[1]s
    %[2]s: NVIDIA-A100-SXM4-80GB
  containers:
  - name: worker
    image: registry.invalid/trainsonnet/worker:v1
    resources:
      limits:
        nvidia.com/gpu: 1
`, pool, product)
	require.NoError(t, k.Apply(ctx, ns, []byte(extra)))
	cond, err := k.WaitUnschedulable(ctx, ns, "one-too-many", time.Minute)
	require.NoError(t, err, "pod one-too-many should be unschedulable")
	assert.Equal(t, "Unschedulable", cond.Reason)
	assert.Contains(t, cond.Message, "Insufficient nvidia.com/gpu")
	t.Logf("scheduler said: %s", cond.Message)

	// Keep the check honest: nothing of ours ran on the non-matching nodes.
	ctx2, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := k.Pods(ctx2, ns, "")
	require.NoError(t, err)
	for _, p := range all {
		assert.NotContains(t, []string{pool + "-h100-0", pool + "-cpu-0"}, p.NodeName, "pod %s", p.Name)
	}
}
