package jobs_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
	"github.com/trainsonnet/trainsonnet/test/kube"
	"github.com/trainsonnet/trainsonnet/test/node"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

const (
	// caseTimeout bounds one case from its namespace's creation to its
	// last assertion. A job here normally ends 10-40 s after the apply;
	// on a cold CI run, five cases beside the control plane's suites and
	// make check, pytorch's 3-rank training took 165 s and its eval's
	// case passed 3 minutes: 5 keeps a hang's detection and a busy
	// machine's slowness apart.
	caseTimeout = 5 * time.Minute
	// cleanupTimeout bounds the diagnostics and the namespace deletion.
	cleanupTimeout = 2 * time.Minute
	// pollInterval is how often Job and pod status are read.
	pollInterval = time.Second

	// ParallelEnv sets how many cases run on the node at once, whatever
	// test they are of (default 4).
	ParallelEnv = "TRAINSONNET_JOBS_PARALLEL"
	// KeepNamespaceEnv=1 keeps every case's namespace.
	KeepNamespaceEnv = "TRAINSONNET_KEEP_NAMESPACE"

	// Labels and annotations the generated objects and the Job controller
	// put on the pods.
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	indexAnno      = "batch.kubernetes.io/job-completion-index"
)

// suite is what the cases of a test share.
type suite struct {
	k    *kube.Kubectl
	node *node.Cluster
	g    *generator.Generator
	// slots limits how many cases use the node at once: the package's
	// one pool (nodeSlots), shared by every test.
	slots *slotPool
}

// nodeSlots are the node's places for cases, one pool for the whole
// package: the tests run side by side (runCases), and a case starts when
// any case of any test has ended, so that the node is never left with
// one case while a test waits for its slowest. The jobs mostly wait
// (on pods, on training steps paced by sleeps): five at once keep a
// 2-core node busy without starving any.
var nodeSlots = sync.OnceValues(func() (*slotPool, error) {
	n := 5
	if v := os.Getenv(ParallelEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: a number of cases, at least 1", ParallelEnv, v)
		}
	}
	return &slotPool{free: n, openAfter: 2 * time.Second}, nil
})

// slotPool hands the node's slots to the cases that wait for one, the
// longest first: a case's weight is the bound it declares (caseTimeout,
// a fault's bound), so the cases that may run longest start first and
// the suite does not end with one of them alone on the node. Among equal
// weights, the first to ask. The pool opens a moment (openAfter) after
// the first case asks, so that the cases that start together (go test
// releases a package's parallel tests at once) are all weighed.
type slotPool struct {
	mu      sync.Mutex
	free    int
	seq     int
	waiting []*slotWaiter
	// asked: a case has asked; open: slots are handed out.
	asked, open bool
	openAfter   time.Duration
}

type slotWaiter struct {
	weight time.Duration
	seq    int
	ready  chan struct{}
}

// acquire waits for a slot, or ctx's end.
func (p *slotPool) acquire(ctx context.Context, weight time.Duration) error {
	p.mu.Lock()
	p.seq++
	w := &slotWaiter{weight: weight, seq: p.seq, ready: make(chan struct{})}
	p.waiting = append(p.waiting, w)
	if !p.asked {
		p.asked = true
		time.AfterFunc(p.openAfter, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.open = true
			p.handOut()
		})
	}
	p.handOut()
	p.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-w.ready: // handed a slot meanwhile: give it back
			p.free++
			p.handOut()
		default:
			p.waiting = slices.DeleteFunc(p.waiting, func(x *slotWaiter) bool { return x == w })
		}
		return ctx.Err()
	}
}

// release gives a slot back.
func (p *slotPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free++
	p.handOut()
}

// handOut gives the free slots to the heaviest waiters, once open; p.mu
// is held.
func (p *slotPool) handOut() {
	for p.open && p.free > 0 && len(p.waiting) > 0 {
		best := 0
		for i, w := range p.waiting {
			if b := p.waiting[best]; w.weight > b.weight || w.weight == b.weight && w.seq < b.seq {
				best = i
			}
		}
		close(p.waiting[best].ready)
		p.waiting = slices.Delete(p.waiting, best, best+1)
		p.free--
	}
}

// suiteStart is when the package's tests began: the cases' logs say
// when, from it, they held the node, so that a slow suite's timeline
// can be read from its output.
var suiteStart = time.Now()

