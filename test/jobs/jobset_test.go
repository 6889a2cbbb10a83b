package jobs_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestJobSet runs jobs in the JobSet form (jobset) on the real node, with
// the real JobSet controller (test/cluster/up.sh WITH_JOBSET=1) making
// their Jobs, Service and pods, and ending them: nothing in the pods
// watches the lead or says the job is over. pytorch, openmpi and deepspeed
// train for real (the program and checks of TestTraining);
// tf-distributed, horovod-dask (a batch run) and horovod-spark run their
// stand-ins (TestTFDistributed, TestHorovodDask, TestHorovodSpark). Each
// case logs
//
//	jobset: <prototype>: <P> pods, <status> in <s> s, followers stopped in <s> s
//
// where the first time runs from the apply to the set's end (its success
// policy met: the lead done), and the second from then until no other pod
// of the set runs: the JobSet controller deletes the Jobs of the roles
// that would run on (parameter servers, sshd workers, the Spark master).
// openmpi-promises checks in this form what the Jobs form's cases check
// of the pods: the NetworkPolicy, $ as typed, /dev/shm. openmpi-entrypoint
// and tf-entrypoint run an image's ENTRYPOINT unwrapped (entrypoint: an
// MPIJob's, TrainJob's or TFJob's containers of args only), the set
// ended by its controller.
func TestJobSet(t *testing.T) {
	kube.JobSet(t)
	runCases(t, []jobTest{
		{"pytorch", testJobSetPyTorch},
		{"openmpi", testJobSetOpenMPI},
		{"deepspeed", testJobSetDeepSpeed},
		{"tf-distributed", testJobSetTF},
		{"horovod-dask", testJobSetDask},
		{"horovod-spark", testJobSetSpark},
		{"openmpi-promises", testJobSetPromises},
		{"openmpi-entrypoint", testJobSetOpenMPIEntrypoint},
		{"tf-entrypoint", testJobSetTFEntrypoint},
	})
}

// startJobSet is start, in a namespace whose objects the JobSet webhooks see.
func (s *suite) startJobSet(t *testing.T, name string, level kube.PodSecurityLevel) *jobCase {
	t.Helper()
	jc := s.start(t, name, level)
	s.k.JobSetNamespace(t, jc.ns)
	jc.jobset = true
	return jc
}

func testJobSetPyTorch(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-torch", kube.Restricted)
	res, err := s.g.Render(jc.ctx, jc.pytorchParams().Set("jobset", true).Set("exec", trainingDir+"/train.py"))
	require.NoError(t, err)
	log := jc.runJobSet("pytorch", res, "worker", 3)
	require.NotContains(t, log, "trainsonnet:", "no runtime of ours in the pods")
	jc.requireTrained("pytorch", 3, log)
}

