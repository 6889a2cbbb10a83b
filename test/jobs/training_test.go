package jobs_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// The training program and its evaluation (testdata/train.py,
// testdata/evaluate.py): a tiny MLP learns a function of 8 features from
// synthetic data drawn from fixed seeds, data-parallel with PyTorch's
// DistributedDataParallel over gloo, on the node's CPUs (Debian's
// python3-torch 1.13 in the test image).
var (
	//go:embed testdata/train.py
	trainPy string
	//go:embed testdata/xgb-train.py
	xgbTrainPy string
	//go:embed testdata/jax-standin.py
	jaxStandinPy string
	//go:embed testdata/evaluate.py
	evaluatePy string
	//go:embed testdata/deepspeed-standin.py
	deepspeedStandin string
)

// TestTraining runs real data-parallel training through the jobs the
// prototypes generate, with the manifests exactly as rendered: the same
// program on at least 3 ranks in every case, over the network, names,
// ports, NetworkPolicy and shared storage the manifests make. Each case
// logs
//
//	training: <prototype>: <N> ranks, loss <first> -> <last>, parameters identical on every rank
//
// only once every rank reported the same mean loss at its first and last
// step, the last at most half the first, and the same checksum of its
// parameters (testdata/train.py prints them).
//
//   - openmpi: the launcher's own mpirun starts the program on every slot
//     of the generated hostfile (3 workers, 1 slot each), over ssh; the
//     ranks take their rank and world size from Open MPI's environment and
//     meet at the hostfile's first host. Then mpirun runs an mpi4py
//     allreduce of a known vector, Horovod's core operation, whose sum
//     every rank checks. Rank 0 writes its checkpoint on a claim that
//     every pod mounts (volumes, volumeMounts).
//   - horovod: the Helm chart's first example, its driver running the
//     program with the chart's mpirun line on /horovod/generated/hostfile:
//     the driver (rank 0) and 2 workers. Horovod itself is stood in by
//     torch's DDP (no reachable registry has Horovod): what the chart's
//     job gives Horovod (ranks on every pod over ssh, the pods' network
//     and names) is what DDP uses here.
//   - pytorch-then-eval: the pytorch prototype, 3 pods running torchrun
//     (static rendezvous at worker 0, node rank = completion index), no
//     ssh, as user 1000 under Pod Security restricted; rank 0 writes its
//     checkpoint to trainDir on the claim (storage.claim.name). Then the
//     eval prototype's Job, on the same claim, loads that checkpoint and
//     reports the model's error on held-out synthetic data: the storage
//     path end to end, across two jobs.
//   - pytorch-elastic: the same with elastic.* (torchrun's c10d rendezvous
//     hosted by worker 0, 2 to 3 pods, maxRestarts 1).
//   - deepspeed: the deepspeed prototype's launcher runs deepspeed
//     --hostfile as rendered, over ssh to 3 workers of 1 slot; worker 0 is
//     the rendezvous. DeepSpeed itself is stood in (no reachable registry
//     has it): testdata/deepspeed-standin.py reads the hostfile as
//     DeepSpeed does, reaches each host with ssh and PDSH_SSH_ARGS as pdsh
//     does, and starts the program per slot with the environment
//     deepspeed.launcher.launch gives it. Rank 0 writes its checkpoint on
//     the claim.
//
// Debian's torchrun (PyTorch 1.13 on Python 3.11) cannot parse its own
// default of --redirects and --tee ("0": Python 3.11's IntFlag no longer
// lists a flag of value 0; PyTorch 2.0 fixed it), so the pytorch cases set
// PET_REDIRECTS=1 and PET_TEE=1 in env (the variables torchrun reads its
// options from), which tee each process's stdout to the pod's log, each
// line prefixed with [default<local rank>]:. The prototype renders no such
// workaround: a PyTorch image of its own needs none.
func TestTraining(t *testing.T) {
	runCases(t, []jobTest{
		{"openmpi", testTrainingOpenMPI},
		{"openmpi-launcher-as-worker", testTrainingOpenMPIAsWorker},
		{"horovod", testTrainingHorovod},
		{"horovod-driver-as-worker", testTrainingHorovodAsWorker},
		{"pytorch-then-eval", testTrainingPyTorchThenEval},
		{"pytorch-elastic", testTrainingPyTorchElastic},
		{"pytorch-entrypoint", testTrainingPyTorchEntrypoint},
		{"jax", testTrainingJAX},
		{"xgboost", testTrainingXGBoost},
		{"deepspeed", testTrainingDeepSpeed},
	})
}