// newSuite returns the suite, or skips the test unless TRAINSONNET_E2E=1
// and the real node's environment is present.
func newSuite(t *testing.T) *suite {
	t.Helper()
	if os.Getenv(kube.EnvE2E) != "1" {
		t.Skipf("end-to-end test on a real node: set %s=1 and run it through test/node/with-node.sh", kube.EnvE2E)
	}
	c, reason := node.FromEnv()
	if c == nil {
		t.Skip(reason)
	}
	k := kube.E2E(t) // with TRAINSONNET_E2E=1, an API server that does not answer fails
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	slots, err := nodeSlots()
	require.NoError(t, err)
	return &suite{k: k, node: c, g: g, slots: slots}
}

// jobCase is one case: a job in a namespace of its own.
type jobCase struct {
	t     *testing.T
	s     *suite
	ctx   context.Context // bounded by caseTimeout
	ns    string
	name  string // the job's name parameter
	begin time.Time
	// launcher is the component label and container name of the pod
	// that runs mpirun: "launcher" (openmpi) or "driver" (horovod).
	launcher string
	// claimDir is the directory of the claim createLocalClaim made, on
	// this host (the node), or where in it the job writes.
	claimDir string
	// fault is the case's fault, when TestFaults runs it, on a job of
	// faultProto; disrupted, the Job of the pod it evicted.
	fault      *fault
	faultProto string
	disrupted  string
	// second, when set, runs once a queued case's quota is cut to its
	// job (kueuePreempt): a second job that must wait.
	second func()
	// jobset: the case's job is one JobSet (jobset).
	jobset bool
}

// start waits for a free slot on the node, then creates a namespace that
// enforces level and returns the case, bounded by caseTimeout. When the
// test ends it logs diagnostics if the case failed, deletes the namespace
// (and with it every pod) and frees the slot.
func (s *suite) start(t *testing.T, name string, level kube.PodSecurityLevel) *jobCase {
	t.Helper()
	return s.startFor(t, name, level, caseTimeout)
}

// startFor is start with a deadline of the case's own.
func (s *suite) startFor(t *testing.T, name string, level kube.PodSecurityLevel, caseTimeout time.Duration) *jobCase {
	t.Helper()
	asked := time.Now()
	if err := s.slots.acquire(t.Context(), caseTimeout); err != nil {
		t.Fatal("no free slot on the node before the test ended")
	}
	got := time.Now()
	t.Cleanup(func() {
		s.slots.release()
		t.Logf("case on the node from +%.0f s to +%.0f s of the suite: %.1f s (waited %.1f s for a slot)",
			got.Sub(suiteStart).Seconds(), time.Since(suiteStart).Seconds(), time.Since(got).Seconds(), got.Sub(asked).Seconds())
	})

	// Within go test's -timeout too, leaving time for the diagnostics and
	// the namespace's deletion: a test binary that panics on its timeout
	// prints neither.
	timeout := caseTimeout
	if d, ok := t.Deadline(); ok {
		if left := time.Until(d) - cleanupTimeout - 10*time.Second; left < timeout {
			timeout = left
		}
	}
	if timeout < 30*time.Second {
		t.Fatalf("only %s left before go test's -timeout; run with a longer -timeout", timeout.Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	ns, err := s.k.CreateNamespace(ctx, "jobs-"+name, level)
	require.NoError(t, err)
	jc := &jobCase{t: t, s: s, ctx: ctx, ns: ns, name: name, begin: time.Now(), launcher: "launcher"}
	t.Cleanup(func() {
		// t.Context() is done by now: cleanups get their own deadline.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if t.Failed() {
			jc.dumpDiagnostics(ctx)
		}
		if os.Getenv(KeepNamespaceEnv) == "1" {
			t.Logf("keeping namespace %s (%s=1)", ns, KeepNamespaceEnv)
			return
		}
		if err := s.k.DeleteNamespace(ctx, ns, cleanupTimeout-10*time.Second); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Logf("namespace %s (Pod Security %s)", ns, level)
	return jc
}

// jobTest is one case of a suite: a job run on the node.
type jobTest struct {
	name string
	run  func(*testing.T, *suite)
}

// runCases runs the cases of a test side by side, and the test beside the
// package's others (the node's slots bound how many cases use it at
// once), each case logging how long it took.
func runCases(t *testing.T, cases []jobTest) {
	t.Parallel()
	s := newSuite(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			t.Cleanup(func() { t.Logf("case took %.1fs (with namespace create and delete)", time.Since(start).Seconds()) })
			tc.run(t, s)
		})
	}
}

// runCasesAlone runs the cases one at a time, alone on the node: for the
// faults that reach every job on it (its API server, its kubelet or its
// containerd restarted). Call it from a test that is not parallel: go
// test runs such tests before it lets the parallel ones (runCases) start,
// so nothing else is on the node. (test/e2e.sh runs test/node's package
// before this one, -p 1, for the same reason.)
func runCasesAlone(t *testing.T, cases []jobTest) {
	s := newSuite(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			t.Cleanup(func() { t.Logf("case took %.1fs (with namespace create and delete)", time.Since(start).Seconds()) })
			tc.run(t, s)
		})
		s.settle(t)
	}
}