func testJobSetOpenMPI(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-mpi", kube.Baseline) // sshd as root
	prog, progMount := jc.trainingProgram()
	const workers = 3
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + trainingDir + `/train.py && ` + mpiAllreduce
	res, err := s.g.Render(jc.ctx, generator.NewParams("openmpi").
		Set("name", jc.name).
		Set("image", s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", workers).
		Set("jobset", true).
		Set("exec", exec).
		Set("volumes", []any{prog}).
		Set("volumeMounts", []any{progMount}))
	require.NoError(t, err)
	log := jc.runJobSet("openmpi", res, "launcher", 1)
	require.Contains(t, log, "serve-end=job", "the launcher tells no end: JobSet ends the job")
	jc.requireTrained("openmpi", workers, log)
	jc.requireAllreduce(workers, log)
}

func testJobSetDeepSpeed(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-ds", kube.Baseline) // sshd as root
	jc.createLocalClaim(storeClaim)
	const workers = 3
	res, err := s.g.Render(jc.ctx, jc.deepspeedParams(workers, trainingDir+"/train.py --checkpoint "+storePath+"/deepspeed").Set("jobset", true))
	require.NoError(t, err)
	log := jc.runJobSet("deepspeed", res, "worker", workers)
	require.NotEmpty(t, lineWith(log, "running TS_EXEC: deepspeed --hostfile /etc/trainsonnet/hostfile --master_addr "+jc.name+"-worker-0-0."+jc.name),
		"the launcher, worker 0, runs deepspeed with the JobSet's names")
	jc.requireTrained("deepspeed", workers, log)
}

func testJobSetTF(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-tf", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.tfParams().Set("jobset", true))
	require.NoError(t, err)
	log := jc.runJobSet("tf-distributed", res, "worker", 2)
	for w := range 2 {
		for ps := range 2 {
			require.Contains(t, log, "worker-0-"+strconv.Itoa(w), "worker %d's log", w)
			require.Contains(t, log, "<- ps "+strconv.Itoa(ps)+" has value", "the workers reached ps %d", ps)
		}
	}
}

func testJobSetDask(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-dask", kube.Baseline)
	res, err := s.g.Render(jc.ctx, jc.daskParams().Set("jobset", true).
		Set("scheduler.args", []string{daskClient + " && " + ringAllreduce + " && update true"}))
	require.NoError(t, err)
	log := jc.runJobSet("horovod-dask", res, "scheduler", 1)
	jc.requireDaskOutput(log)
}

func testJobSetSpark(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-spark", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.sparkParams().Set("runAsUser", sparkUID).Set("jobset", true))
	require.NoError(t, err)
	log := jc.runJobSet("horovod-spark", res, "driver", 1)
	require.Contains(t, log, "driver: 2 processes on executors", "both executors reached the driver at its stable address")
	require.Contains(t, log, "allreduce of ranks = 1")
}

// jobSetLabel: the label the JobSet controller gives every pod of a set,
// and the one of the replicated Job it belongs to.
const (
	jobSetLabel        = "jobset.sigs.k8s.io/jobset-name"
	replicatedJobLabel = "jobset.sigs.k8s.io/replicatedjob-name"
)

// runJobSet applies the rendered JobSet, follows the logs of its lead's
// pods (leadPods of replicated Job lead), waits for the set to end and for
// its other pods to stop, logs the case's line and returns the lead's
// logs. The set must complete.
func (jc *jobCase) runJobSet(proto string, res *generator.Result, lead string, leadPods int) string {
	t := jc.t
	t.Helper()
	pods := 0
	for _, rj := range replicatedJobs(t, res) {
		parallel := 1
		if p := rj.Template.Spec.Parallelism; p != nil {
			parallel = int(*p)
		}
		pods += rj.Replicas * parallel
	}
	require.NotZero(t, pods, "the render holds a JobSet")
	start := time.Now()
	jc.apply(jc.yaml(res))
	logs := jc.followLogs(jobSetLabel+"="+jc.name+","+replicatedJobLabel+"="+lead, leadPods)

	state := jc.waitJobSet(jc.name)
	ended := time.Now()
	others := func() []string {
		var run []string
		for _, p := range jc.pods(jobSetLabel + "=" + jc.name) {
			if p.Status.Phase == "Running" || p.Status.Phase == "Pending" {
				run = append(run, p.name()+" "+p.Status.Phase)
			}
		}
		return run
	}
	for len(others()) > 0 {
		select {
		case <-jc.ctx.Done():
			t.Fatalf("JobSet %s ended %s, and its pods run on: %v", jc.name, state, others())
		case <-time.After(pollInterval):
		}
	}
	stopped := time.Since(ended)
	log := logs()
	t.Logf("the lead's logs:\n%s", log)
	out, err := jc.kubectl(nil, "get", "jobset", jc.name)
	require.NoError(t, err)
	t.Logf("kubectl get jobset:\n%s", out)
	require.Equal(t, "Completed", state, "JobSet %s", jc.name)
	require.Equal(t, "0", jc.jobSetStatus(jc.name, "restarts"), "no restart of the set")
	t.Logf("jobset: %s: %d pods, %s in %.0f s, followers stopped in %.0f s", proto, pods, state, ended.Sub(start).Seconds(), stopped.Seconds())
	return log
}

// jobSetStatus is a field of the status of the JobSet name ("" where it
// has none yet, "0" for restarts none counted), or "" when it cannot be
// read: what the cases ask of a set.
func (jc *jobCase) jobSetStatus(name, field string) string {
	out, err := jc.kubectl(nil, "get", "jobset", name, "-o", "jsonpath={.status."+field+"}")
	if err != nil {
		jc.t.Logf("JobSet %s: %v", name, err)
		return ""
	}
	if field == "restarts" && len(out) == 0 {
		return "0"
	}
	return string(out)
}

// waitJobSet waits until the JobSet name ends and returns its terminal
// state (Completed or Failed).
func (jc *jobCase) waitJobSet(name string) string {
	t := jc.t
	t.Helper()
	for {
		if s := jc.jobSetStatus(name, "terminalState"); s != "" {
			return s
		}
		select {
		case <-jc.ctx.Done():
			t.Fatalf("JobSet %s did not end before the case's deadline", name)
		case <-time.After(pollInterval):
		}
	}
}

// testJobSetPromises: what the Jobs form promises its pods, in a JobSet:
// a pod outside the job cannot reach a worker's sshd while the launcher
// can (the NetworkPolicy selects the labels the JobSet controller keeps;
// on a node that enforces policies), the user's $ reaches the shell as
// typed (testExecExit3), and /dev/shm is the memory volume, not the
// runtime's 64 MiB.
func testJobSetPromises(t *testing.T, s *suite) {
	jc := s.startJobSet(t, "js-promises", kube.Baseline)
	p := jc.params(`sleep 25; mpirun -np 2 hostname && printf 'user text: pid %s, Y=%s.\n' "$$" "$Y" && df -k /dev/shm | tail -n 1`)
	p.Env = map[string]string{"X": "expanded", "Y": "$(X) $$"}
	on := true
	p.JobSet = &on
	res := jc.render(p)
	require.Contains(t, kinds(res.Objects), "NetworkPolicy")
	jc.apply(jc.yaml(res))
	if os.Getenv(NetpolEnv) == "1" {
		jc.createPod("outsider", nil, "sleep", "600")
		jc.waitPodIP("outsider")
		lp := jc.waitLog(jc.launcher, "all 2 workers reachable")
		workers := jc.podsOf("worker")
		require.Len(t, workers, 2)
		for _, w := range workers {
			ip := w.Status.PodIP
			require.NotEmpty(t, ip, "worker %s has an IP", w.name())
			require.Equal(t, "timeout", jc.probe("outsider", "outsider", ip, 2022), "a pod outside the job must not reach worker %s's sshd", w.name())
			require.Equal(t, "connected", jc.probe(lp, jc.launcher, ip, 2022), "the launcher reaches worker %s's sshd", w.name())
		}
		t.Log("jobset: the NetworkPolicy keeps a pod outside the job from the workers' sshd; the launcher reaches them")
	}
	require.Equal(t, "Completed", jc.waitJobSet(jc.name))
	_, log, code := jc.launcherResult()
	t.Logf("launcher log:\n%s", log)
	require.Zero(t, code)
	require.Regexp(t, `(?m)^user text: pid [0-9]+, Y=\$\(X\) \$\$\.$`, log, "$$ reached the shell as $$, and Y as written")
	m := regexp.MustCompile(`(?m)^\S+\s+(\d+)\s+\d+\s+\d+\s+\d+%\s+/dev/shm$`).FindStringSubmatch(log)
	require.NotNil(t, m, "df -k /dev/shm in the log")
	kb, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Greater(t, kb, 64*1024, "/dev/shm is the memory volume, larger than the runtime's 64 MiB")
	t.Logf("jobset: $ as typed, /dev/shm %d KiB", kb)
}

// launcherPy is a launcher program as an image's ENTRYPOINT has it (as
// horovodrun is one): it runs mpirun with its arguments.
const launcherPy = `import os, sys
print("launcher: mpirun", " ".join(sys.argv[1:]), flush=True)
os.execvp("mpirun", ["mpirun"] + sys.argv[1:])
`

// entrypointProgram mounts program as /training/train.py, the program the
// entrypoint image's ENTRYPOINT runs (test/node/image/entrypoint.json),
// and the jobs' own training programs at /opt/training.
func (jc *jobCase) entrypointProgram(program string) (volumes, mounts []any) {
	jc.t.Helper()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "entrypoint"},
		"data":     map[string]any{"train.py": program},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	prog, progMount := jc.trainingProgram()
	progMount["mountPath"] = "/opt/training"
	return []any{prog, map[string]any{"name": "entrypoint", "configMap": map[string]any{"name": "entrypoint"}}},
		[]any{progMount, map[string]any{"name": "entrypoint", "mountPath": trainingDir, "readOnly": true}}
}

