package jobs_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// rankExec prints, from every rank, its rank and the host it runs on: one
// line per rank in the launcher's log (mpirun forwards the ranks' stdout).
const rankExec = `mpirun -np 2 sh -c 'echo "rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE on $(hostname)"'`

// TestOpenMPI runs generated openmpi jobs to completion on the real node.
func TestOpenMPI(t *testing.T) {
	runCases(t, []jobTest{
		{"hosts", testHosts},
		{"nonroot-existing-secret", testNonRootExistingSecret},
		{"unreachable-worker", testUnreachableWorker},
		{"not-ready-worker", testNotReadyWorker},
		{"exec-exit-3", testExecExit3},
		{"launcher-gone", testLauncherGone},
	})
}

// testHosts: 2 workers as root, mpirun on both. The launcher completes and
// its log names every worker; the workers end on their own once the
// launcher tells them to, so the worker Job completes too; and the default
// NetworkPolicy, present here, did not get in the way of the job's traffic.
func testHosts(t *testing.T, s *suite) {
	jc := s.start(t, "hosts", kube.Baseline) // root pods pass baseline, not restricted
	res := jc.render(jc.params(rankExec))
	require.Contains(t, kinds(res.Objects), "NetworkPolicy", "openmpi renders a NetworkPolicy by default")
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	jc.requireRanksOnEveryWorker(2)
	jc.requireAllSucceeded(2)
	jc.requireNothingRunning()
	jc.requireNetworkPolicySelectsJob(3)
}

// testNonRootExistingSecret: the same job as mpiuser (1000:1000) with the
// ssh key from a Secret of the user's, in a namespace that enforces Pod
// Security "restricted". Open MPI's tree spawn is forced (routed_radix=1):
// mpirun starts its daemon on worker-0 only, and that daemon starts the one
// on worker-1 over ssh, with the rendered ssh config of worker-0 - the
// path every job with more workers than the radix (64) takes.
func testNonRootExistingSecret(t *testing.T, s *suite) {
	jc := s.start(t, "nonroot", kube.Restricted)
	secret := jc.name + "-user-key"
	jc.createSSHSecret(secret)
	uid := 1000 // mpiuser in the test image
	p := jc.params(rankExec)
	p.SSH.Secret = secret
	p.RunAsUser = &uid // alone, with no group: the key files must still be readable
	p.MCA = map[string]string{"routed_radix": "1"}
	res := jc.render(p)
	require.NotContains(t, kinds(res.Objects), "Secret", "with ssh.secret nothing secret is rendered")
	require.Empty(t, res.Warnings, "no generated-key warning with ssh.secret")
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	jc.requireRanksOnEveryWorker(2)
	workers := jc.requireAllSucceeded(2)
	for _, w := range workers {
		log := jc.logs(w.name(), "worker")
		assert.NotEmpty(t, lineWith(log, "serving ssh on port 2022 as user mpiuser"),
			"worker %s runs sshd as mpiuser; its log:\n%s", w.name(), log)
	}
	// Tree spawn: worker-1's sshd let worker-0 (its daemon) in.
	log := jc.logs(workers[1].name(), "worker")
	require.NotEmpty(t, workers[0].Status.PodIP)
	require.NotEmpty(t, lineWith(log, "Accepted publickey for mpiuser from "+workers[0].Status.PodIP+" "),
		"worker-1 was reached over ssh from worker-0 (%s); its log:\n%s", workers[0].Status.PodIP, log)
	jc.requireNothingRunning()
}