const (
	// trainingDir is where the program's ConfigMap is mounted.
	trainingDir = "/training"
	// trainingPort is the rendezvous port of the MPI cases (rank 0's
	// TCPStore), MASTER_PORT.
	trainingPort = "29500"
)

// mpiAllreduce: every rank adds (rank + 1) x [1 2 3 4] with mpi4py's
// Allreduce (Horovod's core operation); with N ranks each must get
// N(N+1)/2 x [1 2 3 4].
const mpiAllreduce = `mpirun python3 -c '
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
v = np.array([1.0, 2.0, 3.0, 4.0]) * (c.Get_rank() + 1)
s = np.empty_like(v)
c.Allreduce(v, s, op=MPI.SUM)
print("allreduce: rank", c.Get_rank(), "of", c.Get_size(), "sum", " ".join(str(int(x)) for x in s), flush=True)
'`

// trainingProgram creates the ConfigMap of the program in the case's
// namespace and returns its volume and mount (at trainingDir), as a user
// adds a volume to a job.
func (jc *jobCase) trainingProgram() (volume, mount map[string]any) {
	jc.t.Helper()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "training"},
		"data":     map[string]any{"train.py": trainPy, "evaluate.py": evaluatePy, "jax-standin.py": jaxStandinPy, "xgb-train.py": xgbTrainPy},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	return map[string]any{"name": "training", "configMap": map[string]any{"name": "training"}},
		map[string]any{"name": "training", "mountPath": trainingDir, "readOnly": true}
}

// storeVolume is the case's claim (createLocalClaim) as a volume and its
// mount at storePath, for the prototypes without storage parameters.
func storeVolume() (volume, mount map[string]any) {
	return map[string]any{"name": "store", "persistentVolumeClaim": map[string]any{"claimName": storeClaim}},
		map[string]any{"name": "store", "mountPath": storePath}
}

// trainLine is what testdata/train.py prints on every rank (after
// torchrun's prefix, or mpirun's, if any).
var trainLine = regexp.MustCompile(`train: rank (\d+) of (\d+): loss (\S+) -> (\S+), parameters ([0-9a-f]{16})`)

// requireTrained checks the lines every rank printed into log and logs
// the case's training line: ranks lines, one per rank 0..ranks-1, each
// of ranks ranks, all with the same losses (the mean over the ranks), the
// last at most half the first, and the same parameters.
func (jc *jobCase) requireTrained(proto string, ranks int, log string) {
	t := jc.t
	t.Helper()
	seen := map[int][]string{}
	for _, l := range lines(log) {
		m := trainLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		require.NotContains(t, seen, rank, "rank %d reported twice:\n%s", rank, log)
		require.Equal(t, strconv.Itoa(ranks), m[2], "rank %d's world size:\n%s", rank, log)
		seen[rank] = m[3:]
	}
	require.Len(t, seen, ranks, "every rank reports once:\n%s", log)
	want := seen[0]
	for r := range ranks {
		require.Contains(t, seen, r, "rank %d reports:\n%s", r, log)
		require.Equal(t, want[0:2], seen[r][0:2], "rank %d's mean losses are rank 0's (all-reduced)", r)
		require.Equal(t, want[2], seen[r][2], "rank %d's parameters are rank 0's (DDP)", r)
	}
	first, err := strconv.ParseFloat(want[0], 64)
	require.NoError(t, err)
	last, err := strconv.ParseFloat(want[1], 64)
	require.NoError(t, err)
	require.LessOrEqual(t, last, first/2, "the loss at least halves: %s -> %s", want[0], want[1])
	t.Logf("training: %s: %d ranks, loss %s -> %s, parameters identical on every rank", proto, ranks, want[0], want[1])
}

// requireAllreduce checks mpiAllreduce's line from every rank.
func (jc *jobCase) requireAllreduce(ranks int, log string) {
	jc.t.Helper()
	k := ranks * (ranks + 1) / 2
	sum := fmt.Sprintf("sum %d %d %d %d", k, 2*k, 3*k, 4*k)
	for r := range ranks {
		require.NotEmpty(jc.t, lineWith(log, fmt.Sprintf("allreduce: rank %d of %d %s", r, ranks, sum)),
			"rank %d's allreduce gives %s:\n%s", r, sum, log)
	}
	jc.t.Logf("allreduce: %d ranks, %s on every rank", ranks, sum)
}

