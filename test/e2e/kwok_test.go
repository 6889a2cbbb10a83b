package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// The kwok tests run an openmpi job rendered by the generator on fake nodes
// that kwok (test/cluster/up.sh WITH_KWOK=1) pretends to run, and check
// where the real scheduler puts its pods.
//
// Each test gets a pool of nodes of its own: a label with a unique value
// (so that its selectors match nothing else) and a NoSchedule taint with
// that value, which only the test's pods tolerate, so that no other test's
// pods (golden cases, other packages' tests) land on these nodes and take
// their GPUs. The launcher goes to the pool's CPU node.
//
// kwok must run with test/cluster/kwok-stages.yaml: kwok's default stages
// mark every Running pod owned by a Job Succeeded at once, which frees its
// GPUs and takes it out of anti-affinity; these tests detect that and say so.

const (
	poolLabel = "trainsonnet.io/e2e-pool"
	roleLabel = "trainsonnet.io/e2e-role"
	gpuLabel  = "nvidia.com/gpu.product"
)

// kwokTest skips unless the kwok tests are enabled.
func kwokTest(t *testing.T) *kube.Kubectl {
	t.Helper()
	k := kube.E2E(t)
	if os.Getenv(kube.EnvE2EKwok) != "1" {
		t.Skipf("needs kwok fake nodes: set %s=1 and start the cluster with WITH_KWOK=1 (test/e2e.sh does both)", kube.EnvE2EKwok)
	}
	return k
}

// poolNode is a fake node of a test's pool.
type poolNode struct {
	name   string
	labels map[string]string
	gpus   int
}

// The GPU products the kwok pools offer.
const a100, h100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"

// poolNodeOf is node name of pool with gpus GPUs of product (none: "")
// and the role label (none: "").
func poolNodeOf(pool, name, product string, gpus int, role string) poolNode {
	labels := map[string]string{}
	if product != "" {
		labels[gpuLabel] = product
	}
	if role != "" {
		labels[roleLabel] = role
	}
	return poolNode{name: pool + "-" + name, labels: labels, gpus: gpus}
}

// waitRunning waits until want pods of the job's role run on nodes, none
// of them completed, and returns them.
func waitRunning(t *testing.T, k *kube.Kubectl, ns, name, role string, want int) []podPlacement {
	t.Helper()
	var pods []podPlacement
	require.Eventually(t, func() bool {
		var err error
		if pods, err = jobPods(t.Context(), k, ns, name, role); err != nil {
			return false
		}
		n := 0
		for _, p := range pods {
			if p.NodeName != "" && p.Phase == "Running" {
				n++
			}
		}
		return n == want
	}, 2*time.Minute, 500*time.Millisecond, "all %d %s pods Running; last seen: %s", want, role, placements{&pods})
	require.Empty(t, completed(pods))
	return pods
}