// settleBound bounds the wait for the node after a fault of the whole
// node.
const settleBound = 3 * time.Minute

// settle waits, after a fault of the whole node, until the node is Ready
// without the taints the node lifecycle controller puts on a node it
// lost (node.kubernetes.io/not-ready, unreachable), so that the next
// case's pods are not refused by the scheduler or evicted: after the API
// server's outage the controllers take a minute to trust the node again,
// and a case started then (a CI run showed it) waited on pods that could
// not be placed, and on names its Service's endpoints did not yet have.
func (s *suite) settle(t *testing.T) {
	t.Helper()
	start := time.Now()
	for {
		out, err := s.k.Run(context.Background(), nil, "get", "node", s.node.NodeName, "-o",
			`jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status}{end} {range .spec.taints[*]}{.key} {end}`)
		state := strings.TrimSpace(string(out))
		if err == nil && strings.HasPrefix(state, "True") && !strings.Contains(state, "node.kubernetes.io/") {
			if d := time.Since(start); d > time.Second {
				t.Logf("the node settled %.1f s after the fault's case", d.Seconds())
			}
			return
		}
		if time.Since(start) > settleBound {
			t.Fatalf("the node did not settle within %s after the fault's case: Ready and taints %q (%v)", settleBound, state, err)
		}
		time.Sleep(2 * time.Second)
	}
}

// params are the parameters every case starts from: the test image, never
// pulled, 2 workers.
func (jc *jobCase) params(command string) typed.OpenMPI {
	two := 2
	return typed.OpenMPI{
		Common:          typed.Common{Name: jc.name},
		Image:           jc.s.node.Image,
		ImagePullPolicy: "Never", // imported by test/node/up.sh; there is no registry
		Workers:         &two,
		Exec:            jc.afterLauncherResolves(jc.name+"-launcher", command),
	}
}

// afterLauncherResolves is afterLauncherResolves in the Jobs form; in a
// JobSet (jc.jobset) nothing watches the launcher, and there is no
// presence name to wait for.
func (jc *jobCase) afterLauncherResolves(service, command string) string {
	if jc.jobset {
		return command
	}
	return afterLauncherResolves(service, command)
}

// afterLauncherResolves prefixes an exec with a wait until the launcher's
// own headless Service name resolves, then three ticks of the workers'
// watchdog (TS_POLL_INTERVAL 2 s), so that every worker's watchdog has
// seen the launcher before the job ends (requireWatchdogSawLauncher). A
// job of a few seconds can otherwise end before the endpoints controller
// has published the launcher pod, most of all on a loaded machine (a cold
// CI run showed it); the job itself is fine then, as the launcher stops
// the workers over ssh, but the test would learn nothing about the
// watchdog.
func afterLauncherResolves(service, command string) string {
	return "until getent hosts " + service + " >/dev/null; do sleep 1; done; sleep 6; " + command
}

// render renders openmpi with the generator, in-process.
func (jc *jobCase) render(p typed.OpenMPI) *generator.Result {
	jc.t.Helper()
	res, err := jc.s.g.Render(jc.ctx, p.Params())
	require.NoError(jc.t, err)
	return res
}

// yaml is the result as a YAML stream.
func (jc *jobCase) yaml(res *generator.Result) []byte {
	jc.t.Helper()
	y, err := res.YAML()
	require.NoError(jc.t, err)
	return y
}