// testTrainingOpenMPI: 3 workers of 1 slot; the launcher's mpirun runs the
// program on every slot of the hostfile, then the allreduce.
func testTrainingOpenMPI(t *testing.T, s *suite) {
	jc := s.start(t, "train-mpi", kube.Baseline) // sshd as root
	jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	const workers = 3
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + trainingDir + `/train.py --checkpoint ` + storePath + `/openmpi && ` + mpiAllreduce + ` && ls -l ` + storePath + `/openmpi`
	res, err := s.g.Render(jc.ctx, generator.NewParams("openmpi").
		Set("name", jc.name).
		Set("image", s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", workers).
		Set("exec", afterLauncherResolves(jc.name+"-launcher", exec)).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-launcher"), "launcher Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	_, log, code := jc.launcherResult()
	t.Logf("launcher log:\n%s", log)
	require.Zero(t, code, "launcher exit code")
	hostfile, err := jc.kubectl(nil, "get", "configmap", jc.name+"-config", "-o", "jsonpath={.data.hostfile}")
	require.NoError(t, err)
	require.Equal(t, workers, strings.Count(string(hostfile), " slots=1\n"), "hostfile: %d slots", workers)
	jc.requireTrained("openmpi", workers, log)
	jc.requireAllreduce(workers, log)
	require.NotEmpty(t, lineWith(log, "train: rank 0 wrote "+storePath+"/openmpi/model.pt"), "rank 0's checkpoint")
	require.NotEmpty(t, lineWith(log, "model.pt"), "the launcher sees the checkpoint on the claim")
	jc.requireNothingRunning()
}

// testTrainingOpenMPIAsWorker: openmpi with --launcher-as-worker: one
// Indexed Job of 3 pods, index 0 the launcher and a rank; its mpirun
// trains on every slot, and the Job controller ends the job with index 0
// (successPolicy) and stops the other two, which serve sshd until then
// and tell or hear no end of their own.
func testTrainingOpenMPIAsWorker(t *testing.T, s *suite) {
	jc := s.start(t, "train-mpiw", kube.Baseline) // sshd as root
	jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	const workers = 3
	exec := `mpirun -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /etc/trainsonnet/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + trainingDir + `/train.py --checkpoint ` + storePath + `/openmpi-w && ` + mpiAllreduce
	res, err := s.g.Render(jc.ctx, generator.NewParams("openmpi").
		Set("name", jc.name).
		Set("image", s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", workers).
		Set("launcherAsWorker", true).
		Set("exec", exec).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	job := jc.name + "-worker"
	require.Equal(t, "Complete", jc.waitJob(job), "the one Job, ended by its success policy")
	j, err := jc.getJob(job)
	require.NoError(t, err)
	var met, complete time.Time
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case "SuccessCriteriaMet":
			met = c.LastTransitionTime
		case "Complete":
			complete = c.LastTransitionTime
		}
	}
	require.False(t, met.IsZero(), "index 0's success met the success policy: %+v", j.Status.Conditions)
	lead := jc.pods("job-name=" + job + ",batch.kubernetes.io/job-completion-index=0")
	require.NotEmpty(t, lead)
	log := jc.logs(lead[len(lead)-1].name(), "worker")
	t.Logf("worker 0 (the launcher) log:\n%s", log)
	require.Contains(t, log, "trainsonnet: tiers: wait=python3 serve-end=job hear-end=- watch=-\n")
	require.NotContains(t, log, "the job is over", "no end port: the Job controller ends the job")
	jc.requireTrained("openmpi", workers, log)
	jc.requireAllreduce(workers, log)
	// The other indexes were the Job controller's to stop: Complete comes
	// once every pod has terminated.
	jc.requireNothingRunning()
	t.Logf("openmpi launcher-as-worker: %d pods, success policy met %.0f s after the apply, the other workers stopped %.0f s later (Complete)",
		workers, met.Sub(jc.begin).Seconds(), complete.Sub(met).Seconds())
	for _, p := range jc.pods("job-name=" + job + ",batch.kubernetes.io/job-completion-index!=0") {
		wlog := jc.logs(p.name(), "worker")
		require.Contains(t, wlog, "trainsonnet: tiers: wait=- serve-end=- hear-end=- watch=getent\n", p.name())
		require.NotContains(t, wlog, "the launcher says", "%s heard no end of ours", p.name())
	}
}

// testTrainingHorovod: the chart's first example, its driver running the
// program with the chart's mpirun line (driver + 2 workers = 3 ranks).
func testTrainingHorovod(t *testing.T, s *suite) {
	jc := s.start(t, "train-hvd", kube.Baseline) // root pods, as the chart's
	jc.launcher = "driver"
	jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok, "test image %q has a tag", s.node.Image)
	example, err := os.ReadFile(chartExample)
	require.NoError(t, err)
	// The chart's mpirun line, with the program in place of its Keras
	// script: rank 0 (the driver, the hostfile's first host) is the
	// rendezvous of torch.distributed.
	args := `mpirun -np 3 --hostfile /horovod/generated/hostfile --mca orte_keep_fqdn_hostnames t --allow-run-as-root` +
		` -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /horovod/generated/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + trainingDir + `/train.py --checkpoint ` + storePath + `/horovod`
	res, err := s.g.Render(jc.ctx, generator.NewParams("horovod").Set("name", jc.name).
		AddFile(chartExample, example).
		AddFile("node.yaml", []byte(fmt.Sprintf(nodeValues, repo, tag, afterLauncherResolves(jc.name+"-driver", args)))).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-driver"), "driver Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	_, log, code := jc.launcherResult()
	t.Logf("driver log:\n%s", log)
	require.Zero(t, code, "driver exit code")
	jc.requireTrained("horovod", 3, log)
	require.NotEmpty(t, lineWith(log, "train: rank 0 wrote "+storePath+"/horovod/model.pt"), "rank 0, the driver, writes the checkpoint")
	jc.requireNothingRunning()
}

// testTrainingHorovodAsWorker: the chart's first example whose driver's
// pod is a worker's: the driver runs as worker 0 of one Indexed Job of 3
// pods, the chart's mpirun line trains on all three, and the Job
// controller ends the job with worker 0 and stops the other two.
func testTrainingHorovodAsWorker(t *testing.T, s *suite) {
	jc := s.start(t, "train-hvdw", kube.Baseline) // root pods, as the chart's
	jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok, "test image %q has a tag", s.node.Image)
	example, err := os.ReadFile(chartExample)
	require.NoError(t, err)
	args := `mpirun -np 3 --hostfile /horovod/generated/hostfile --mca orte_keep_fqdn_hostnames t --allow-run-as-root` +
		` -x MASTER_ADDR="$(awk 'NR == 1 { print $1 }' /horovod/generated/hostfile)" -x MASTER_PORT=` + trainingPort +
		` python3 ` + trainingDir + `/train.py --checkpoint ` + storePath + `/horovod-w`
	res, err := s.g.Render(jc.ctx, generator.NewParams("horovod").Set("name", jc.name).
		AddFile(chartExample, example).
		AddFile("node.yaml", []byte(fmt.Sprintf(nodeValuesAsWorker, repo, tag, args))).
		Set("volumes", []any{prog, store}).
		Set("volumeMounts", []any{progMount, storeMount}))
	require.NoError(t, err)
	require.False(t, hasObject(res, "Job", jc.name+"-driver"), "the driver is worker 0: no Job of its own")
	jc.apply(jc.yaml(res))

	job := jc.name + "-worker"
	require.Equal(t, "Complete", jc.waitJob(job), "the one Job, ended by its success policy")
	hostfile, err := jc.kubectl(nil, "get", "configmap", jc.name+"-config", "-o", "jsonpath={.data.hostfile}")
	require.NoError(t, err)
	require.Equal(t, jc.workerHost(0)+" slots=1\n"+jc.workerHost(1)+" slots=1\n"+jc.workerHost(2)+" slots=1\n", string(hostfile), "hostfile: worker 0, the driver, first")
	j, err := jc.getJob(job)
	require.NoError(t, err)
	var met, complete time.Time
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case "SuccessCriteriaMet":
			met = c.LastTransitionTime
		case "Complete":
			complete = c.LastTransitionTime
		}
	}
	require.False(t, met.IsZero(), "index 0's success met the success policy: %+v", j.Status.Conditions)
	lead := jc.pods("job-name=" + job + ",batch.kubernetes.io/job-completion-index=0")
	require.NotEmpty(t, lead)
	log := jc.logs(lead[len(lead)-1].name(), "worker")
	t.Logf("worker 0 (the driver) log:\n%s", log)
	require.NotContains(t, log, "the job is over", "no end port: the Job controller ends the job")
	jc.requireTrained("horovod", 3, log)
	jc.requireNothingRunning()
	t.Logf("horovod driver-as-worker: 3 pods, success policy met %.0f s after the apply, the other workers stopped %.0f s later (Complete)",
		met.Sub(jc.begin).Seconds(), complete.Sub(met).Seconds())
}