// createPool creates tainted kwok nodes, waits until kwok reports them
// Ready, and deletes them when the test ends. Call it before creating the
// namespace: cleanups run last-in first-out, and the namespace's pods must
// be gone before their nodes.
func createPool(t *testing.T, k *kube.Kubectl, pool string, nodes []poolNode) {
	t.Helper()
	names := make([]string, len(nodes))
	items := make([]any, len(nodes))
	for i, n := range nodes {
		names[i] = n.name
		labels := map[string]string{
			kube.E2ELabel:            "true",
			"type":                   "kwok",
			"kubernetes.io/hostname": n.name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			poolLabel:                pool,
		}
		for k, v := range n.labels {
			labels[k] = v
		}
		res := map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"}
		if n.gpus > 0 {
			res[kube.GPUResource] = strconv.Itoa(n.gpus)
		}
		items[i] = map[string]any{
			"apiVersion": "v1",
			"kind":       "Node",
			"metadata": map[string]any{
				"name":        n.name,
				"labels":      labels,
				"annotations": map[string]string{kube.KwokAnnotation: "fake"},
			},
			"spec": map[string]any{"taints": []any{
				map[string]any{"key": poolLabel, "value": pool, "effect": "NoSchedule"},
			}},
			// The API server keeps the status given on create, so the
			// scheduler sees the capacity at once.
			"status": map[string]any{"capacity": res, "allocatable": res},
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := k.DeleteNodes(ctx, names...); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	require.NoError(t, err)
	_, err = k.Run(t.Context(), doc, "create", "-f", "-", "-o", "name")
	require.NoError(t, err)
	nodeRefs := make([]string, len(names))
	for i, n := range names {
		nodeRefs[i] = "node/" + n
	}
	require.NoError(t, k.Wait(t.Context(), "", "condition=Ready", time.Minute, nodeRefs...),
		"kwok did not make the fake nodes Ready: is it running (WITH_KWOK=1)?")
}

// poolParams are the parameters that put a job's pods on the pool: workers
// on nodes with the given labels, the launcher on the pool's CPU node, and
// the pool's taint tolerated by both.
func poolParams(name, pool string, workerLabels map[string]string) *generator.Params {
	tol := []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	sel := map[string]string{poolLabel: pool}
	for k, v := range workerLabels {
		sel[k] = v
	}
	return generator.NewParams("openmpi").
		Set("name", name).
		Set("image", "registry.invalid/trainsonnet/mpi:e2e").
		Set("ssh.secret", name+"-ssh").
		Set("nodeSelector", sel).
		Set("tolerations", tol).
		Set("launcher.nodeSelector", map[string]string{poolLabel: pool, roleLabel: "cpu"}).
		Set("launcher.tolerations", tol)
}

// renderJob renders the params and applies them (dry run first) with the
// existing ssh Secret the job names.
func renderJob(t *testing.T, k *kube.Kubectl, ns, secret string, params *generator.Params) []byte {
	t.Helper()
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	res, err := g.Render(t.Context(), params)
	require.NoError(t, err)
	manifests, err := res.YAML()
	require.NoError(t, err)
	// The existing Secret the job names (kwok never reads it; a real node would).
	sec := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
type: kubernetes.io/ssh-auth
stringData:
  ssh-privatekey: not-a-key
  ssh-publickey: not-a-key
`, secret)
	ctx := t.Context()
	require.NoError(t, k.Apply(ctx, ns, []byte(sec)))
	require.NoError(t, strictDryRun(ctx, k, ns, manifests))
	require.NoError(t, k.Apply(ctx, ns, manifests))
	return manifests
}

// podPlacement is a pod with its node and GPU limit.
type podPlacement struct {
	kube.Pod
	gpus int
}

// jobPods lists the pods of one role of the job, sorted by name, with
// their GPU limits (one kubectl call: the tests poll it).
func jobPods(ctx context.Context, k *kube.Kubectl, ns, name, role string) ([]podPlacement, error) {
	sel := "app.kubernetes.io/instance=" + name + ",app.kubernetes.io/component=" + role
	out, err := k.Run(ctx, nil, "get", "pods", "--namespace", ns, "--selector", sel, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				NodeName   string
				Containers []struct {
					Resources struct{ Limits map[string]string }
				}
			}
			Status struct {
				Phase      string
				Conditions []kube.PodCondition
			}
		}
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	pods := make([]podPlacement, 0, len(list.Items))
	for _, it := range list.Items {
		p := podPlacement{Pod: kube.Pod{Name: it.Metadata.Name, Namespace: it.Metadata.Namespace,
			NodeName: it.Spec.NodeName, Phase: it.Status.Phase, Conditions: it.Status.Conditions}}
		for _, c := range it.Spec.Containers {
			n, _ := strconv.Atoi(c.Resources.Limits[kube.GPUResource])
			p.gpus += n
		}
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// completed says which pod kwok completed, if any: kwok then runs with its
// default stages, and the checks could only time out.
func completed(pods []podPlacement) string {
	for _, p := range pods {
		if p.Phase == "Succeeded" || p.Phase == "Failed" {
			return fmt.Sprintf("kwok moved pod %s to %s: kwok runs with its default pod stages, which complete every pod of a Job; "+
				"start it with test/cluster/up.sh WITH_KWOK=1 (--config test/cluster/kwok-stages.yaml)", p.Name, p.Phase)
		}
	}
	return ""
}

// TestKwokGPUJob: an openmpi job of 16 workers x 2 GPUs with a node selector,
// on 4 matching nodes of 8 GPUs each, next to a matching node with too few
// GPUs, GPU nodes that do not match the selector and a CPU node: all 16
// workers run on the 4 matching nodes, 4 each, within their GPU capacity,
// and nothing of the job's runs elsewhere (the launcher on the CPU node).
func TestKwokGPUJob(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	ctx := t.Context()
	pool := kube.UniqueName("gpu")
	node := func(name, product string, gpus int, role string) poolNode {
		return poolNodeOf(pool, name, product, gpus, role)
	}
	matching := []string{pool + "-a100-0", pool + "-a100-1", pool + "-a100-2", pool + "-a100-3"}
	createPool(t, k, pool, []poolNode{
		node("a100-0", a100, 8, "train"), node("a100-1", a100, 8, "train"),
		node("a100-2", a100, 8, "train"), node("a100-3", a100, 8, "train"),
		node("a100-small", a100, 1, "train"), // matches, but 1 GPU < 2
		node("h100-0", h100, 8, "train"), node("h100-1", h100, 8, "train"),
		node("cpu-0", "", 0, "cpu"),
	})
	nss := newNamespaces(t, k)
	ns := nss.create(t, "e2e-kwok-gpu", kube.Baseline)

	const name, workers, gpus = "bench", 16, 2
	renderJob(t, k, ns, name+"-ssh", poolParams(name, pool, map[string]string{gpuLabel: a100, roleLabel: "train"}).
		Set("workers", workers).Set("gpu", gpus))

	var pods []podPlacement
	var done string
	require.Eventually(t, func() bool {
		var err error
		if pods, err = jobPods(ctx, k, ns, name, "worker"); err != nil {
			return false
		}
		if done = completed(pods); done != "" {
			return true
		}
		running := 0
		for _, p := range pods {
			if p.NodeName != "" && p.Phase == "Running" {
				running++
			}
		}
		return running == workers
	}, 2*time.Minute, 500*time.Millisecond, "all %d workers Running; last seen: %s", workers, placements{&pods})
	require.Empty(t, done)
	require.Len(t, pods, workers, "worker pods: %s", placements{&pods})

	perNode := map[string]int{}
	gpusPerNode := map[string]int{}
	for _, p := range pods {
		assert.Contains(t, matching, p.NodeName, "worker %s must run on a node matching the selector with 2 free GPUs", p.Name)
		assert.Equal(t, gpus, p.gpus, "worker %s: nvidia.com/gpu limit", p.Name)
		perNode[p.NodeName]++
		gpusPerNode[p.NodeName] += p.gpus
	}
	for _, n := range matching {
		assert.Equal(t, 4, perNode[n], "workers on %s (8 GPUs / 2 each)", n)
		assert.LessOrEqual(t, gpusPerNode[n], 8, "GPUs used on %s", n)
	}
	launcher, err := jobPods(ctx, k, ns, name, "launcher")
	require.NoError(t, err)
	require.Len(t, launcher, 1)
	assert.Equal(t, pool+"-cpu-0", launcher[0].NodeName, "the launcher runs on the CPU node of its launcher.nodeSelector")

	// kwok keeps the workers Running: their GPUs stay taken.
	time.Sleep(2 * time.Second)
	pods, err = jobPods(ctx, k, ns, name, "worker")
	require.NoError(t, err)
	require.Empty(t, completed(pods))
	t.Logf("16 workers x 2 GPUs on %v; launcher on %s", perNode, launcher[0].NodeName)
}

// TestKwokHostNetwork: a host-network job never puts two of its workers on
// one node. 6 host-network workers on 4 eligible nodes: 4 run, each on a
// node of its own, 2 stay Pending, unschedulable.
//
// Two things keep the workers apart: their required pod anti-affinity, and
// the host port that host network makes of the ssh port. The scheduler
// reports one reason per node, that of the first filter that fails, and
// NodePorts runs before InterPodAffinity, so the 2 Pending workers say
// "didn't have free ports for the requested pod ports". The anti-affinity
// is checked on its own with a probe pod that carries the workers' labels
// but neither host network nor ports: it must be Pending because of the
// running workers' anti-affinity ("didn't satisfy existing pods
// anti-affinity rules").
func TestKwokHostNetwork(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	pool, eligible := hostNetworkPool(t, k, "hostnet", true)
	ns := newNamespaces(t, k).create(t, "e2e-kwok-hostnet", kube.Privileged) // host network: privileged only

	const name, workers = "hostnet", 6
	renderJob(t, k, ns, name+"-ssh", poolParams(name, pool, map[string]string{roleLabel: "train"}).
		Set("workers", workers).Set("useHostNetwork", true).Set("ssh.port", 2222).Set("nodeNetworks", []string{"10.0.0.0/8"}))
	requireOnePodPerNode(t, eligible, workers, func() ([]podPlacement, error) {
		return jobPods(t.Context(), k, ns, name, "worker")
	})
	requireAntiAffinityAlone(t, k, ns, pool, len(eligible), map[string]string{
		"app.kubernetes.io/name": "openmpi", "app.kubernetes.io/instance": name, "app.kubernetes.io/component": "worker"})
}

// TestKwokHorovodHostNetwork: in a horovod host-network job the driver is a
// pod of the job like the workers, and no two pods of the job share a
// node. The driver and 5 workers (6 pods) on 4 eligible nodes: 4 run, each
// on a node of its own, 2 stay Pending, unschedulable; a probe pod with the
// job's labels (any component) shows the anti-affinity holds on its own.
func TestKwokHorovodHostNetwork(t *testing.T) {
	k := kwokTest(t)
	t.Parallel()
	pool, eligible := hostNetworkPool(t, k, "hvdnet", false)
	ns := newNamespaces(t, k).create(t, "e2e-kwok-hvdnet", kube.Privileged)

	const name, workers = "hvdnet", 5
	tol := []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	sel := map[string]string{poolLabel: pool, roleLabel: "train"}
	renderJob(t, k, ns, name+"-ssh", generator.NewParams("horovod").
		Set("name", name).
		Set("worker.image.repository", "registry.invalid/trainsonnet/horovod").
		Set("worker.image.tag", "e2e").
		Set("ssh.secret", name+"-ssh").
		Set("ssh.port", 32222).
		Set("useHostNetwork", true).
		Set("worker.number", workers).
		Set("worker.nodeSelector", sel).
		Set("worker.tolerations", tol).
		Set("driver.nodeSelector", sel).
		Set("driver.tolerations", tol).
		Set("driver.args", []string{"mpirun -np 6 hostname"}))
	requireOnePodPerNode(t, eligible, workers+1, func() ([]podPlacement, error) {
		driver, err := jobPods(t.Context(), k, ns, name, "driver")
		if err != nil {
			return nil, err
		}
		ws, err := jobPods(t.Context(), k, ns, name, "worker")
		return append(driver, ws...), err
	})
	requireAntiAffinityAlone(t, k, ns, pool, len(eligible), map[string]string{
		"app.kubernetes.io/name": "horovod", "app.kubernetes.io/instance": name})
}

// hostNetworkPool creates a pool of 4 eligible nodes (role "train"), and
// with cpuNode one more that the job must not use.
func hostNetworkPool(t *testing.T, k *kube.Kubectl, prefix string, cpuNode bool) (pool string, eligible []string) {
	t.Helper()
	pool = kube.UniqueName(prefix)
	var nodes []poolNode
	for i := range 4 {
		n := fmt.Sprintf("%s-node-%d", pool, i)
		eligible = append(eligible, n)
		nodes = append(nodes, poolNode{name: n, labels: map[string]string{roleLabel: "train"}})
	}
	if cpuNode {
		nodes = append(nodes, poolNode{name: pool + "-cpu-0", labels: map[string]string{roleLabel: "cpu"}})
	}
	createPool(t, k, pool, nodes)
	return pool, eligible
}

// requireOnePodPerNode waits until as many of the job's pods (list) as
// there are eligible nodes run, each on an eligible node of its own, and
// the others are unschedulable; and checks that it is still so a moment
// later (the scheduler does not change its mind, kwok keeps them Running).
func requireOnePodPerNode(t *testing.T, eligible []string, want int, list func() ([]podPlacement, error)) {
	t.Helper()
	running, pending := len(eligible), want-len(eligible)
	var pods []podPlacement
	var done string
	require.Eventually(t, func() bool {
		var err error
		if pods, err = list(); err != nil || len(pods) != want {
			return false
		}
		if done = completed(pods); done != "" {
			return true
		}
		r, u := 0, 0
		for _, p := range pods {
			if c := p.Condition("PodScheduled"); p.NodeName == "" && c != nil && c.Status == "False" && c.Reason == "Unschedulable" {
				u++
			} else if p.NodeName != "" && p.Phase == "Running" {
				r++
			}
		}
		return r == running && u == pending
	}, 2*time.Minute, 500*time.Millisecond, "%d pods Running, %d unschedulable; last seen: %s", running, pending, placements{&pods})
	require.Empty(t, done)

	seen := map[string]string{}
	for _, p := range pods {
		if p.NodeName == "" {
			c := p.Condition("PodScheduled")
			assert.Regexp(t, strconv.Itoa(running)+` node\(s\) (didn't have free ports for the requested pod ports|didn't match pod anti-affinity rules)`,
				c.Message, "why %s is Pending: the eligible nodes each hold a pod of the job", p.Name)
			t.Logf("%s Pending: %s", p.Name, c.Message)
			continue
		}
		assert.Contains(t, eligible, p.NodeName, "pod %s", p.Name)
		if other, dup := seen[p.NodeName]; dup {
			t.Errorf("pods %s and %s share node %s", other, p.Name, p.NodeName)
		}
		seen[p.NodeName] = p.Name
	}
	t.Logf("one pod per node: %v", seen)
	time.Sleep(2 * time.Second)
	later, err := list()
	require.NoError(t, err)
	require.Empty(t, completed(later))
	assert.Equal(t, placements{&pods}.String(), placements{&later}.String())
}

// requireAntiAffinityAlone checks the job's anti-affinity apart from the
// host ports that also keep its pods apart: a pod with the given labels,
// on the pool's eligible nodes but without host network or ports, must
// stay Pending because of the running pods' anti-affinity.
func requireAntiAffinityAlone(t *testing.T, k *kube.Kubectl, ns, pool string, eligible int, labels map[string]string) {
	t.Helper()
	var ls strings.Builder
	for _, key := range sortedKeys(labels) {
		fmt.Fprintf(&ls, "    %s: %s\n", key, labels[key])
	}
	probe := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: anti-affinity-probe
  labels:
%[1]sspec:
  nodeSelector:
    %[2]s: %[3]s
    %[4]s: train
  tolerations:
  - {key: %[2]s, operator: Equal, value: %[3]s, effect: NoSchedule}
  containers:
  - name: probe
    image: registry.invalid/trainsonnet/probe:e2e
`, ls.String(), poolLabel, pool, roleLabel)
	ctx := t.Context()
	require.NoError(t, k.Apply(ctx, ns, []byte(probe)))
	cond, err := k.WaitUnschedulable(ctx, ns, "anti-affinity-probe", time.Minute)
	require.NoError(t, err, "the probe pod must be unschedulable")
	assert.Contains(t, cond.Message, strconv.Itoa(eligible)+" node(s) didn't satisfy existing pods anti-affinity rules")
	t.Logf("probe pod with the job's labels Pending: %s", cond.Message)
}

// placements shows where pods are, for messages; it reads the pods when it
// is printed (require.Eventually formats its message at the end).
type placements struct{ pods *[]podPlacement }

func (pl placements) String() string {
	var parts []string
	for _, p := range *pl.pods {
		where := p.NodeName
		if where == "" {
			where = "unscheduled"
			if c := p.Condition("PodScheduled"); c != nil {
				where += " (" + c.Reason + ")"
			}
		}
		parts = append(parts, p.Name+"="+where+"/"+p.Phase)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
