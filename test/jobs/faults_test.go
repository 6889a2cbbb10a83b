package jobs_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestFaults injects what a cluster does to a running job into the jobs
// the prototypes render, on the real node, and reports for each case what
// became of the job:
//
//	fault: <prototype>: <fault>: <recovered|failed clearly|not applicable: why> in <s> s (detected <s> s, steps redone <k>)
//
// "recovered": the job completed (training resumed from its last
// checkpoint, its steps redone counted); "failed clearly": its lead's Job
// failed with a reason, and no pod of it runs after; "in": from the fault
// to the job's end; "detected": from the fault to the first pod of the job
// that ended or was replaced. No case may hang: every case is bounded,
// and a job still running after its bound fails the test, as does a pod
// still running 2 minutes after the job has ended.
//
// The training prototypes (pytorch static and elastic, openmpi, horovod,
// deepspeed) train for real, with a checkpoint every 5 steps on the shared claim
// (testdata/train.py --resume), 40 steps of at least 0.5 s, and
// backoffLimit 2: a user who wants a job to survive gives it retries. The
// others run their stand-ins (no TensorFlow, Spark or Horovod here: see
// TestTFDistributed, TestHorovodDask, TestHorovodSpark), made to last, for
// the faults of their pods; what the framework itself makes of a lost
// peer, a stand-in cannot show.
//
// TRAINSONNET_FAULTS=all runs the whole matrix (make faults); CI runs a
// case of every fault class and every prototype's most likely fault, a
// worker pod deleted. TRAINSONNET_FAULTS_TABLE=FILE writes the outcomes
// as docs/failures.md's table.
//
// The faults of a pod run here, beside the package's other tests; the
// faults that reach every job on the node run alone, first
// (TestFaultsOfTheNode).
func TestFaults(t *testing.T) {
	if file := os.Getenv("TRAINSONNET_FAULTS_TABLE"); file != "" {
		t.Cleanup(func() {
			if err := os.WriteFile(file, []byte(faultTable()), 0o644); err != nil {
				t.Errorf("the table: %v", err)
			}
		})
	}
	runCases(t, faultCases(false))
}