// testTrainingDeepSpeed: 3 workers of 1 slot; worker 0's deepspeed (the
// stand-in) starts the program on every slot of the generated hostfile
// over ssh, its own among them, and the Job controller ends the job with
// worker 0.
func testTrainingDeepSpeed(t *testing.T, s *suite) {
	jc := s.start(t, "train-ds", kube.Baseline) // sshd as root
	jc.createLocalClaim(storeClaim)
	const workers = 3
	res, err := s.g.Render(jc.ctx, jc.deepspeedParams(workers, trainingDir+"/train.py --checkpoint "+storePath+"/deepspeed"))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "the Job, ended by worker 0 (its success policy)")
	log := asWorkerLog(jc)
	t.Logf("worker 0 (deepspeed) log:\n%s", log)
	require.Contains(t, log, "trainsonnet: tiers: wait=python3 serve-end=job hear-end=- watch=-\n")
	require.NotEmpty(t, lineWith(log, "running TS_EXEC: deepspeed --hostfile /etc/trainsonnet/hostfile --master_addr "+jc.name+"-worker-0."+jc.name+" --master_port "+trainingPort),
		"the launcher runs deepspeed as rendered")
	jc.requireTrained("deepspeed", workers, log)
	require.NotEmpty(t, lineWith(log, "train: rank 0 wrote "+storePath+"/deepspeed/model.pt"), "rank 0's checkpoint")
	jc.requireNothingRunning()
}