// testJobSetOpenMPIEntrypoint: the launcher runs its image's ENTRYPOINT
// (a launcher program that runs mpirun) with args, no command rendered;
// its init container set up ssh and waited for the workers (mpi.sh wait),
// then mpirun trained on every worker through the key and config that
// left, and the JobSet controller ended the workers.
func testJobSetOpenMPIEntrypoint(t *testing.T, s *suite) {
	require.NotEmpty(t, s.node.EntrypointImage, "$%s: the node's image with a training program as its ENTRYPOINT", "TRAINSONNET_ENTRYPOINT_IMAGE")
	jc := s.startJobSet(t, "js-mpi-ep", kube.Baseline) // sshd as root
	volumes, mounts := jc.entrypointProgram(launcherPy)
	const workers = 3
	res, err := s.g.Render(jc.ctx, generator.NewParams("openmpi").
		Set("name", jc.name).
		Set("image", s.node.EntrypointImage).
		Set("imagePullPolicy", "Never").
		Set("workers", workers).
		Set("jobset", true).
		Set("entrypoint", true).
		Set("args", []string{"-x", "MASTER_ADDR=" + jc.name + "-worker-0-0." + jc.name, "-x", "MASTER_PORT=" + trainingPort, "python3", "/opt/training/train.py"}).
		Set("volumes", volumes).
		Set("volumeMounts", mounts))
	require.NoError(t, err)
	requireNoCommand(t, res, "launcher")
	log := jc.runJobSet("openmpi", res, "launcher", 1)
	require.Contains(t, log, "launcher: mpirun -x MASTER_ADDR=", "the image's ENTRYPOINT ran with the args")
	require.NotContains(t, log, "trainsonnet:", "nothing of ours around the ENTRYPOINT")
	jc.requireTrained("openmpi", workers, log)
	launcher := jc.pods(jobSetLabel + "=" + jc.name + "," + replicatedJobLabel + "=launcher")
	require.Len(t, launcher, 1)
	init := jc.logs(launcher[0].name(), "init")
	require.Contains(t, init, "trainsonnet: all "+strconv.Itoa(workers)+" workers reachable", "the init container waited for the workers; its log:\n%s", init)
}