// TestFaultsOfTheNode is TestFaults for the faults of the node and the
// control plane (its API server down, its kubelet or containerd
// restarted): they reach every job on the node, and the other tests' own
// reads and execs with it, so each runs alone on the node, one after
// another, before the package's parallel tests start (runCasesAlone).
//
// The API server's outage goes first: its controllers take a minute or
// two to trust the node again and to publish new endpoints, which the
// kubelet's and containerd's restarts give them before the parallel
// cases start (and settle waits for the node after each).
func TestFaultsOfTheNode(t *testing.T) {
	cases := faultCases(true)
	slices.SortStableFunc(cases, func(a, b jobTest) int {
		return cmp.Compare(btoi(!strings.Contains(a.name, "API server")), btoi(!strings.Contains(b.name, "API server")))
	})
	runCasesAlone(t, cases)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// faultCases are the cases of TestFaults of the node's and the control
// plane's faults, or of the others.
func faultCases(node bool) []jobTest {
	all := os.Getenv("TRAINSONNET_FAULTS") == "all"
	var cases []jobTest
	for _, j := range faultJobs {
		for _, f := range faults {
			if f.node != node || !all && !slices.Contains(f.ci, j.proto) || j.only != nil && !slices.Contains(j.only, f.name) {
				continue
			}
			if why := j.notFor(f); why != "" {
				cases = append(cases, jobTest{j.proto + "/" + f.name, func(t *testing.T, _ *suite) {
					t.Logf("fault: %s: %s: not applicable: %s", j.proto, f.name, why)
					record(f.name, j.proto, notApplicable+why)
				}})
				continue
			}
			cases = append(cases, jobTest{j.proto + "/" + f.name, func(t *testing.T, s *suite) { runFault(t, s, j, f) }})
		}
	}
	return cases
}

// A faultJob is a prototype's job as the fault cases run it.
type faultJob struct {
	proto string
	// start renders and applies the job; its Jobs, the lead's first;
	// whether it trains (with steps and checkpoints).
	start func(jc *jobCase) (jobs []string, trains bool)
	// target returns the selector of the pod a fault hits: the lead's,
	// or a worker's (not the lead's).
	target func(jc *jobCase, lead bool) string
	// log is the log of the job's training once it has ended.
	log func(jc *jobCase) string
	// standIn: the job runs a stand-in, which only the faults of its pods,
	// its node and the control plane fit.
	standIn bool
	// set: the job is one JobSet (jobset): its end is the set's, whose
	// controller restarts it whole, backoffLimit times. only: the faults
	// it runs (none other is a case of it).
	set  bool
	only []string
}

// notFor says why fault f does not fit the job, or "".
func (j faultJob) notFor(f fault) string {
	if j.standIn && !f.pod && !f.node {
		return "its framework is a stand-in here, which would show nothing of the framework's own timeouts and recovery"
	}
	return ""
}

// A fault is one thing a cluster does to a running job.
type fault struct {
	name string
	// ci are the prototypes whose case of this fault CI runs.
	ci []string
	// inject does it to the job (its target, lead or not), and returns
	// what undoes it (nil: nothing to undo).
	inject func(jc *jobCase, j faultJob) (undo func())
	// params, if any, change the job before it starts (an unschedulable
	// worker, a worker that outgrows its memory); train, the arguments
	// the training program gets beside its own.
	params func(jc *jobCase, p *generator.Params)
	train  string
	// pod: the fault hits a pod of the job, which a stand-in shows.
	pod bool
	// node: the fault hits the node or the control plane, so every job
	// on the cluster and the other cases' tests too: its case runs
	// alone (TestFaultsOfTheNode).
	node bool
	// operators is what mpi-operator and the training operator document
	// for the fault, for docs/failures.md's table.
	operators string
	// bound is how long the job may take after the fault (default
	// faultDeadline).
	bound time.Duration
}

const (
	faultSteps    = 40
	faultEvery    = 5
	faultAtStep   = 12
	faultRetries  = 2
	faultDeadline = 5 * time.Minute
)

// faultTrain is the training command of the training jobs.
func faultTrain(dir string, extra string) string {
	return trainingDir + "/train.py --steps " + strconv.Itoa(faultSteps) + " --every " + strconv.Itoa(faultEvery) +
		" --step-seconds 0.5 --resume " + dir + extra
}

var faultJobs = []faultJob{
	{proto: "pytorch", start: startFaultPyTorch(false), target: pytorchTarget, log: pytorchLog},
	{proto: "pytorch-elastic", start: startFaultPyTorch(true), target: pytorchTarget, log: pytorchLog},
	{proto: "openmpi", start: startFaultMPI, target: mpiTarget("launcher"), log: mpiLog("launcher")},
	{proto: "openmpi-as-worker", start: startFaultMPIAsWorker, target: pytorchTarget, log: asWorkerLog},
	{proto: "horovod-as-worker", start: startFaultHorovodAsWorker, target: pytorchTarget, log: asWorkerLog},
	{proto: "horovod", start: startFaultHorovod, target: mpiTarget("driver"), log: mpiLog("driver")},
	{proto: "deepspeed", start: startFaultDeepSpeed, target: pytorchTarget, log: asWorkerLog},
	{proto: "tf-distributed", start: startFaultTF, target: roleTarget("worker", "worker"), standIn: true},
	{proto: "horovod-dask", start: startFaultDask, target: roleTarget("scheduler", "worker"), standIn: true},
	{proto: "horovod-spark", start: startFaultSpark, target: roleTarget("driver", "worker"), standIn: true},
	{proto: "eval", start: startFaultEval, target: roleTarget("eval", "eval"), standIn: true},
	// distributed XGBoost for real (Debian's python3-xgboost): its pods'
	// faults and the node's blips
	{proto: "xgboost", start: startFaultXGBoost, target: pytorchTarget, log: pytorchLog, only: xgboostFaults},
	// the JobSet form of the training jobs that lead in each shape
	{proto: "pytorch-jobset", start: jobSetStart(startFaultPyTorch(false)), target: pytorchTarget, log: pytorchLog, set: true, only: jobSetFaults},
	{proto: "openmpi-jobset", start: jobSetStart(startFaultMPI), target: mpiTarget("launcher"), log: mpiLog("launcher"), set: true, only: jobSetFaults},
	{proto: "deepspeed-jobset", start: jobSetStart(startFaultDeepSpeed), target: pytorchTarget, log: asWorkerLog, set: true, only: jobSetFaults},
}

// jobSetFaults are the faults the JobSet form rides out on the node.
var jobSetFaults = []string{"worker pod deleted", "lead pod deleted", "worker evicted", "kubelet restarted", "API server down 20 s"}

// jobSetStart starts a job of start in the JobSet form: its namespace
// seen by JobSet's webhooks, jobset set (startFaultJob).
func jobSetStart(start func(jc *jobCase) ([]string, bool)) func(jc *jobCase) ([]string, bool) {
	return func(jc *jobCase) ([]string, bool) {
		jc.s.k.JobSetNamespace(jc.t, jc.ns)
		jc.jobset = true
		return start(jc)
	}
}

var everyProto = []string{"pytorch", "pytorch-elastic", "openmpi", "openmpi-as-worker", "horovod", "horovod-as-worker", "deepspeed", "tf-distributed", "horovod-dask", "horovod-spark", "eval",
	"xgboost", "pytorch-jobset", "openmpi-jobset", "deepspeed-jobset"}

// xgboostFaults: the faults of the xgboost job (issue 47): its pods lost
// and evicted, and the node's blips.
var xgboostFaults = []string{"worker pod deleted", "lead pod deleted", "worker evicted", "kubelet restarted", "containerd restarted", "API server down 20 s"}

var faults = []fault{
	{name: "worker pod deleted", ci: everyProto, pod: true,
		operators: "the operator makes the pod again; MPIJob: mpirun fails and the launcher Job retries (runPolicy.backoffLimit); PyTorchJob: static ranks fail, elastic ones re-form (elasticPolicy.maxRestarts)",
		inject: func(jc *jobCase, j faultJob) func() {
			jc.deletePod(j.target(jc, false))
			return nil
		}},
	{name: "worker process killed", ci: []string{"openmpi"},
		operators: "restartPolicy of the replica: OnFailure restarts the container in place, ExitCode retries exit codes 128 and up (137 here), Never fails; the launcher's mpirun fails and its Job retries",
		inject: func(jc *jobCase, j faultJob) func() {
			jc.killContainer(j.target(jc, false))
			return nil
		}},
	{name: "worker OOM-killed", ci: []string{"pytorch-elastic"}, train: " --oom 1:" + strconv.Itoa(faultAtStep+3),
		operators: "as a killed process (exit 137): OnFailure restarts it in place, ExitCode retries it",
		params:    func(_ *jobCase, p *generator.Params) { p.Set("memory", "1Gi") }},
	{name: "lead pod deleted", ci: []string{"openmpi", "openmpi-jobset"}, pod: true,
		operators: "MPIJob: the launcher Job makes a new launcher pod; PyTorchJob: the operator makes the Master pod again",
		inject: func(jc *jobCase, j faultJob) func() {
			jc.deletePod(j.target(jc, true))
			return nil
		}},
	{name: "worker evicted", ci: []string{"pytorch", "pytorch-jobset"}, pod: true,
		operators: "as a deleted pod: the operator makes it again",
		inject: func(jc *jobCase, j faultJob) func() {
			jc.evict(j.target(jc, false))
			return nil
		}},
	{name: "kubelet restarted", ci: []string{"openmpi", "openmpi-jobset"}, node: true,
		operators: "nothing: the pods outlive it",
		inject: func(jc *jobCase, _ faultJob) func() {
			restartComponent(jc.t, "kubelet", 0)
			return nil
		}},
	{name: "containerd restarted", ci: []string{"pytorch"}, node: true,
		operators: "nothing: the containers outlive it",
		inject: func(jc *jobCase, _ faultJob) func() {
			restartComponent(jc.t, "containerd", 0)
			return nil
		}},
	{name: "API server down 20 s", ci: []string{"openmpi", "openmpi-jobset"}, node: true,
		operators: "nothing: the controllers resume",
		inject: func(jc *jobCase, _ faultJob) func() {
			restartComponent(jc.t, "kube-apiserver", 20)
			require.Eventually(jc.t, func() bool {
				_, err := jc.s.k.Run(jc.ctx, nil, "get", "--raw=/readyz")
				return err == nil
			}, time.Minute, pollInterval, "the API server is ready again")
			return nil
		}},
	{name: "worker cut off 30 s", ci: []string{"pytorch-elastic"},
		operators: "nothing of the operator's: the training's own timeouts (gloo, NCCL) decide",
		inject: func(jc *jobCase, j faultJob) func() {
			undo := jc.cutOff(j.target(jc, false))
			time.Sleep(30 * time.Second)
			undo()
			return nil
		}},
	{name: "worker cut off for good", ci: []string{"pytorch-elastic"}, bound: 10 * time.Minute,
		operators: "nothing of the operator's: the training's timeouts end it, then restartPolicy and backoffLimit",
		inject: func(jc *jobCase, j faultJob) func() {
			return jc.cutOff(j.target(jc, false))
		},
		// The jobs recover in 2-3 minutes (ssh's keepalive ends mpirun's
		// session to the silent peer in a minute; the cut-off pod finds
		// itself without DNS in 90 s and is replaced, which ends a static
		// torchrun's group). The job's deadline is the bound a user sets.
		params: func(_ *jobCase, p *generator.Params) { p.Set("activeDeadlineSeconds", 1800) }},
	// A pod's fact, which a stand-in shows as well as a framework.
	{name: "worker unschedulable", ci: []string{"openmpi"}, pod: true,
		operators: "Pending until runPolicy.activeDeadlineSeconds, or a gang scheduler's schedulingPolicy.scheduleTimeoutSeconds",
		params: func(jc *jobCase, p *generator.Params) {
			// Each worker takes `per` of a resource the node has one
			// worker's fewer of than the workers need: the last can
			// never be placed. The job's bound is its
			// activeDeadlineSeconds.
			w := unschedulableWorkers[jc.faultProto]
			if w.key == "" {
				w = unschedulableWorkers[""]
			}
			res := "fault.example.com/" + jc.ns
			capacity := strconv.Itoa(w.per * (w.workers - 1))
			_, err := jc.kubectl(nil, "patch", "node", jc.s.node.NodeName, "--subresource=status", "--type=json",
				"-p", `[{"op":"add","path":"/status/capacity/`+strings.ReplaceAll(res, "/", "~1")+`","value":"`+capacity+`"}]`)
			require.NoError(jc.t, err)
			p.Set("gpuResource", res).Set(w.key, w.per).Set("activeDeadlineSeconds", 90)
		}},
}

// unschedulableWorkers are, by prototype, the parameter that gives each
// worker GPUs, how many, and how many workers the fault job has: the
// training jobs' top-level gpu reaches their 3 workers; eval's one pod is
// its worker.
var unschedulableWorkers = map[string]struct {
	key          string
	per, workers int
}{
	"":               {"gpu", 1, 3},
	"tf-distributed": {"worker.gpu", 1, 2},
	"horovod-dask":   {"worker.gpu", 1, 2},
	"horovod-spark":  {"worker.gpu", 2, 2},
	"eval":           {"gpu", 1, 1},
}

// restartMu keeps the restarts of the harness's processes one at a time.
var restartMu sync.Mutex

// restartComponent restarts a process of the harness (test/restart.sh),
// down for down seconds.
func restartComponent(t *testing.T, name string, down int) {
	t.Helper()
	restartMu.Lock() // two restarts of one process at once would race
	defer restartMu.Unlock()
	out, err := exec.Command("../restart.sh", name, strconv.Itoa(down)).CombinedOutput()
	require.NoError(t, err, "test/restart.sh %s %d: %s", name, down, out)
}

// runFault runs one case: the job started, the fault injected at step
// faultAtStep (or once running), the job's end awaited and reported.
func runFault(t *testing.T, s *suite, j faultJob, f fault) {
	bound := f.bound
	if bound == 0 {
		bound = faultDeadline
	}
	jc := s.startFor(t, "f-"+faultSlug(j.proto, f.name), kube.Baseline, bound+5*time.Minute)
	jc.createLocalClaim(storeClaim)
	jc.fault, jc.faultProto = &f, j.proto
	jobs, trains := j.start(jc)
	lead := jobs[0]
	if j.set {
		defer func() { t.Logf("the JobSet restarted %s times", jc.jobSetStatus(jc.name, "restarts")) }()
	}
	// Once training: its progress on the claim, or the target running;
	// a fault made by the parameters is there from the start.
	// A blip of the node or the control plane is one the pods outlive:
	// every pod of the job runs first (a kubelet restarted under a
	// container being started may fail its start, which is Kubernetes'
	// and counts a failure).
	if f.inject != nil {
		require.Eventually(t, func() bool {
			if f.node && !jc.allRunning() {
				return false
			}
			if trains {
				return jc.trainedSteps() >= faultAtStep
			}
			return !jc.noneRunningOf(j.target(jc, false)) && !jc.noneRunningOf(j.target(jc, true))
		}, 3*time.Minute, pollInterval, "the job runs")
	}
	before := jc.podPhases()
	at := time.Now()
	var undo func()
	if f.inject != nil {
		undo = f.inject(jc, j)
	}
	if undo != nil {
		defer undo()
	}
	detected := time.Duration(0)
	state := ""
	for state == "" {
		if detected == 0 && jc.podsChanged(before) {
			detected = time.Since(at)
		}
		if j.set {
			state = jc.jobSetState()
		} else if jb, err := jc.getJob(lead); err == nil {
			state, _ = jb.finished()
		}
		if time.Since(at) > bound {
			record(f.name, j.proto, fmt.Sprintf("**no end %.0f min after the fault**", bound.Minutes()))
			t.Fatalf("fault: %s: %s: the job has not ended %s after the fault (a hang)", j.proto, f.name, bound)
		}
		time.Sleep(pollInterval)
	}
	took := time.Since(at)
	outcome := "recovered"
	if state == "Failed" && j.set {
		outcome = "failed clearly"
		why, err := jc.kubectl(nil, "get", "jobset", jc.name, "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].message}`)
		require.NoError(t, err)
		require.NotEmpty(t, why, "the JobSet says why it failed")
		t.Logf("the JobSet failed: %s", why)
	} else if state == "Failed" {
		outcome = "failed clearly"
		jb, _ := jc.getJob(lead)
		_, why := jb.finished()
		require.NotEmpty(t, why, "the lead's Job says why it failed")
		t.Logf("the lead's Job failed: %s", why)
	}
	jc.requireNothingRunningWithin(2 * time.Minute)
	if f.node {
		// blips cost nothing: no retry spent, no training redone
		jc.requireNoFailures(jc.name)
	}
	if jc.disrupted != "" {
		// an eviction spends no retry; what it made crash does
		jc.requireDisruptionUncounted(jc.disrupted)
	}
	redone := "-"
	if trains && state == "Complete" {
		log := j.log(jc)
		redone = strconv.Itoa(stepsRedone(log))
		jc.requireTrainedRanks(log)
		if f.node {
			require.Equal(t, "0", redone, "a blip restarts no training:\n%s", log)
		}
	}
	det := "-"
	if detected > 0 && !f.node { // a blip: nothing to detect
		det = fmt.Sprintf("%.1f", detected.Seconds())
	}
	t.Logf("fault: %s: %s: %s in %.1f s (detected %s s, steps redone %s)", j.proto, f.name, outcome, took.Seconds(), det, redone)
	if redone == "-" {
		record(f.name, j.proto, fmt.Sprintf("%s in %.0f s", outcome, took.Seconds()))
	} else {
		record(f.name, j.proto, fmt.Sprintf("%s in %.0f s, %s steps redone", outcome, took.Seconds(), redone))
	}
}

// record keeps a case's outcome for the table.
func record(fault, proto, outcome string) {
	results.Lock()
	defer results.Unlock()
	results.m[[2]string{fault, proto}] = outcome
}

// results are the outcomes of the cases run, by fault and prototype.
var results = struct {
	sync.Mutex
	m map[[2]string]string
}{m: map[[2]string]string{}}

// notApplicable starts the outcome of a case that does not fit, before
// the reason.
const notApplicable = "not applicable: "

// faultTable is docs/failures.md's table of the outcomes: a row per fault, a
// column per prototype, and what the operators document for it; why a
// case does not fit, numbered below it.
func faultTable() string {
	results.Lock()
	defer results.Unlock()
	var b strings.Builder
	var whys []string
	b.WriteString("| fault |")
	for _, j := range faultJobs {
		b.WriteString(" `" + j.proto + "` |")
	}
	b.WriteString(" the operators, as they document it |\n|---|")
	for range faultJobs {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, f := range faults {
		b.WriteString("| " + f.name + " |")
		for _, j := range faultJobs {
			r, ok := results.m[[2]string{f.name, j.proto}]
			switch {
			case !ok && j.only != nil && !slices.Contains(j.only, f.name):
				r = "—" // not a case of this form
			case !ok:
				r = "not run"
			}
			if why, ok := strings.CutPrefix(r, notApplicable); ok {
				i := slices.Index(whys, why)
				if i < 0 {
					whys = append(whys, why)
					i = len(whys) - 1
				}
				r = fmt.Sprintf("n/a (%d)", i+1)
			}
			b.WriteString(" " + r + " |")
		}
		b.WriteString(" " + f.operators + " |\n")
	}
	for i, why := range whys {
		fmt.Fprintf(&b, "\n(%d) Not applicable: %s.\n", i+1, why)
	}
	return b.String()
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

func faultSlug(proto, fault string) string {
	s := slugRE.ReplaceAllString(strings.ToLower(proto+"-"+fault), "-")
	if len(s) > 30 {
		s = s[:30]
	}
	return strings.Trim(s, "-")
}

// trainedSteps is the last step the training wrote in progress.
func (jc *jobCase) trainedSteps() int {
	b, err := os.ReadFile(filepath.Join(jc.claimDir, "progress"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// resumedRE: a resumption, as testdata/train.py and testdata/xgb-train.py
// (a step is a boosting round) say it.
var resumedRE = regexp.MustCompile(`(?:train: resumed at step|xgboost: worker 0 resumed at round) (\d+), redoing (\d+) (?:steps|rounds)`)

// stepsRedone sums what every resumption in log redid.
func stepsRedone(log string) int {
	n := 0
	for _, m := range resumedRE.FindAllStringSubmatch(log, -1) {
		k, _ := strconv.Atoi(m[2])
		n += k
	}
	return n
}

// podPhases are the job's pods now, by name, and their phases (nil while the API
// server does not answer).
func (jc *jobCase) podPhases() map[string]string {
	out, err := jc.kubectl(nil, "get", "pods", "--selector", instanceLabel+"="+jc.name, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}`)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, l := range lines(string(out)) {
		if n, phase, ok := strings.Cut(l, " "); ok {
			m[n] = phase
		}
	}
	return m
}

// allRunning: the job has pods, and every one is Running.
func (jc *jobCase) allRunning() bool {
	phases := jc.podPhases()
	for _, phase := range phases {
		if phase != "Running" {
			return false
		}
	}
	return len(phases) > 0
}

// podsChanged: a pod of the job has gone, come or left Running since
// before.
func (jc *jobCase) podsChanged(before map[string]string) bool {
	now := jc.podPhases()
	if now == nil {
		return false
	}
	if len(now) != len(before) {
		return true
	}
	for n, phase := range now {
		if b, ok := before[n]; !ok || b != phase {
			return true
		}
	}
	return false
}

// requireNothingRunningWithin: no pod of the job runs, within d.
func (jc *jobCase) requireNothingRunningWithin(d time.Duration) {
	jc.t.Helper()
	require.Eventually(jc.t, func() bool { return jc.noneRunning(jc.name) }, d, pollInterval,
		"no pod of the job runs after it has ended")
}

// requireDisruptionUncounted: Job job counted as failures only its pods
// that failed and are still there: not the pod evicted from it (gone,
// since an eviction deletes it), which its pod failure policy ignores,
// nor the pods of a static group that ended because a pod had gone
// (exit 75, ignored too).
func (jc *jobCase) requireDisruptionUncounted(job string) {
	jc.t.Helper()
	jb, err := jc.getJob(job)
	if err != nil && jc.jobset && strings.Contains(err.Error(), "NotFound") {
		// a follower's Job, which the JobSet controller deletes when the
		// set ends or restarts: its count went with it (what the eviction
		// made crash is the set's restart count, logged)
		jc.t.Logf("Job %s: gone with the JobSet's end or restart, its count with it", job)
		return
	}
	require.NoError(jc.t, err)
	failed := 0
	for _, p := range jc.pods("job-name=" + job) {
		if p.Status.Phase == "Failed" && !endedWithGroup(p) {
			failed++
		}
	}
	require.Equal(jc.t, failed, jb.Status.Failed,
		"Job %s counts as failures only its pods that failed (%d), not the one evicted", job, failed)
	jc.t.Logf("Job %s: %d failures counted, the eviction not among them", job, jb.Status.Failed)
}

// endedWithGroup: p's main container exited 75, a static group's pod
// that ended because another had gone.
func endedWithGroup(p pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.ExitCode == 75 {
			return true
		}
	}
	return false
}

// deletePod deletes the first pod of selector, as a user or a controller
// would (no eviction, no disruption condition).
func (jc *jobCase) deletePod(selector string) {
	jc.t.Helper()
	name := jc.firstPod(selector)
	_, err := jc.kubectl(nil, "delete", "pod", name, "--wait=false")
	require.NoError(jc.t, err)
	jc.t.Logf("deleted pod %s", name)
}

// evict evicts the first pod of selector through the Eviction API, as a
// node drain does.
func (jc *jobCase) evict(selector string) {
	jc.t.Helper()
	p := jc.runningPod(selector)
	name := p.name()
	jc.disrupted = p.Metadata.Labels["job-name"]
	doc, err := json.Marshal(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction",
		"metadata": map[string]any{"name": name, "namespace": jc.ns}})
	require.NoError(jc.t, err)
	_, err = jc.kubectl(doc, "create", "--raw", "/api/v1/namespaces/"+jc.ns+"/pods/"+name+"/eviction", "-f", "-")
	require.NoError(jc.t, err)
	jc.t.Logf("evicted pod %s", name)
}

// runningPod is the first running pod of selector.
func (jc *jobCase) runningPod(selector string) pod {
	jc.t.Helper()
	for _, p := range jc.pods(selector) {
		if p.Status.Phase == "Running" {
			return p
		}
	}
	jc.t.Fatalf("no running pod of %s", selector)
	return pod{}
}

func (jc *jobCase) firstPod(selector string) string {
	jc.t.Helper()
	p := jc.runningPod(selector)
	return p.name()
}

// containerPID is the host PID of the main process of the first running
// pod of selector (its first container).
func (jc *jobCase) containerPID(selector string) (name string, pid int) {
	jc.t.Helper()
	name = jc.firstPod(selector)
	out, err := jc.kubectl(nil, "get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	require.NoError(jc.t, err)
	id := strings.TrimPrefix(string(out), "containerd://")
	sock := filepath.Join(os.Getenv("TRAINSONNET_NODE_STATE"), "containerd", "containerd.sock")
	out, err = exec.Command("ctr", "--address", sock, "-n", "k8s.io", "tasks", "ls").CombinedOutput()
	require.NoError(jc.t, err, "ctr tasks ls: %s", out)
	for _, l := range lines(string(out)) {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == id {
			pid, err = strconv.Atoi(f[1])
			require.NoError(jc.t, err)
			return name, pid
		}
	}
	jc.t.Fatalf("no containerd task %s of pod %s", id, name)
	return "", 0
}

// killContainer kills the main process of the first running pod of
// selector with SIGKILL, from the node: its container exits 137.
func (jc *jobCase) killContainer(selector string) {
	jc.t.Helper()
	name, pid := jc.containerPID(selector)
	out, err := exec.Command("kill", "-KILL", strconv.Itoa(pid)).CombinedOutput()
	require.NoError(jc.t, err, "kill: %s", out)
	jc.t.Logf("killed the main process of pod %s (pid %d on the node)", name, pid)
}

// cutOff drops every packet in and out of the first running pod of
// selector, in its network namespace, and returns what lets them through
// again.
func (jc *jobCase) cutOff(selector string) func() {
	jc.t.Helper()
	name, pid := jc.containerPID(selector)
	nft := func(rules string) {
		cmd := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		out, err := cmd.CombinedOutput()
		require.NoError(jc.t, err, "nft in pod %s: %s", name, out)
	}
	nft("table inet trainsonnet-fault {\n chain in { type filter hook input priority -300; policy drop; }\n chain out { type filter hook output priority -300; policy drop; }\n}\n")
	jc.t.Logf("cut off pod %s (nftables in its network namespace)", name)
	once := sync.Once{}
	return func() {
		once.Do(func() {
			cmd := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "nft", "delete", "table", "inet", "trainsonnet-fault")
			if out, err := cmd.CombinedOutput(); err != nil {
				jc.t.Logf("uncut pod %s: %v: %s (gone with its pod, most likely)", name, err, out)
			} else {
				jc.t.Logf("uncut pod %s", name)
			}
		})
	}
}

// The training jobs.

func startFaultPyTorch(elastic bool) func(jc *jobCase) ([]string, bool) {
	return func(jc *jobCase) ([]string, bool) {
		p := jc.pytorchParams().
			Set("storage.claim.name", storeClaim).
			Set("exec", faultTrain(`"$TRAIN_DIR"`, jc.fault.train))
		if elastic {
			p.Set("elastic.minNodes", 2).Set("elastic.maxNodes", 3).Set("elastic.maxRestarts", 3)
		}
		jc.startFaultJob(p)
		jc.claimDir += "/train"
		return []string{jc.name + "-worker"}, true
	}
}

// pytorchTarget: worker 0's pod (the lead), or worker 1's, by the labels
// both forms give them (a JobSet's Job is <name>-worker-0).
func pytorchTarget(jc *jobCase, lead bool) string {
	index := "1"
	if lead {
		index = "0"
	}
	return instanceLabel + "=" + jc.name + "," + componentLabel + "=worker,batch.kubernetes.io/job-completion-index=" + index
}

// pytorchLog: the logs of every pod of the job that is still there.
func pytorchLog(jc *jobCase) string {
	var b strings.Builder
	for _, p := range jc.pods(instanceLabel + "=" + jc.name + "," + componentLabel + "=worker") {
		b.WriteString(jc.podLog(p, ""))
	}
	return b.String()
}

// podLog is a pod's log (of its container, if named), or "" with the
// reason logged: a pod that never started a container has none, which
// is no failure of the log's reader. (Reads are tried again while the
// API server or the kubelet is restarting, so that a case beside a blip
// reads the whole log: a log read during a kubelet's restart came back
// empty once, and failed a case whose job had recovered.)
func (jc *jobCase) podLog(p pod, container string) string {
	args := []string{"logs", "pod/" + p.name()}
	if container != "" {
		args = append(args, "--container", container)
	}
	out, err := jc.kubectl(nil, args...)
	if err != nil {
		jc.t.Logf("no log of pod %s (%s): %v", p.name(), p.Status.Phase, err)
		return ""
	}
	return string(out)
}

func startFaultMPI(jc *jobCase) ([]string, bool) {
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + faultTrain(storePath+"/openmpi", jc.fault.train)
	jc.startFaultJob(generator.NewParams("openmpi").Set("name", jc.name).
		Set("image", jc.s.node.Image).Set("imagePullPolicy", "Never").Set("workers", 3).
		Set("exec", jc.afterLauncherResolves(jc.name+"-launcher", exec)).
		Set("volumes", []any{prog, store}).Set("volumeMounts", []any{progMount, storeMount}))
	jc.claimDir += "/openmpi"
	return []string{jc.name + "-launcher", jc.name + "-worker"}, true
}

// startFaultMPIAsWorker: openmpi with --launcher-as-worker: one Indexed
// Job of 3 pods, index 0 the launcher and a rank, each index retried on
// its own; the Job controller ends the job with index 0.
func startFaultMPIAsWorker(jc *jobCase) ([]string, bool) {
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + faultTrain(storePath+"/openmpi-w", jc.fault.train)
	jc.startFaultJob(generator.NewParams("openmpi").Set("name", jc.name).
		Set("image", jc.s.node.Image).Set("imagePullPolicy", "Never").Set("workers", 3).
		Set("launcherAsWorker", true).Set("exec", exec).
		Set("volumes", []any{prog, store}).Set("volumeMounts", []any{progMount, storeMount}))
	jc.claimDir += "/openmpi-w"
	return []string{jc.name + "-worker"}, true
}

// asWorkerLog: the logs of worker 0's pods, the launcher's, every attempt
// still there.
func asWorkerLog(jc *jobCase) string {
	var b strings.Builder
	for _, p := range jc.pods(pytorchTarget(jc, true)) {
		b.WriteString(jc.podLog(p, "worker"))
	}
	return b.String()
}

// startFaultDeepSpeed: 3 workers training through the stand-in deepspeed
// on worker 0 (TestTraining's deepspeed case), one Indexed Job: a lost
// worker's peers fail at their collective (or its ssh session ends),
// deepspeed on worker 0 with them, and the Job retries that index, which
// runs deepspeed again once the lost worker's index is back.
func startFaultDeepSpeed(jc *jobCase) ([]string, bool) {
	jc.startFaultJob(jc.deepspeedParams(3, faultTrain(storePath+"/deepspeed", jc.fault.train)))
	jc.claimDir += "/deepspeed"
	return []string{jc.name + "-worker"}, true
}

// startFaultJob renders and applies p with the case's retries and the
// fault's parameters.
func (jc *jobCase) startFaultJob(p *generator.Params) {
	jc.t.Helper()
	p.Set("backoffLimit", faultRetries)
	if jc.jobset {
		p.Set("jobset", true)
	}
	if jc.fault.params != nil {
		jc.fault.params(jc, p)
	}
	res, err := jc.s.g.Render(jc.ctx, p)
	require.NoError(jc.t, err)
	jc.apply(jc.yaml(res))
}

// startFaultHorovod: the chart's example, the driver (rank 0) and 2
// workers training with the chart's mpirun line.
func startFaultHorovod(jc *jobCase) ([]string, bool) {
	jc.launcher = "driver"
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	repo, tag, ok := strings.Cut(jc.s.node.Image, ":")
	require.True(jc.t, ok)
	example, err := os.ReadFile(chartExample)
	require.NoError(jc.t, err)
	args := `mpirun -np 3 --hostfile /horovod/generated/hostfile --mca orte_keep_fqdn_hostnames t --allow-run-as-root` +
		` -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /horovod/generated/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + faultTrain(storePath+"/horovod", jc.fault.train)
	jc.startFaultJob(generator.NewParams("horovod").Set("name", jc.name).
		AddFile(chartExample, example).
		AddFile("node.yaml", []byte(fmt.Sprintf(nodeValues, repo, tag, afterLauncherResolves(jc.name+"-driver", args)))).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	jc.claimDir += "/horovod"
	return []string{jc.name + "-driver", jc.name + "-worker"}, true
}

// startFaultHorovodAsWorker: startFaultHorovod's job whose driver's pod
// is a worker's: the driver is worker 0 of one Indexed Job.
func startFaultHorovodAsWorker(jc *jobCase) ([]string, bool) {
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	repo, tag, ok := strings.Cut(jc.s.node.Image, ":")
	require.True(jc.t, ok)
	example, err := os.ReadFile(chartExample)
	require.NoError(jc.t, err)
	args := `mpirun -np 3 --hostfile /horovod/generated/hostfile --mca orte_keep_fqdn_hostnames t --allow-run-as-root` +
		` -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /horovod/generated/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + faultTrain(storePath+"/horovod-w", jc.fault.train)
	jc.startFaultJob(generator.NewParams("horovod").Set("name", jc.name).
		AddFile(chartExample, example).
		AddFile("node.yaml", []byte(fmt.Sprintf(nodeValuesAsWorker, repo, tag, args))).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	jc.claimDir += "/horovod-w"
	return []string{jc.name + "-worker"}, true
}

// standInSeconds: how long the stand-ins' "training" lasts.
const standInSeconds = "45"

func startFaultTF(jc *jobCase) ([]string, bool) {
	jc.startFaultJob(jc.tfParams().Set("env", map[string]string{"STANDIN_JOB": jc.name, "STANDIN_SECONDS": standInSeconds}))
	return []string{jc.name + "-worker", jc.name + "-ps"}, false
}

func startFaultDask(jc *jobCase) ([]string, bool) {
	jc.launcher = "scheduler"
	jc.startFaultJob(jc.daskParams().
		Set("scheduler.args", []string{afterLauncherResolves(jc.name+"-scheduler", "sleep "+standInSeconds+" && "+daskClient+" && "+ringAllreduce)}))
	return []string{jc.name + "-scheduler", jc.name + "-worker"}, false
}

func startFaultSpark(jc *jobCase) ([]string, bool) {
	jc.launcher = "driver"
	p := jc.sparkParams()
	p.Set("env", map[string]string{
		"STANDIN_JOB":     jc.name,
		"STANDIN_SECONDS": standInSeconds,
		"PATH":            "/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	})
	jc.startFaultJob(p)
	return []string{jc.name + "-driver", jc.name + "-master", jc.name + "-worker"}, false
}

// startFaultEval: an evaluation that takes a while (the stand-in: what
// eval runs is the user's).
func startFaultEval(jc *jobCase) ([]string, bool) {
	repo, tag, ok := strings.Cut(jc.s.node.Image, ":")
	require.True(jc.t, ok)
	jc.startFaultJob(generator.NewParams("eval").Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("image.repository", repo).Set("image.tag", tag).Set("image.pullPolicy", "Never").
		Set("exec", `sleep `+standInSeconds+` && mkdir -p "$EVAL_DIR" && echo evaluated > "$EVAL_DIR/metrics"`))
	return []string{jc.name + "-eval"}, false
}

// startFaultXGBoost: 3 workers of the xgboost prototype training 40
// rounds of at least 0.5 s (testdata/xgb-train.py), worker 0 writing the
// model on the claim every 5 rounds, which a restarted job resumes from,
// and its progress (the rounds redone counted, as a training's steps).
func startFaultXGBoost(jc *jobCase) ([]string, bool) {
	prog, progMount := jc.trainingProgram()
	jc.startFaultJob(generator.NewParams("xgboost").
		Set("name", jc.name).
		Set("image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", 3).
		Set("runAsUser", 1000).
		Set("runAsGroup", 1000).
		Set("storage.claim.name", storeClaim).
		Set("trainDir", storePath).
		Set("exec", "python3 "+trainingDir+"/xgb-train.py --rounds "+strconv.Itoa(faultSteps)+" --every "+strconv.Itoa(faultEvery)+` --round-seconds 0.5 --checkpoint "$TRAIN_DIR"`).
		Set("volumes", []any{prog}).
		Set("volumeMounts", []any{progMount}))
	return []string{jc.name + "-worker"}, true
}

// roleTarget: the lead's pod is of role lead, a worker's is the second pod
// of role worker (its first if it has one).
func roleTarget(lead, worker string) func(jc *jobCase, isLead bool) string {
	return func(jc *jobCase, isLead bool) string {
		role := worker
		if isLead {
			role = lead
		}
		return instanceLabel + "=" + jc.name + "," + componentLabel + "=" + role
	}
}

func mpiTarget(lead string) func(jc *jobCase, lead bool) string {
	return func(jc *jobCase, isLead bool) string {
		if isLead {
			return instanceLabel + "=" + jc.name + "," + componentLabel + "=" + lead
		}
		return instanceLabel + "=" + jc.name + "," + componentLabel + "=worker,batch.kubernetes.io/job-completion-index=1"
	}
}

// mpiLog: the log of the lead's last pod.
func mpiLog(lead string) func(jc *jobCase) string {
	return func(jc *jobCase) string {
		var b strings.Builder
		for _, p := range jc.podsOf(lead) {
			b.WriteString(jc.podLog(p, lead))
		}
		return b.String()
	}
}

// requireTrainedRanks: the training's ranks ended with the same
// parameters (the training line of TestTraining, for the last run; an
// XGBoost worker's model).
func (jc *jobCase) requireTrainedRanks(log string) {
	jc.t.Helper()
	shas := map[string]bool{}
	for _, m := range trainLine.FindAllStringSubmatch(log, -1) {
		shas[m[5]] = true
	}
	for _, m := range xgbLine.FindAllStringSubmatch(log, -1) {
		shas[m[7]] = true
	}
	require.Len(jc.t, shas, 1, "every rank of the last run ends with the same parameters:\n%s", log)
}

// jobSetState is the JobSet's end as a Job's: Complete, Failed or "".
func (jc *jobCase) jobSetState() string {
	if s := jc.jobSetStatus(jc.name, "terminalState"); s != "Completed" {
		return s
	}
	return "Complete"
}
