package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// The Kueue tests put every prototype's job on a queue of a real Kueue
// (test/cluster/up.sh WITH_KUEUE=1) over kwok nodes with GPUs, and prove
// what a platform team expects of a job on a shared cluster:
//
//   - it is admitted as one Kueue workload holding all its pods;
//   - a second identical job, for which the ClusterQueue has no quota
//     left, waits whole: none of its pods runs (the launcher, driver or
//     scheduler included); it runs once the first job is deleted;
//   - evicted (preempted by a job of a higher WorkloadPriorityClass), it
//     loses its pods but not its Jobs, which count no failure; it waits
//     again and runs once the preemptor is gone.
//
// The quota, not the nodes, is what is short: each test's pool of nodes
// holds two jobs, and its ClusterQueue, once the first job is admitted, is
// cut to that job's usage of the resource that decides (its GPUs, or CPU
// for a job without). Each case logs one line:
//
//	kueue: <case>: one workload of <P> pods; a second waited with 0 of <P> pods running; admitted <s> s after quota freed; eviction: requeued intact
//
// where the seconds run from the first job's deletion to the second's last
// pod running.

// kueueTest skips unless the kwok and Kueue tests are enabled.
func kueueTest(t *testing.T) *kube.Kubectl {
	t.Helper()
	k := kwokTest(t)
	kube.Kueue(t)
	return k
}

// kueueCases: a job of each prototype, in each of its shapes (Jobs,
// Deployments, both), with GPUs where it has any.
var kueueCases = []struct {
	name, proto string
	args        []string
}{
	{"openmpi", "openmpi", []string{"--workers", "2", "--gpu", "1"}},
	{"horovod", "horovod", []string{"--worker.number", "2", "--worker.gpu", "1"}},
	// the scheduler a Deployment, the workers a Job
	{"horovod-dask", "horovod-dask", []string{"--worker.number", "2", "--worker.gpu", "1"}},
	{"horovod-dask/batch", "horovod-dask", []string{"--worker.number", "2", "--worker.gpu", "1", "--scheduler.args", "python train.py"}},
	{"horovod-spark", "horovod-spark", []string{"--worker.number", "2", "--worker.gpu", "1"}},
	{"horovod-spark/long-lived", "horovod-spark", []string{"--worker.number", "2", "--worker.gpu", "1", "--long-lived"}},
	{"tf-distributed", "tf-distributed", []string{"--chief.number", "1", "--ps.number", "1", "--worker.number", "2", "--evaluator.number", "1", "--gpu", "1"}},
	{"eval", "eval", []string{"--gpu", "1"}},
	{"tensorboard", "tensorboard", nil},
	{"pytorch", "pytorch", []string{"--workers", "2", "--gpu", "1"}},
	{"deepspeed", "deepspeed", []string{"--workers", "2", "--gpu", "1"}},
}

// TestKueueJobSet: the same story for every prototype in the JobSet form
// (jobset), queued by Kueue's JobSet integration: the JobSet carries the
// queue and is created suspended; one workload of a PodSet per replicated
// Job; evicted, the JobSet is suspended (its Jobs' pods deleted, no
// failure, no restart of the set) and resumed once admitted again.
func TestKueueJobSet(t *testing.T) {
	k := kueueTest(t)
	kube.JobSet(t)
	for _, c := range kueueCases {
		args := append(slices.Clone(c.args), "--jobset")
		switch c.name {
		case "horovod-dask", "horovod-spark/long-lived", "tensorboard":
			continue // long-lived: no JobSet form
		case "horovod":
			args = append(args, "--exec", "horovodrun python train.py")
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := newKueueQueue(t, k, "js-"+c.name)
			k.JobSetNamespace(t, q.Namespace)
			line := q.run(t, c.proto, args)
			t.Logf("kueue: jobset: %s: %s", c.name, line)
		})
	}
}

func TestKueue(t *testing.T) {
	k := kueueTest(t)
	for _, c := range kueueCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := newKueueQueue(t, k, c.name)
			line := q.run(t, c.proto, c.args)
			t.Logf("kueue: %s: %s", c.name, line)
		})
	}
}

// kueueQueue is a test's pool of kwok nodes, and a queue whose flavor
// puts the admitted pods on the pool (its nodes' label, their taint
// tolerated).
type kueueQueue struct {
	*kube.KueueQueue
	k *kube.Kubectl
}