// testJobSetTFEntrypoint: every task runs its image's ENTRYPOINT (the TF
// stand-in as the image's program), TF_CONFIG in its env; the workers'
// init containers waited for the parameter servers, and the JobSet
// controller stopped the parameter servers, which never end by themselves.
func testJobSetTFEntrypoint(t *testing.T, s *suite) {
	require.NotEmpty(t, s.node.EntrypointImage, "$%s: the node's image with a training program as its ENTRYPOINT", "TRAINSONNET_ENTRYPOINT_IMAGE")
	jc := s.startJobSet(t, "js-tf-ep", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	volumes, mounts := jc.entrypointProgram(standInTF)
	res, err := s.g.Render(jc.ctx, jc.tfParams().
		Set("ps.image", s.node.EntrypointImage).Set("worker.image", s.node.EntrypointImage).
		Set("entrypoint", true).Set("jobset", true).
		Set("volumes", volumes).Set("volumeMounts", mounts))
	require.NoError(t, err)
	requireNoCommand(t, res, "ps", "worker")
	log := jc.runJobSet("tf-distributed", res, "worker", 2)
	require.NotContains(t, log, "trainsonnet:", "nothing of ours around the ENTRYPOINT")
	for ps := range 2 {
		require.Contains(t, log, "<- ps "+strconv.Itoa(ps)+" has value", "the workers reached ps %d", ps)
	}
	for _, w := range jc.pods(jobSetLabel + "=" + jc.name + "," + replicatedJobLabel + "=worker") {
		init := jc.logs(w.name(), "init")
		require.Contains(t, init, "trainsonnet: all 2 endpoints reachable", "%s: its init container waited for the parameter servers; its log:\n%s", w.name(), init)
	}
}

// replicatedJob is a replicated Job of a rendered JobSet.
type replicatedJob struct {
	Name     string
	Replicas int
	Template batchv1.JobTemplateSpec
}

// replicatedJobs: the replicated Jobs of the JobSets a render holds.
func replicatedJobs(t *testing.T, res *generator.Result) []replicatedJob {
	t.Helper()
	var out []replicatedJob
	for _, o := range res.Objects {
		if o.Kind != "JobSet" {
			continue
		}
		var set struct {
			Spec struct{ ReplicatedJobs []replicatedJob }
		}
		require.NoError(t, json.Unmarshal(o.JSON(), &set))
		out = append(out, set.Spec.ReplicatedJobs...)
	}
	return out
}

// requireNoCommand: the main container of each replicated Job named has
// no command: the image's ENTRYPOINT runs.
func requireNoCommand(t *testing.T, res *generator.Result, jobs ...string) {
	t.Helper()
	seen := 0
	for _, rj := range replicatedJobs(t, res) {
		if slices.Contains(jobs, rj.Name) {
			seen++
			require.Empty(t, rj.Template.Spec.Template.Spec.Containers[0].Command, "%s: the image's ENTRYPOINT runs", rj.Name)
		}
	}
	require.Equal(t, len(jobs), seen, "the replicated Jobs %v", jobs)
}