// apply server-side applies the manifests into the case's namespace, as
// kube.Apply does, and restarts the case's clock, so that durations are
// measured from here. A warning from the server fails the test at once
// (--warnings-as-errors): Pod Security admission only warns about a Job
// whose pods it would refuse (the Job controller then fails to create them
// and the Job never ends).
func (jc *jobCase) apply(manifests []byte) {
	jc.t.Helper()
	out, err := jc.s.k.Run(jc.ctx, manifests, "--warnings-as-errors", "apply", "--server-side",
		"--field-manager="+kube.FieldManager, "--validate=strict", "--namespace", jc.ns, "-f", "-")
	require.NoError(jc.t, err, "kubectl apply (a server warning is an error)")
	jc.t.Logf("applied:\n%s", strings.TrimSpace(string(out)))
	jc.begin = time.Now()
}

// kubectl runs kubectl in the case's namespace, bounded by the case.
func (jc *jobCase) kubectl(stdin []byte, args ...string) ([]byte, error) {
	return jc.s.k.Run(jc.ctx, stdin, append([]string{"--namespace", jc.ns}, args...)...)
}

// createSSHSecret creates a Secret of type kubernetes.io/ssh-auth with a
// fresh key pair, as a user would before passing ssh.secret.
func (jc *jobCase) createSSHSecret(name string) {
	jc.t.Helper()
	keys, err := node.NewSSHKeyPair(name)
	require.NoError(jc.t, err)
	doc, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": name},
		"type":       "kubernetes.io/ssh-auth",
		"data": map[string]string{
			"ssh-privatekey": base64.StdEncoding.EncodeToString(keys.Private),
			"ssh-publickey":  base64.StdEncoding.EncodeToString(keys.Public),
		},
	})
	require.NoError(jc.t, err)
	_, err = jc.kubectl(doc, "create", "-f", "-")
	require.NoError(jc.t, err)
}

// jobStatus is the part of a Job's status the tests read.
type jobStatus struct {
	Spec struct {
		Completions *int `json:"completions"`
		Parallelism *int `json:"parallelism"`
	} `json:"spec"`
	Status struct {
		Active     int `json:"active"`
		Succeeded  int `json:"succeeded"`
		Failed     int `json:"failed"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
			// LastTransitionTime: when it became so (RFC 3339, seconds)
			LastTransitionTime time.Time `json:"lastTransitionTime"`
		} `json:"conditions"`
	} `json:"status"`
}

// getJob reads a Job.
func (jc *jobCase) getJob(name string) (*jobStatus, error) {
	out, err := jc.kubectl(nil, "get", "job", name, "-o", "json")
	if err != nil {
		return nil, err
	}
	var j jobStatus
	if err := json.Unmarshal(out, &j); err != nil {
		return nil, fmt.Errorf("job %s: %w", name, err)
	}
	return &j, nil
}

// finished returns "Complete" or "Failed" once the Job has that condition,
// with its reason and message; "" while it runs. Both are final: the Job
// controller sets them only once all of the Job's pods have terminated.
func (j *jobStatus) finished() (state, why string) {
	for _, c := range j.Status.Conditions {
		if c.Status == "True" && (c.Type == "Complete" || c.Type == "Failed") {
			return c.Type, strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "", ""
}

// waitJob waits until the Job is Complete or Failed and returns which,
// failing the test if the case's deadline comes first.
func (jc *jobCase) waitJob(name string) string {
	jc.t.Helper()
	var lastErr error
	for {
		j, err := jc.getJob(name)
		if err == nil {
			if state, why := j.finished(); state != "" {
				jc.t.Logf("Job %s %s %.1fs after the apply (%s; succeeded %d, failed %d)",
					name, state, time.Since(jc.begin).Seconds(), why, j.Status.Succeeded, j.Status.Failed)
				return state
			}
		} else {
			lastErr = err
		}
		select {
		case <-jc.ctx.Done():
			jc.t.Fatalf("Job %s neither Complete nor Failed %.0fs after the apply (the case's deadline passed; last error: %v)",
				name, time.Since(jc.begin).Seconds(), lastErr)
		case <-time.After(pollInterval):
		}
	}
}

// pod is the part of a Pod the tests read.
type pod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		// DeletionTimestamp: set once the pod is going (a Job suspended
		// by Kueue deletes its pods)
		DeletionTimestamp string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name string `json:"name"`
			Env  []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase             string            `json:"phase"`
		PodIP             string            `json:"podIP"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name  string `json:"name"`
	State struct {
		Running    *struct{}                `json:"running"`
		Waiting    *struct{ Reason string } `json:"waiting"`
		Terminated *struct {
			ExitCode int    `json:"exitCode"`
			Reason   string `json:"reason"`
		} `json:"terminated"`
	} `json:"state"`
}

func (p *pod) name() string      { return p.Metadata.Name }
func (p *pod) component() string { return p.Metadata.Labels[componentLabel] }

// env returns the value of an environment variable of a container ("" if
// unset).
func (p *pod) env(container, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}

// exitCode returns the exit code of the named container, or an error if it
// has not terminated.
func (p *pod) exitCode(container string) (int, error) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != container {
			continue
		}
		if c.State.Terminated == nil {
			return 0, fmt.Errorf("pod %s: container %s has not terminated (phase %s)", p.name(), container, p.Status.Phase)
		}
		return c.State.Terminated.ExitCode, nil
	}
	return 0, fmt.Errorf("pod %s: no status of container %s (phase %s)", p.name(), container, p.Status.Phase)
}