func newKueueQueue(t *testing.T, k *kube.Kubectl, name string) *kueueQueue {
	t.Helper()
	pool := kube.UniqueName("kq-" + strings.ReplaceAll(name, "/", "-"))
	createPool(t, k, pool, []poolNode{
		poolNodeOf(pool, "a", a100, 8, ""),
		poolNodeOf(pool, "b", a100, 8, ""),
		poolNodeOf(pool, "c", a100, 8, ""),
	})
	ns := k.Namespace(t, "kueue", kube.Baseline)
	q := k.KueueQueue(t, ns, map[string]string{poolLabel: pool},
		[]any{map[string]any{"key": poolLabel, "operator": "Equal", "value": pool, "effect": "NoSchedule"}})
	return &kueueQueue{KueueQueue: q, k: k}
}

// render renders a job of proto named name on the queue, at priority.
func (q *kueueQueue) render(t *testing.T, proto, name, priority string, args []string) []byte {
	t.Helper()
	argv := append([]string{"gen", proto, "--name", name, "--queue", "lq", "--workload-priority-class", priority}, args...)
	code, out, stderr := runCLI(genArgs(argv, "", q.Namespace))
	require.Equal(t, 0, code, "trainsonnet %s: %s", strings.Join(argv, " "), stderr)
	return out
}

// run goes through the case's story (see the top of this file) and
// returns its line.
func (q *kueueQueue) run(t *testing.T, proto string, args []string) string {
	ctx := t.Context()
	first, second, preemptor := q.render(t, proto, "qa", kube.KueueLow, args),
		q.render(t, proto, "qb", kube.KueueLow, args),
		q.render(t, proto, "qc", kube.KueueHigh, args)
	pods := podCount(t, first)

	// 1. The first job: one workload of all its pods, every pod running.
	require.NoError(t, q.k.Apply(ctx, q.Namespace, first))
	q.waitRunning(t, "qa", pods)
	wls := q.workloads(t, "qa")
	if len(wls) != 1 || wls[0].Pods() != pods {
		t.Fatalf("job qa: want one workload of %d pods, got %s", pods, kube.DescribeWorkloads(wls))
	}
	if !wls[0].Condition("Admitted") {
		t.Fatalf("job qa: its workload %s is not admitted: %s", wls[0].Metadata.Name, kube.DescribeWorkloads(wls))
	}

	// 2. The queue cut to what the first job uses: an identical second job
	// waits, none of its pods running.
	decisive := kube.GPUResource
	usage := wls[0].Usage(decisive)
	if usage.IsZero() {
		decisive = "cpu"
		usage = wls[0].Usage(decisive)
	}
	require.NoError(t, q.Cut(ctx, map[string]string{decisive: usage.String()}))
	require.NoError(t, q.k.Apply(ctx, q.Namespace, second))
	require.Eventually(t, func() bool {
		wls := q.workloads(t, "qb")
		return len(wls) > 0 && wls[0].Pending()
	}, 4*time.Minute, 500*time.Millisecond, "job qb: no pending workload")
	for range 3 { // and it stays so
		if running := q.running(t, "qb"); running != 0 {
			t.Fatalf("job qb runs %d of %d pods while it waits for quota", running, pods)
		}
		time.Sleep(time.Second)
	}

	// 3. The first job deleted: the second runs.
	start := time.Now()
	_, err := q.k.Run(ctx, first, "delete", "--namespace", q.Namespace, "--wait=false", "-f", "-")
	require.NoError(t, err)
	q.waitRunning(t, "qb", pods)
	admitted := time.Since(start)
	before := q.podNames(t, "qb")

	// 4. Evicted by a job of a higher priority: its pods go, its Jobs
	// stay and count no failure; it runs again once the preemptor is gone.
	require.NoError(t, q.k.Apply(ctx, q.Namespace, preemptor))
	q.waitRunning(t, "qc", pods)
	if running := q.running(t, "qb"); running != 0 {
		t.Fatalf("job qb runs %d pods beside the job that preempted it", running)
	}
	q.requireIntact(t, "qb")
	_, err = q.k.Run(ctx, preemptor, "delete", "--namespace", q.Namespace, "--wait=false", "-f", "-")
	require.NoError(t, err)
	q.waitRunning(t, "qb", pods)
	q.requireIntact(t, "qb")
	if after := q.podNames(t, "qb"); len(slices.DeleteFunc(after, func(n string) bool { return slices.Contains(before, n) })) == 0 {
		t.Fatalf("job qb: the same pods run after its eviction (%v): it was never evicted", before)
	}
	return fmt.Sprintf("one workload of %d pods; a second waited with 0 of %d pods running; admitted %.1f s after quota freed; eviction: requeued intact",
		pods, pods, admitted.Seconds())
}