// deepspeedParams: the deepspeed prototype's job of the test image, with
// the stand-in deepspeed first in PATH (from a ConfigMap of the case's,
// as a user adds a tool), the training program and the claim mounted, and
// exec after deepspeed's options, rank 0's rendezvous at trainingPort.
func (jc *jobCase) deepspeedParams(workers int, exec string) *generator.Params {
	jc.t.Helper()
	prog, progMount := jc.trainingProgram()
	store, storeMount := storeVolume()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "deepspeed"},
		"data":     map[string]any{"deepspeed": deepspeedStandin},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	const bin = "/opt/deepspeed/bin"
	tool := map[string]any{"name": "deepspeed", "configMap": map[string]any{"name": "deepspeed", "defaultMode": 0o555}}
	toolMount := map[string]any{"name": "deepspeed", "mountPath": bin, "readOnly": true}
	return generator.NewParams("deepspeed").
		Set("name", jc.name).
		Set("image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", workers).
		Set("gpu", 0).
		Set("masterPort", 29500).
		Set("exec", exec).
		Set("env", map[string]string{"PATH": bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}).
		Set("volumes", []any{prog, store, tool}).
		Set("volumeMounts", []any{progMount, storeMount, toolMount})
}

// pytorchParams: 3 pods of the test image running the program as user
// 1000, with Debian's torchrun worked around (see TestTraining).
func (jc *jobCase) pytorchParams() *generator.Params {
	jc.t.Helper()
	prog, progMount := jc.trainingProgram()
	return generator.NewParams("pytorch").
		Set("name", jc.name).
		Set("image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", 3).
		Set("runAsUser", 1000).
		Set("runAsGroup", 1000).
		Set("env", map[string]string{"PET_REDIRECTS": "1", "PET_TEE": "1"}).
		Set("volumes", []any{prog}).
		Set("volumeMounts", []any{progMount})
}