// pods lists the pods of the case's namespace matching the label selector
// (all of them if it is empty), sorted by name.
func (jc *jobCase) pods(selector string) []pod {
	jc.t.Helper()
	args := []string{"get", "pods", "-o", "json"}
	if selector != "" {
		args = append(args, "--selector", selector)
	}
	out, err := jc.kubectl(nil, args...)
	require.NoError(jc.t, err)
	var list struct {
		Items []pod `json:"items"`
	}
	require.NoError(jc.t, json.Unmarshal(out, &list))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].name() < list.Items[j].name() })
	return list.Items
}

// podsOf lists the pods of one role of the job.
func (jc *jobCase) podsOf(component string) []pod {
	jc.t.Helper()
	return jc.pods(instanceLabel + "=" + jc.name + "," + componentLabel + "=" + component)
}

// launcherPod returns the launcher's one pod (backoffLimit is 0).
func (jc *jobCase) launcherPod() pod {
	jc.t.Helper()
	pods := jc.podsOf(jc.launcher)
	require.Len(jc.t, pods, 1, "pods of the launcher Job")
	return pods[0]
}

// launcherResult returns the launcher's pod, its container's log and its
// exit code (the pod must have ended).
func (jc *jobCase) launcherResult() (pod, string, int) {
	jc.t.Helper()
	lp := jc.launcherPod()
	log := jc.logs(lp.name(), jc.launcher)
	code, err := lp.exitCode(jc.launcher)
	require.NoError(jc.t, err)
	return lp, log, code
}

// logs returns a container's log (stdout and stderr of the script).
func (jc *jobCase) logs(podName, container string) string {
	jc.t.Helper()
	out, err := jc.kubectl(nil, "logs", "pod/"+podName, "--container", container)
	require.NoError(jc.t, err)
	return string(out)
}

// lines splits a log into its lines.
func lines(log string) []string {
	return strings.Split(strings.TrimRight(log, "\n"), "\n")
}

// lineWith returns the first line of log containing every one of subs, or "".
func lineWith(log string, subs ...string) string {
	for _, l := range lines(log) {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) }) {
			return l
		}
	}
	return ""
}

// workerHost is the DNS name of worker i in the hostfile, as the launcher
// and its log spell it.
func (jc *jobCase) workerHost(i int) string {
	return fmt.Sprintf("%s-worker-%d.%s", jc.name, i, jc.name)
}

// requireWatchdogSawLauncher checks that the worker's launcher watchdog
// resolved the launcher's name (TS_LAUNCHER, through CoreDNS) at least once;
// had it not, a job longer than initTimeout would lose its workers.
func requireWatchdogSawLauncher(t *testing.T, w pod, log string) {
	t.Helper()
	name := w.env("worker", "TS_LAUNCHER")
	require.NotEmpty(t, name, "TS_LAUNCHER of worker %s", w.name())
	require.NotEmpty(t, lineWith(log, ": "+name+" resolves"), "worker %s resolved the launcher %s; its log:\n%s", w.name(), name, log)
}

// requireToldByLead: once the lead's Job has completed, the Jobs of
// every follower role complete within two minutes, far less than their
// stopGrace, and each follower pod's log says that the lead (its role's
// presence name) told it on its end port, stopping its command cmd.
func (jc *jobCase) requireToldByLead(lead string, port int, cmd string, followers ...string) {
	jc.t.Helper()
	leadDone := time.Now()
	var pods []pod
	for _, r := range followers {
		require.Equal(jc.t, "Complete", jc.waitJob(jc.name+"-"+r), "the %s stop once the %s says so", r, lead)
		pods = append(pods, jc.podsOf(r)...)
	}
	require.Less(jc.t, time.Since(leadDone), 2*time.Minute, "told, not after stopGrace")
	want := fmt.Sprintf("trainsonnet: %s-%s says the job is over (its port %d); stopping %s", jc.name, lead, port, cmd)
	for _, p := range pods {
		log := jc.logs(p.name(), "")
		require.Contains(jc.t, log, want, "%s: its log:\n%s", p.name(), log)
	}
}