// testUnreachableWorker: the hostfile names 2 workers, but a kustomize
// overlay over the generated base runs only worker-0, so worker-1 never
// answers. The launcher gives up after initTimeout with 124, naming
// worker-1; its stop port tells worker-0 that the job is over, so nothing
// is left running.
func testUnreachableWorker(t *testing.T, s *suite) {
	const initTimeout = 20 * time.Second
	jc := s.start(t, "unreachable", kube.Baseline)
	p := jc.params("mpirun -np 2 hostname")
	it := initTimeout
	p.InitTimeout = &it
	res := jc.render(p)
	worker := jc.name + "-worker"
	jc.apply(overlay(t, res, patchJob(worker, `
- op: replace
  path: /spec/completions
  value: 1
- op: replace
  path: /spec/parallelism
  value: 1`)))

	// The overlay did what it should: one worker pod, two in the hostfile.
	j, err := jc.getJob(worker)
	require.NoError(t, err)
	require.NotNil(t, j.Spec.Completions)
	require.NotNil(t, j.Spec.Parallelism)
	require.Equal(t, [2]int{1, 1}, [2]int{*j.Spec.Completions, *j.Spec.Parallelism}, "completions and parallelism of the patched worker Job")
	hostfile, err := jc.kubectl(nil, "get", "configmap", jc.name+"-config", "-o", "jsonpath={.data.hostfile}")
	require.NoError(t, err)
	require.Equal(t, jc.workerHost(0)+" slots=1\n"+jc.workerHost(1)+" slots=1\n", string(hostfile), "hostfile")

	require.Equal(t, "Failed", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	_, log, code := jc.launcherResult()
	require.Equal(t, 124, code, "launcher exit code; its log:\n%s", log)
	gaveUp := lineWith(log, fmt.Sprintf("gave up after %ds", int(initTimeout.Seconds())), "not reachable", jc.workerHost(1))
	require.NotEmpty(t, gaveUp, "the launcher names the worker that never answered; its log:\n%s", log)
	require.NotContains(t, gaveUp, jc.workerHost(0), "worker-0 did answer")
	require.NotEmpty(t, lineWith(log, "1 of 2 workers answered"), "worker-0 answered; log:\n%s", log)
	require.NotEmpty(t, lineWith(log, "the job is over: port 2023 says so"), "the launcher stops worker-0, the one that answered; log:\n%s", log)
	require.NotEmpty(t, lineWith(log, "1 of 1 worker(s) read port 2023"), "worker-0 read the stop port; log:\n%s", log)
	require.Empty(t, lineWith(log, "running TS_EXEC"), "exec must not run; log:\n%s", log)

	require.Equal(t, "Complete", jc.waitJob(worker), "worker Job (1 completion)")
	workers := jc.podsOf("worker")
	require.Len(t, workers, 1, "worker pods")
	requireWorkerStopped(t, jc, workers[0], "0")
	jc.requireNothingRunning()
}

// testNotReadyWorker: worker-1 starts its sshd 40 s after worker-0 (a
// kustomize overlay over the generated base delays its command), so for
// that while its pod runs but is not Ready: its readiness probe is sshd's.
// The launcher waits for it, naming it as the one it waits for while the
// pod is not Ready; once it answers, mpirun runs on both and the job
// completes.
func testNotReadyWorker(t *testing.T, s *suite) {
	jc := s.start(t, "notready", kube.Baseline)
	p := jc.params(rankExec)
	it := 180 * time.Second
	p.InitTimeout = &it
	res := jc.render(p)
	worker := jc.name + "-worker"
	jc.apply(overlay(t, res, patchJob(worker, `
- op: replace
  path: /spec/template/spec/containers/0/command
  value: [sh, -c, 'if [ "$JOB_COMPLETION_INDEX" = 1 ]; then echo "worker-1: sshd in 40s"; sleep 40; fi; exec sh /etc/trainsonnet/mpi.sh worker']`)))

	// The launcher names worker-1 as the one it waits for, while worker-1's
	// pod runs and is not Ready.
	waiting := ""
	deadline := time.Now().Add(2 * time.Minute)
	for waiting == "" {
		require.True(t, time.Now().Before(deadline), "the launcher never named the worker it waits for")
		time.Sleep(time.Second)
		pods := jc.podsOf(jc.launcher)
		if len(pods) != 1 || pods[0].Status.Phase != "Running" {
			continue
		}
		log, err := jc.kubectl(nil, "logs", "pod/"+pods[0].name(), "--container", jc.launcher)
		if err != nil {
			continue
		}
		waiting = lineWith(string(log), "1 of 2 workers answered", "trying the other 1 again: "+jc.workerHost(1))
	}
	var w1 pod
	for _, w := range jc.podsOf("worker") {
		if w.Metadata.Annotations[indexAnno] == "1" {
			w1 = w
		}
	}
	require.NotEmpty(t, w1.name(), "worker-1's pod")
	ready, err := jc.kubectl(nil, "get", "pod", w1.name(), "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="Ready")].status}`)
	require.NoError(t, err)
	require.Equal(t, "Running False", string(ready), "worker-1 runs, not Ready, while the launcher logs %q", waiting)

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	require.Equal(t, "Complete", jc.waitJob(worker), "worker Job")
	jc.requireRanksOnEveryWorker(2)
	jc.requireAllSucceeded(2)
	jc.requireNothingRunning()
}

// testExecExit3: exec fails with 3 after mpirun ran. The launcher Job
// fails, the launcher container's exit code is exec's, and the workers are
// told to stop all the same.
//
// Its command and env hold $ as a user types them for a shell: the kubelet
// would turn $$ into $ and $(X) into X's value (issue 25); the shell must
// get them byte for byte, so $$ is its pid and Y is the text $(X) $$.
func testExecExit3(t *testing.T, s *suite) {
	jc := s.start(t, "exit3", kube.Baseline)
	p := jc.params(`mpirun -np 2 hostname && printf 'user text: pid %s, Y=%s.\n' "$$" "$Y" && exit 3`)
	p.Env = map[string]string{"X": "expanded", "Y": "$(X) $$"}
	jc.apply(jc.yaml(jc.render(p)))

	require.Equal(t, "Failed", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	_, log, code := jc.launcherResult()
	require.Equal(t, 3, code, "launcher exit code; its log:\n%s", log)
	ls := lines(log)
	for i := range 2 {
		require.Contains(t, ls, fmt.Sprintf("%s-worker-%d", jc.name, i), "mpirun ran on worker %d before exec failed; log:\n%s", i, log)
	}
	require.NotEmpty(t, lineWith(log, "TS_EXEC exited with code 3"), "log:\n%s", log)
	require.Regexp(t, `(?m)^user text: pid [0-9]+, Y=\$\(X\) \$\$\.$`, log, "$$ reached the shell as $$, and Y as written; log:\n%s", log)

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	workers := jc.podsOf("worker")
	require.Len(t, workers, 2, "worker pods")
	for i, w := range workers {
		requireWorkerStopped(t, jc, w, fmt.Sprint(i))
	}
	jc.requireNothingRunning()
}

// testLauncherGone: the launcher ends without telling the workers to stop -
// here because it gets SIGTERM while exec runs, as when its pod is deleted,
// and then leaves the workers to notice by themselves. The workers' watchdog
// sees the launcher's DNS name (the headless Service, through CoreDNS) go
// away once its pod has ended, and after the grace period (launcherGrace,
// 30 s here) they exit 0: no pod is left running, with no RBAC.
func testLauncherGone(t *testing.T, s *suite) {
	grace := 30 * time.Second // launcherGrace, shorter than its default (420 s) to keep the test short
	jc := s.start(t, "gone", kube.Baseline)
	// PID 1 of the launcher container is mpi.sh: it passes the signal on
	// to exec and exits 143 without stopping the workers.
	params := jc.params("mpirun -np 2 hostname && kill -TERM 1 && sleep 30")
	params.LauncherGrace = &grace
	jc.apply(jc.yaml(jc.render(params)))

	require.Equal(t, "Failed", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	launcherEnded := time.Now()
	_, log, code := jc.launcherResult()
	require.Equal(t, 143, code, "launcher exit code; its log:\n%s", log)
	require.NotEmpty(t, lineWith(log, "exiting 143 without stopping the workers"), "log:\n%s", log)
	require.Empty(t, lineWith(log, "the job is over"), "the launcher must not stop the workers here; log:\n%s", log)
	require.Empty(t, lineWith(log, "telling"), "the launcher must not stop the workers here; log:\n%s", log)

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	t.Logf("workers ended %.1fs after the launcher Job failed (grace %s)", time.Since(launcherEnded).Seconds(), grace)
	workers := jc.podsOf("worker")
	require.Len(t, workers, 2, "worker pods")
	for i, w := range workers {
		require.Equal(t, fmt.Sprint(i), w.Metadata.Annotations[indexAnno], "completion index of %s", w.name())
		require.Equal(t, "Succeeded", w.Status.Phase, "worker pod %s", w.name())
		code, err := w.exitCode("worker")
		require.NoError(t, err)
		require.Zero(t, code, "worker %s exit code", w.name())
		wlog := jc.logs(w.name(), "worker")
		requireWatchdogSawLauncher(t, w, wlog)
		require.NotEmpty(t, lineWith(wlog, fmt.Sprintf("has not resolved for %ds; assuming the job ended", int(grace.Seconds()))),
			"worker %s stopped through its watchdog; its log:\n%s", w.name(), wlog)
	}
	jc.requireNothingRunning()
}

// requireRanksOnEveryWorker checks the launcher's log of rankExec: every
// worker was reached over ssh, and rank i ran on worker i (the hostfile's
// order, one slot each).
func (jc *jobCase) requireRanksOnEveryWorker(workers int) {
	t := jc.t
	t.Helper()
	_, log, code := jc.launcherResult()
	t.Logf("launcher log:\n%s", log)
	ls := lines(log)
	for i := range workers {
		require.Contains(t, ls, fmt.Sprintf("rank %d of %d on %s-worker-%d", i, workers, jc.name, i),
			"rank %d ran on worker %d; launcher log:\n%s", i, i, log)
	}
	require.NotEmpty(t, lineWith(log, fmt.Sprintf("all %d workers reachable", workers)))
	require.NotEmpty(t, lineWith(log, "TS_EXEC exited with code 0"))
	require.Zero(t, code, "launcher exit code")
}

// requireAllSucceeded checks that the launcher and every worker pod
// Succeeded and returns the workers, which must be indexes 0..workers-1,
// each stopped by the launcher.
func (jc *jobCase) requireAllSucceeded(workers int) []pod {
	t := jc.t
	t.Helper()
	lp := jc.launcherPod()
	require.Equal(t, "Succeeded", lp.Status.Phase, "launcher pod %s", lp.name())
	ws := jc.podsOf("worker")
	require.Len(t, ws, workers, "worker pods")
	byIndex := map[string]pod{}
	for _, w := range ws {
		byIndex[w.Metadata.Annotations[indexAnno]] = w
	}
	for i := range workers {
		w, ok := byIndex[fmt.Sprint(i)]
		require.True(t, ok, "no pod of worker index %d among %v", i, slices.Sorted(maps.Keys(byIndex)))
		requireWorkerStopped(t, jc, w, fmt.Sprint(i))
	}
	return ws
}

// requireWorkerStopped checks that a worker pod ended with 0 because the
// launcher said the job was over, on its stop port (not through the
// watchdog's grace period).
func requireWorkerStopped(t *testing.T, jc *jobCase, w pod, index string) {
	t.Helper()
	require.Equal(t, index, w.Metadata.Annotations[indexAnno], "completion index of %s", w.name())
	require.Equal(t, "Succeeded", w.Status.Phase, "worker pod %s", w.name())
	code, err := w.exitCode("worker")
	require.NoError(t, err)
	require.Zero(t, code, "worker %s exit code", w.name())
	log := jc.logs(w.name(), "worker")
	require.NotEmpty(t, lineWith(log, "the launcher says the job is over"), "worker %s was stopped by the launcher; its log:\n%s", w.name(), log)
	requireWatchdogSawLauncher(t, w, log)
}

// requireNetworkPolicySelectsJob checks the NetworkPolicy that openmpi
// renders by default: it exists, it applies to every pod of the job, and
// the one peer it admits ingress from is the job's own pods. Together with
// the job having run to completion this shows that the policy does not
// block the job's own traffic (launcher to workers over ssh, mpirun's
// daemons back to the launcher).
//
// The node enforces NetworkPolicies (kube-network-policies, test/node), so
// the job's completion also shows that the policy admits its own traffic;
// that it keeps other pods out is TestNetworkPolicy's part (netpol_test.go).
func (jc *jobCase) requireNetworkPolicySelectsJob(pods int) {
	t := jc.t
	t.Helper()
	out, err := jc.kubectl(nil, "get", "networkpolicy", jc.name, "-o", "json")
	require.NoError(t, err, "the NetworkPolicy %s exists", jc.name)
	type selector struct {
		MatchLabels      map[string]string `json:"matchLabels"`
		MatchExpressions []any             `json:"matchExpressions"`
	}
	var np struct {
		Spec struct {
			PodSelector selector `json:"podSelector"`
			PolicyTypes []string `json:"policyTypes"`
			Ingress     []struct {
				From []struct {
					PodSelector       *selector `json:"podSelector"`
					NamespaceSelector *selector `json:"namespaceSelector"`
					IPBlock           any       `json:"ipBlock"`
				} `json:"from"`
				Ports []any `json:"ports"`
			} `json:"ingress"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(out, &np))
	spec := np.Spec
	require.Equal(t, []string{"Ingress"}, spec.PolicyTypes)
	require.Empty(t, spec.PodSelector.MatchExpressions)
	require.NotEmpty(t, spec.PodSelector.MatchLabels)
	require.Len(t, spec.Ingress, 1, "ingress rules")
	require.Empty(t, spec.Ingress[0].Ports, "the rule admits every port")
	require.Len(t, spec.Ingress[0].From, 1, "peers")
	peer := spec.Ingress[0].From[0]
	require.Nil(t, peer.NamespaceSelector, "peers in the policy's own namespace only")
	require.Nil(t, peer.IPBlock)
	require.NotNil(t, peer.PodSelector)
	require.Equal(t, spec.PodSelector, *peer.PodSelector, "the policy admits exactly the pods it applies to")

	all := podNames(jc.pods(""))
	require.Len(t, all, pods, "pods of the job: the launcher and the workers")
	selected := podNames(jc.pods(labelSelector(spec.PodSelector.MatchLabels)))
	require.Equal(t, all, selected, "the NetworkPolicy's podSelector selects every pod of the job")
	t.Logf("NetworkPolicy %s selects %s; ingress only from the same pods",
		jc.name, strings.Join(selected, ", "))
}

func labelSelector(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func podNames(pods []pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.name())
	}
	return names
}