// runPyTorch applies a rendered pytorch job, follows its pods' logs while
// they run (once worker 0 ends, the Job stops the pods still running and
// deletes them, with their logs), waits until the Job is Complete and
// returns the logs of all its pods.
func (jc *jobCase) runPyTorch(res *generator.Result, pods int) string {
	t := jc.t
	t.Helper()
	jc.apply(jc.yaml(res))
	job := jc.name + "-worker"
	logs := jc.followLogs("job-name="+job, pods)
	require.Equal(t, "Complete", jc.waitJob(job), "the pytorch Job")
	log := logs()
	t.Logf("the pods' logs:\n%s", log)
	j, err := jc.getJob(job)
	require.NoError(t, err)
	require.Zero(t, j.Status.Failed, "no pod failed")
	return log
}

// followLogs waits until pods pods match selector and each has started,
// then follows their logs (kubectl logs -f) until they end. The returned
// function waits for that (at most a minute more) and returns the logs,
// every line prefixed with its pod.
func (jc *jobCase) followLogs(selector string, pods int) func() string {
	t := jc.t
	t.Helper()
	for {
		// pods of this run of the job: not Pending, not going, not
		// failed (a preempted job's pods linger terminating until its
		// readmission; following them read an empty log once)
		started := 0
		for _, p := range jc.pods(selector) {
			if p.Status.Phase != "Pending" && p.Status.Phase != "Failed" && p.Metadata.DeletionTimestamp == "" {
				started++
			}
		}
		if started >= pods {
			break
		}
		select {
		case <-jc.ctx.Done():
			t.Fatalf("%d pods of %s not started before the case's deadline", pods, selector)
		case <-time.After(pollInterval):
		}
	}
	k := *jc.s.k
	k.Timeout = caseTimeout
	done := make(chan string, 1)
	go func() {
		out, err := k.Run(jc.ctx, nil, "--namespace", jc.ns, "logs", "--follow", "--selector", selector,
			"--prefix", "--max-log-requests", strconv.Itoa(pods+2), "--tail", "-1")
		s := string(out)
		if err != nil {
			s += "\n(kubectl logs: " + err.Error() + ")"
		}
		done <- s
	}()
	return func() string {
		select {
		case s := <-done:
			return s
		case <-time.After(time.Minute):
			t.Fatal("kubectl logs --follow did not end a minute after the Job did")
			return ""
		}
	}
}

// testTrainingPyTorchThenEval: the pytorch prototype trains on 3 pods and
// writes its checkpoint to the claim; the eval prototype evaluates it.
func testTrainingPyTorchThenEval(t *testing.T, s *suite) {
	jc := s.start(t, "train-torch", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.pytorchParams().
		Set("storage.claim.name", storeClaim).
		Set("exec", trainingDir+`/train.py --checkpoint "$TRAIN_DIR"`))
	require.NoError(t, err)
	require.Empty(t, res.Warnings, "with the claim, nothing to warn about")
	log := jc.runPyTorch(res, 3)
	jc.requireTrained("pytorch", 3, log)
	require.NotEmpty(t, lineWith(log, "train: rank 0 wrote "+storePath+"/train/model.pt"), "rank 0 writes to trainDir")

	// eval, on the same claim, reads TRAIN_DIR/model.pt and writes its
	// metrics into EVAL_DIR, as user 1000.
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok, "test image %q has a tag", s.node.Image)
	prog, progMount := map[string]any{"name": "training", "configMap": map[string]any{"name": "training"}},
		map[string]any{"name": "training", "mountPath": trainingDir, "readOnly": true}
	res, err = s.g.Render(jc.ctx, generator.NewParams("eval").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("image.repository", repo).Set("image.tag", tag).Set("image.pullPolicy", "Never").
		Set("exec", `python3 `+trainingDir+`/evaluate.py "$TRAIN_DIR/model.pt" "$EVAL_DIR" && cat "$EVAL_DIR/metrics.json"`).
		Set("volumes", []any{prog}).
		Set("volumeMounts", []any{progMount}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))
	evalJob := jc.name + "-eval"
	require.Equal(t, "Complete", jc.waitJob(evalJob), "eval's Job")
	evalPods := jc.pods("job-name=" + evalJob)
	require.Len(t, evalPods, 1)
	evalLog := jc.logs(evalPods[0].name(), "")
	t.Logf("eval's log:\n%s", evalLog)
	m := regexp.MustCompile(`eval: (\S+) \((\d+) steps on (\d+) ranks\): mse (\S+), r2 (\S+) on (\d+) held-out samples`).FindStringSubmatch(evalLog)
	require.NotNil(t, m, "eval reports its metric")
	assert.Equal(t, storePath+"/train/model.pt", m[1], "eval read the checkpoint the training wrote")
	assert.Equal(t, "3", m[3], "a checkpoint of the 3-rank training")
	r2, err := strconv.ParseFloat(m[5], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, r2, 0.9, "the trained model explains most of the held-out data's variance")
	require.Contains(t, evalLog, `"r2": `, "eval wrote metrics.json into EVAL_DIR")
	t.Logf("eval: %s: mse %s, r2 %s on %s held-out samples", m[1], m[4], m[5], m[6])
}