// requireNothingRunning checks that no pod of the namespace is still
// Pending or Running: a finished job leaves only terminated pods.
func (jc *jobCase) requireNothingRunning() {
	jc.t.Helper()
	for _, p := range jc.pods("") {
		require.Contains(jc.t, []string{"Succeeded", "Failed"}, p.Status.Phase,
			"pod %s is still %s after both Jobs ended", p.name(), p.Status.Phase)
	}
}

// patchJob is a kustomization over the generated base (overlay's ../base)
// that applies ops, a JSON patch as a YAML list, to the Job name.
func patchJob(name, ops string) string {
	indented := strings.ReplaceAll(strings.TrimPrefix(ops, "\n"), "\n", "\n    ")
	return `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
patches:
- target:
    group: batch
    version: v1
    kind: Job
    name: ` + name + `
  patch: |-
    ` + indented + "\n"
}

// overlay builds a kustomize overlay over the result's kustomize base with
// krusty, in memory, as `kubectl apply -k` on a directory would: the base
// under base/, kustomization (which refers to ../base) in overlay/.
func overlay(t *testing.T, res *generator.Result, kustomization string) []byte {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	files, err := res.KustomizeBase()
	require.NoError(t, err)
	for _, f := range files {
		require.NoError(t, fs.WriteFile(path.Join("/job/base", f.Name), f.Data))
	}
	require.NoError(t, fs.WriteFile("/job/overlay/kustomization.yaml", []byte(kustomization)))
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/job/overlay")
	require.NoError(t, err)
	out, err := m.AsYaml()
	require.NoError(t, err)
	return out
}

// dumpDiagnostics logs what makes a failure diagnosable from CI output
// alone: the objects, `kubectl describe` of the Jobs and pods, events, and
// every container's log. It keeps going past errors.
func (jc *jobCase) dumpDiagnostics(ctx context.Context) {
	t := jc.t
	run := func(args ...string) string {
		out, err := jc.s.k.Run(ctx, nil, append([]string{"--namespace", jc.ns}, args...)...)
		s := string(out)
		if err != nil {
			s += "\n(" + err.Error() + ")"
		}
		return s
	}
	t.Logf("=== diagnostics of namespace %s (job %s)", jc.ns, jc.name)
	for _, args := range [][]string{
		{"get", "networkpolicies,secrets,configmaps,services,endpointslices,jobs,pods", "-o", "wide"},
		{"describe", "jobs"},
		{"describe", "pods"},
		{"get", "events", "--sort-by=.lastTimestamp"},
	} {
		t.Logf("--- kubectl %s\n%s", strings.Join(args, " "), run(args...))
	}
	out, err := jc.s.k.Run(ctx, nil, "--namespace", jc.ns, "get", "pods", "-o", "json")
	var list struct {
		Items []pod `json:"items"`
	}
	if err == nil {
		err = json.Unmarshal(out, &list)
	}
	if err != nil {
		t.Logf("--- listing the pods for their logs: %v", err)
		return
	}
	for _, p := range list.Items {
		t.Logf("--- logs of pod %s (%s, %s)\n%s", p.name(), p.component(), p.Status.Phase,
			withoutProbes(run("logs", "pod/"+p.name(), "--all-containers", "--prefix", "--timestamps")))
	}
}

// withoutProbes leaves out of a worker's log the two lines sshd writes for
// every TCP readiness probe (one every 2 s), and says how many it left out.
func withoutProbes(log string) string {
	var out []string
	probes := 0
	ls := lines(log)
	for i := 0; i < len(ls); i++ {
		if strings.Contains(ls[i], "kex_exchange_identification: Connection closed by remote host") {
			probes++
			if i+1 < len(ls) && strings.Contains(ls[i+1], "Connection closed by ") {
				i++
			}
			continue
		}
		out = append(out, ls[i])
	}
	if probes > 0 {
		out = append(out, fmt.Sprintf("(%d readiness-probe connections left out of this log)", probes))
	}
	return strings.Join(out, "\n")
}

// kinds lists the kinds of the rendered objects.
func kinds(objs []*generator.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Kind)
	}
	return out
}