// podCount is the number of pods the workloads of manifests run.
func podCount(t *testing.T, manifests []byte) int {
	t.Helper()
	objs, err := decodeObjects(manifests)
	require.NoError(t, err)
	n := 0
	for _, o := range objs {
		spec, _ := o["spec"].(map[string]any)
		switch o["kind"] {
		case "Deployment":
			n += int(spec["replicas"].(float64))
		case "Job":
			p := 1
			if v, ok := spec["parallelism"].(float64); ok {
				p = int(v)
			}
			n += p
		case "JobSet":
			for _, rj := range asList(spec["replicatedJobs"]) {
				r, _ := asMap(rj)["replicas"].(float64)
				p, _ := nested(rj, "template", "spec", "parallelism").(float64)
				n += int(r) * int(p)
			}
		}
	}
	return n
}

// jobPods are the pods of job (its instance label).
func (q *kueueQueue) jobPods(t *testing.T, job string) []kube.Pod {
	t.Helper()
	pods, err := q.k.Pods(t.Context(), q.Namespace, "app.kubernetes.io/instance="+job)
	require.NoError(t, err)
	return pods
}

func (q *kueueQueue) running(t *testing.T, job string) int {
	n := 0
	for _, p := range q.jobPods(t, job) {
		if p.NodeName != "" || p.Phase == "Running" {
			n++
		}
	}
	return n
}

func (q *kueueQueue) podNames(t *testing.T, job string) []string {
	var names []string
	for _, p := range q.jobPods(t, job) {
		names = append(names, p.Name)
	}
	return names
}

// waitRunning waits until want pods of job run, no more.
func (q *kueueQueue) waitRunning(t *testing.T, job string, want int) {
	t.Helper()
	var got []kube.Pod
	if !assertEventually(4*time.Minute, func() bool {
		got = q.jobPods(t, job)
		running := 0
		for _, p := range got {
			if p.Phase == "Running" && p.NodeName != "" {
				running++
			}
		}
		return running == want && len(got) == want
	}) {
		out, _ := q.k.Run(t.Context(), nil, "get", "pods", "--namespace", q.Namespace, "-l", "app.kubernetes.io/instance="+job, "-o",
			`jsonpath={range .items[*]}{.metadata.name}: gates {.spec.schedulingGates}, node selector {.spec.nodeSelector}, finalizers {.metadata.finalizers}, deleted {.metadata.deletionTimestamp}, {.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}`)
		t.Fatalf("job %s: want %d pods running, got %s; its workloads: %s; its pods:\n%s", job, want, describePods(got), kube.DescribeWorkloads(q.workloads(t, job)), out)
	}
}

func assertEventually(timeout time.Duration, f func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
	return true
}

func describePods(pods []kube.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s %s on %q; ", p.Name, p.Phase, p.NodeName)
	}
	return fmt.Sprintf("%d pods: %s", len(pods), b.String())
}

// requireIntact: the job's Jobs have not failed, nor counted a failure;
// its JobSet, if it is one, has not failed nor restarted.
func (q *kueueQueue) requireIntact(t *testing.T, job string) {
	t.Helper()
	// (a cluster without the JobSet CRD answers with an error: no JobSet)
	sets, err := q.k.Run(t.Context(), nil, "get", "jobsets.jobset.x-k8s.io", "--namespace", q.Namespace, "-l", "app.kubernetes.io/instance="+job, "-o", "json", "--ignore-not-found")
	if err == nil && len(sets) > 0 {
		var list struct {
			Items []struct {
				Status struct {
					Restarts      int
					TerminalState string
				}
			}
		}
		require.NoError(t, json.Unmarshal(sets, &list))
		for _, js := range list.Items {
			if js.Status.Restarts != 0 || js.Status.TerminalState != "" {
				t.Fatalf("job %s: its JobSet restarted %d times, terminal state %q: an eviction counted as a failure", job, js.Status.Restarts, js.Status.TerminalState)
			}
		}
	}
	out, err := q.k.Run(t.Context(), nil, "get", "jobs", "--namespace", q.Namespace, "-l", "app.kubernetes.io/instance="+job, "-o", "json")
	require.NoError(t, err)
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				Failed     int `json:"failed"`
				Conditions []struct {
					Type, Status, Reason, Message string
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(out, &list))
	for _, j := range list.Items {
		if j.Status.Failed != 0 {
			t.Fatalf("job %s: Job %s counted %d failed pods: an eviction counted as a failure", job, j.Metadata.Name, j.Status.Failed)
		}
		for _, c := range j.Status.Conditions {
			if (c.Type == "Failed" || c.Type == "FailureTarget") && c.Status == "True" {
				t.Fatalf("job %s: Job %s failed: %s: %s", job, j.Metadata.Name, c.Reason, c.Message)
			}
		}
	}
}

// workloads are the Kueue workloads of job.
func (q *kueueQueue) workloads(t *testing.T, job string) []*kube.Workload {
	t.Helper()
	wls, err := q.k.Workloads(t.Context(), q.Namespace, job)
	require.NoError(t, err)
	return wls
}