// testTrainingPyTorchEntrypoint: a Kubeflow Trainer TrainJob whose
// trainer gives only args, on an image whose ENTRYPOINT is the training
// program (the test image with python3 /training/train.py as its
// ENTRYPOINT: test/node/image/entrypoint.json), given whole to gen:
// the container has no command, the image's ENTRYPOINT runs on 3 pods,
// which meet through MASTER_ADDR, RANK and WORLD_SIZE (torch's env://),
// as user 1000 from the TrainJob's runtimePatches, under restricted.
func testTrainingPyTorchEntrypoint(t *testing.T, s *suite) {
	jc := s.start(t, "train-entry", kube.Restricted)
	jc.trainingProgram()
	trainJob := `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: ` + jc.name + `}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 3
    image: ` + s.node.EntrypointImage + `
    args: [--steps, "60"]
  runtimePatches:
    - manager: trainsonnet.test/e2e
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        securityContext: {runAsUser: 1000, runAsGroup: 1000}
                        volumes: [{name: training, configMap: {name: training}}]
                        containers:
                          - name: node
                            volumeMounts: [{name: training, mountPath: ` + trainingDir + `, readOnly: true}]
`
	res, err := s.g.Render(jc.ctx, generator.NewParams("pytorch").AddFile("trainjob.yaml", []byte(trainJob)))
	require.NoError(t, err)
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			var j batchv1.Job
			require.NoError(t, json.Unmarshal(o.JSON(), &j))
			c := j.Spec.Template.Spec.Containers[0]
			require.Empty(t, c.Command, "the image's ENTRYPOINT runs")
			require.Equal(t, []string{"--steps", "60"}, c.Args)
		}
	}
	log := jc.runPyTorch(res, 3)
	jc.requireTrained("pytorch-entrypoint", 3, log)
}

// xgbLine is what testdata/xgb-train.py prints on every worker.
var xgbLine = regexp.MustCompile(`xgboost: worker (\d+) of (\d+): rounds (\d+)\.\.(\d+), rmse (\S+) -> (\S+), model ([0-9a-f]{16})`)

// requireXGBoost checks that every one of n workers trained rounds
// from..to and ended with the same model, its rmse (over all shards)
// lower than at the start, and returns the model's hash.
func (jc *jobCase) requireXGBoost(n, from, to int, log string) string {
	t := jc.t
	t.Helper()
	models := map[string]string{}
	for _, l := range lines(log) {
		if m := xgbLine.FindStringSubmatch(l); m != nil {
			require.Equal(t, strconv.Itoa(n), m[2], "worker %s's world:\n%s", m[1], log)
			require.Equal(t, []string{strconv.Itoa(from), strconv.Itoa(to)}, m[3:5], "worker %s's rounds", m[1])
			before, _ := strconv.ParseFloat(m[5], 64)
			after, _ := strconv.ParseFloat(m[6], 64)
			require.Less(t, after, before, "worker %s's rmse falls", m[1])
			models[m[1]] = m[7]
		}
	}
	require.Len(t, models, n, "every worker reports:\n%s", log)
	for w, h := range models {
		require.Equal(t, models["0"], h, "worker %s's model is worker 0's (every round all-reduced)", w)
	}
	return models["0"]
}

// testTrainingXGBoost: the xgboost prototype's 3 pods train distributed
// XGBoost for real (Debian's python3-xgboost 1.7.4, testdata/xgb-train.py):
// worker 0 starts the Rabit tracker on DMLC_TRACKER_PORT, every worker
// joins it through the DMLC_* variables and trains on a shard of its own,
// 30 rounds, as user 1000 under restricted; worker 0 checkpoints the
// model on the claim every 10 rounds. Then a second job of the same
// training, to 50 rounds, resumes from the checkpoint: rounds 30..50.
func testTrainingXGBoost(t *testing.T, s *suite) {
	jc := s.start(t, "train-xgb", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	prog, progMount := jc.trainingProgram()
	render := func(name string, rounds int) *generator.Result {
		res, err := s.g.Render(jc.ctx, generator.NewParams("xgboost").
			Set("name", name).
			Set("image", jc.s.node.Image).
			Set("imagePullPolicy", "Never").
			Set("workers", 3).
			Set("runAsUser", 1000).
			Set("runAsGroup", 1000).
			Set("storage.claim.name", storeClaim).
			Set("exec", "python3 "+trainingDir+`/xgb-train.py --rounds `+strconv.Itoa(rounds)+` --checkpoint "$TRAIN_DIR"`).
			Set("volumes", []any{prog}).
			Set("volumeMounts", []any{progMount}))
		require.NoError(t, err)
		return res
	}
	run := func(name string, rounds int) string {
		jc.apply(jc.yaml(render(name, rounds)))
		job := name + "-worker"
		logs := jc.followLogs("job-name="+job, 3)
		require.Equal(t, "Complete", jc.waitJob(job), "the xgboost Job")
		log := logs()
		t.Logf("the pods' logs:\n%s", log)
		return log
	}
	log := run(jc.name, 30)
	first := jc.requireXGBoost(3, 0, 30, log)
	require.NotEmpty(t, lineWith(log, "xgboost: worker 0 wrote "+storePath+"/train/model.json at round 30"), "worker 0 checkpoints on the claim")
	log = run(jc.name+"-more", 50)
	for w := range 3 {
		require.NotEmpty(t, lineWith(log, fmt.Sprintf("xgboost: worker %d resumed from round 30", w)), "worker %d resumes", w)
	}
	second := jc.requireXGBoost(3, 30, 50, log)
	require.NotEqual(t, first, second, "the resumed training goes on")
	t.Logf("xgboost: 3 workers, one model after 30 rounds (%s), resumed to 50 (%s)", first, second)
}

// testTrainingJAX: the jax prototype's 3 pods meet at worker 0's
// coordinator through JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and
// JAX_PROCESS_ID. JAX itself is stood in (no reachable registry has it):
// testdata/jax-standin.py does what jax.distributed.initialize() does over
// those variables (process 0 serves the coordinator, every process
// registers its id, a barrier) and an all-reduce of (id + 1) through it.
func testTrainingJAX(t *testing.T, s *suite) {
	jc := s.start(t, "train-jax", kube.Restricted)
	prog, progMount := jc.trainingProgram()
	res, err := s.g.Render(jc.ctx, generator.NewParams("jax").
		Set("name", jc.name).
		Set("image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("workers", 3).
		Set("runAsUser", 1000).
		Set("runAsGroup", 1000).
		Set("exec", "python3 "+trainingDir+"/jax-standin.py").
		Set("volumes", []any{prog}).
		Set("volumeMounts", []any{progMount}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))
	job := jc.name + "-worker"
	logs := jc.followLogs("job-name="+job, 3)
	require.Equal(t, "Complete", jc.waitJob(job), "the jax Job")
	log := logs()
	t.Logf("the pods' logs:\n%s", log)
	for i := range 3 {
		require.NotEmpty(t, lineWith(log, fmt.Sprintf("jax-standin: process %d of 3: sum 6", i)), "process %d met the others:\n%s", i, log)
	}
	t.Logf("jax: 3 processes met at %s-worker-0's coordinator, sum 6 on each", jc.name)
}

// testTrainingPyTorchElastic: torchrun's c10d rendezvous on worker 0,
// with 2 to 3 pods; all 3 join.
func testTrainingPyTorchElastic(t *testing.T, s *suite) {
	jc := s.start(t, "train-elastic", kube.Restricted)
	res, err := s.g.Render(jc.ctx, jc.pytorchParams().
		Set("elastic.minNodes", 2).
		Set("elastic.maxNodes", 3).
		Set("elastic.maxRestarts", 1).
		Set("exec", trainingDir+"/train.py"))
	require.NoError(t, err)
	log := jc.runPyTorch(res, 3)
	jc.requireTrained("pytorch", 3, log)
}
