package operators_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
)

// The Kubeflow Trainer's TrainJobs (a TrainJob on each stock runtime, the
// Trainer's own YAML examples, and the TrainJob twin of each of the
// training operator's PyTorchJob examples: examples/trainer/), each given
// whole to gen -f with the runtime its example brings, compared process by
// process with the pods the Trainer, JobSet and the Job controller made of
// it (testdata/trainer-*). Where they differ, the difference is declared
// below, with the warning the render prints, or why trainsonnet's way is
// better (docs/migrating/trainjob.md).

// declaredTrainer: the differences of every TrainJob on a torch runtime.
var declaredTrainer = map[string]string{
	"retries":    "restarts of any pod counted against it",
	"shm":        "why: /dev/shm is a memory volume (shmSize) instead of the runtime's 64 MiB, which DataLoader workers and NCCL outgrow",
	"unbuffered": "why: Python's output is unbuffered (PYTHONUNBUFFERED=1) so that a pod's log has each line as it is printed, as the training operator's pods had it",
}

// declaredTrainJob: the differences of one recording, as declaredTrainer.
var declaredTrainJob = map[string]map[string]string{
	// the Trainer's torch policy gives a TrainJob without a trainer no
	// variables; trainsonnet's single pod has its rendezvous all the same
	"runtimes_torch-distributed-default": {
		"nodes":      "why: the Trainer sets no variable for a TrainJob without a trainer; trainsonnet's pods always have theirs",
		"rank":       "why: as nodes",
		"rendezvous": "why: as nodes",
	},
	"twins_pytorch_elastic_imagenet_imagenet":       {"requests": "is not carried"},
	"runtimes_deepspeed-distributed-one-node":       {"workers": "the Trainer made two hosts of it", "hostfile": "the Trainer made two hosts of it"},
	"twins_pytorch_mnist_v1_pytorch_job_mnist_gloo": noRendezvous,
	"twins_pytorch_mnist_v1_pytorch_job_mnist_mpi":  noRendezvous,
	"twins_pytorch_mnist_v1_pytorch_job_mnist_nccl": noRendezvous,
	"twins_pytorch_simple":                          noRendezvous,
	"twins_pytorch_smoke-dist_pytorch_job_sendrecv": noRendezvous,
	"yaml_03-kueue-integration":                     noRendezvous,
}

// noRendezvous: a program the Trainer starts without torchrun finds none
// of the variables that torch.distributed's env:// reads.
var noRendezvous = map[string]string{
	"nodes":      "why: the Trainer sets only torchrun's PET_* variables, which a program started without torchrun does not read: its init_process_group finds no MASTER_ADDR, RANK or WORLD_SIZE (the training operator's pods had them); trainsonnet's pods set both, so the job runs as it did under the operator",
	"rank":       "why: as nodes",
	"rendezvous": "why: as nodes",
}

// refusedFor: the recordings the Trainer's admission refused, and what
// trainsonnet's refusal names.
var refusedFor = map[string]string{
	// the Trainer: its runtime's initializer lacks a mount; trainsonnet
	// has no initializer step at all
	"yaml_05-multi-step": "spec.initializer: trainsonnet has no initializer step",
}

// madeNothing: the recordings of which the Trainer made no JobSet, and
// the warning trainsonnet's render gives instead.
var madeNothing = map[string]string{
	// the Trainer needs Volcano's PodGroup API for the runtime's policy
	"yaml_04-volcano-integration": "podGroupPolicy: not carried (no volcano PodGroup)",
}

// trainJobEntrypoints: the ENTRYPOINT of the images of the recordings
// whose trainer gives no command (the twins' are the PyTorchJob
// examples').
func trainJobEntrypoint(name string) []string {
	return entrypoints[strings.TrimPrefix(name, "twins_")]
}

func TestTrainJobs(t *testing.T) {
	files, err := filepath.Glob("testdata/trainer-*/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings: test/operators/record.sh trainer")
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			rec := readTrainJobRecording(t, f)
			params, err := g.JobParams(name+".yaml", rec.job, rec.runtimes...)
			if rec.refused != "" {
				// the Trainer refused it: so does trainsonnet, in one line
				if err == nil {
					_, err = g.Render(context.Background(), params)
				}
				require.Error(t, err, "the Trainer refused it: %s", rec.refused)
				assert.True(t, generator.IsValidation(err), "%v", err)
				assert.Contains(t, err.Error(), refusedFor[name], "why trainsonnet refuses it")
				return
			}
			if rec.proto == "mpi" {
				require.NoError(t, err)
				res, err := g.Render(context.Background(), params)
				require.NoError(t, err)
				theirs := trainerMPI(t, rec)
				ours := oursMPI(t, res)
				for _, a := range []aspects{theirs, ours} {
					hostsAndFirst(a)
				}
				declared := maps.Clone(declaredTrainerMPI)
				if params.Prototype() == "deepspeed" {
					maps.Copy(declared, declaredTrainerDeepSpeed)
				}
				compare(t, "Trainer", []aspects{theirs}, []aspects{ours}, strings.Join(res.Warnings, "\n"), declaredTrainJob[name], declared)
				return
			}
			if rec.proto == "jax" {
				require.NoError(t, err)
				res, err := g.Render(context.Background(), params)
				require.NoError(t, err)
				compare(t, "Trainer", trainerIndexed(t, rec, jaxVars), oursIndexedPods(t, res, jaxVars), strings.Join(res.Warnings, "\n"), declaredTrainJob[name], declaredTrainerIndexed)
				return
			}
			if rec.proto == "xgboost" {
				require.NoError(t, err)
				res, err := g.Render(context.Background(), params)
				require.NoError(t, err)
				compare(t, "Trainer", trainerIndexed(t, rec, xgboostVars), oursIndexedPods(t, res, xgboostVars), strings.Join(res.Warnings, "\n"), declaredTrainJob[name], declaredTrainerIndexed)
				return
			}
			require.Equal(t, "pytorch", rec.proto)
			require.NoError(t, err)
			res, err := g.Render(context.Background(), params)
			require.NoError(t, err)
			warnings := strings.Join(res.Warnings, "\n")
			if want, ok := madeNothing[name]; ok {
				require.Empty(t, rec.pods, "the Trainer made pods of it: drop it from madeNothing")
				assert.Contains(t, warnings, want)
				return
			}
			entry := trainJobEntrypoint(name)
			ours := oursPyTorch(t, res, entry)
			for _, a := range ours {
				a["unbuffered"] = unbuffered(a)
			}
			theirs := trainerPyTorch(t, rec, entry)
			for i, a := range theirs {
				require.NotEmpty(t, a["image"], "pod %d: no image read", i)
				require.NotEmpty(t, a["program"], "pod %d: no program read", i)
			}
			compare(t, "Trainer", theirs, ours, warnings, declaredTrainJob[name], declaredTrainer)

			// the Trainer's own runtime, as it held it, makes the same job
			// as trainsonnet's facts of it (stock_runtimes.json)
			if rec.snapshot != nil && rec.stock {
				again, err := g.Render(context.Background(), generator.NewParams("pytorch").
					AddFile("runtime.yaml", rec.snapshot).AddFile(name+".yaml", rec.job))
				require.NoError(t, err)
				a, err := res.YAML()
				require.NoError(t, err)
				b, err := again.YAML()
				require.NoError(t, err)
				assert.Equal(t, string(a), string(b), "the stock runtime's facts differ from the Trainer's snapshot of it")
			}
		})
	}
}

// unbuffered: PYTHONUNBUFFERED taken out of a pod's env aspect, as an
// aspect of its own.
func unbuffered(a aspects) string {
	words := strings.Fields(a["env"])
	i := slices.Index(words, "PYTHONUNBUFFERED=1")
	if i < 0 {
		return ""
	}
	a["env"] = strings.Join(slices.Delete(words, i, i+1), " ")
	return "1"
}

// trainJobRecording is what the Trainer made of one example.
type trainJobRecording struct {
	job      []byte           // the TrainJob, as applied
	runtimes []generator.File // the runtimes the example brought
	refused  string           // why the Trainer's admission refused it
	proto    string           // the prototype of its runtime's framework
	snapshot []byte           // the Trainer's snapshot of the runtime
	stock    bool             // the runtime is a stock one
	pods     []*corev1.Pod    // in completion-index order
	jobs     []*batchv1.Job
	hostfile string // the Trainer's MPI hostfile
	backoff  int32  // the Jobs' backoffLimit
}

func readTrainJobRecording(t *testing.T, file string) *trainJobRecording {
	t.Helper()
	rec := &trainJobRecording{backoff: 6}
	docs := splitYAML(t, file)
	rec.job = docs[0]
	head, _, _ := bytes.Cut(mustRead(t, file), []byte("\n---\n"))
	if _, why, ok := bytes.Cut(head, []byte("Refused when applied, by the operator's admission webhook: ")); ok {
		rec.refused = string(why)
	}
	var jobs []*batchv1.Job
	for _, d := range docs[1:] {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
			Data     map[string]string
		}
		require.NoError(t, unmarshal(d, &meta))
		switch {
		case strings.HasSuffix(meta.Kind, "TrainingRuntime"):
			rec.runtimes = append(rec.runtimes, generator.File{Name: meta.Metadata.Name + ".yaml", Data: d})
		case meta.Kind == "Pod":
			var p corev1.Pod
			require.NoError(t, unmarshal(d, &p))
			rec.pods = append(rec.pods, &p)
		case meta.Kind == "Job":
			var j batchv1.Job
			require.NoError(t, unmarshal(d, &j))
			jobs = append(jobs, &j)
		case meta.Kind == "ConfigMap" && meta.Data["runtime"] != "":
			rec.snapshot = []byte(meta.Data["runtime"])
		case meta.Kind == "ConfigMap" && meta.Data["hostfile"] != "":
			rec.hostfile = meta.Data["hostfile"]
		}
	}
	// the prototype: trainsonnet's choice by the runtime
	var tj struct {
		Spec struct {
			RuntimeRef struct{ Name, Kind string } `json:"runtimeRef"`
		}
	}
	require.NoError(t, yaml.Unmarshal(rec.job, &tj))
	rec.stock = tj.Spec.RuntimeRef.Kind == "" && slices.Contains([]string{"torch-distributed", "deepspeed-distributed", "mlx-distributed", "jax-distributed", "xgboost-distributed"}, tj.Spec.RuntimeRef.Name)
	rec.proto = "pytorch"
	if rec.snapshot != nil || len(rec.runtimes) > 0 {
		rt := rec.snapshot
		if rt == nil {
			rt = rec.runtimes[0].Data
		}
		var r struct {
			Spec struct {
				MLPolicy map[string]any `json:"mlPolicy"`
			}
		}
		require.NoError(t, yaml.Unmarshal(rt, &r))
		switch {
		case r.Spec.MLPolicy["mpi"] != nil:
			rec.proto = "mpi"
		case r.Spec.MLPolicy["jax"] != nil:
			rec.proto = "jax"
		case r.Spec.MLPolicy["xgboost"] != nil:
			rec.proto = "xgboost"
		case r.Spec.MLPolicy["torch"] == nil:
			rec.proto = "other"
		}
	}
	rec.jobs = jobs
	for _, j := range jobs {
		if j.Spec.BackoffLimit != nil {
			rec.backoff = *j.Spec.BackoffLimit
		}
	}
	if len(rec.pods) == 0 {
		// no pods (suspended, or refused by their admission): the Jobs'
		// templates, one pod per completion index
		for _, j := range jobs {
			for i := range int(*j.Spec.Completions) {
				p := &corev1.Pod{ObjectMeta: j.Spec.Template.ObjectMeta, Spec: j.Spec.Template.Spec}
				p.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": strconv.Itoa(i)}
				p.Labels = map[string]string{"jobset.sigs.k8s.io/jobset-name": j.Labels["jobset.sigs.k8s.io/jobset-name"]}
				rec.pods = append(rec.pods, p)
			}
		}
	}
	slices.SortFunc(rec.pods, func(a, b *corev1.Pod) int {
		ia, _ := strconv.Atoi(a.Annotations["batch.kubernetes.io/job-completion-index"])
		ib, _ := strconv.Atoi(b.Annotations["batch.kubernetes.io/job-completion-index"])
		return ia - ib
	})
	return rec
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(file))
	require.NoError(t, err)
	return data
}

// declaredTrainerMPI: the differences of every TrainJob on an mpi
// runtime, as declaredMPI.
var declaredTrainerMPI = map[string]string{
	"worker.program": "is not run: the workers run trainsonnet's sshd",
	"worker.retries": "a lost worker is made again by its Indexed Job",
	"rank0":          "why: the same hosts: the Trainer's hostfile lists its launcher last, trainsonnet's first (worker 0 is the launcher), so rank 0 is on the launcher's pod",
	// the Trainer's launcher is a node: a host of ranks, and so one node
	// fewer; trainsonnet's worker 0 is the launcher (launcherAsWorker),
	// the same hosts
}

// hostsAndFirst: the hostfile's lines as a set of hosts and slots, and the
// host of rank 0 (its first line) on its own.
func hostsAndFirst(a aspects) {
	var lines []string
	for _, l := range strings.Split(a["hostfile"], "; ") {
		_, l, _ = strings.Cut(l, ": ")
		lines = append(lines, l)
	}
	a["rank0"] = lines[0]
	slices.Sort(lines)
	a["hostfile"] = strings.Join(lines, "; ")
}

// declaredTrainerDeepSpeed: what differs more with deepspeed-distributed:
// DeepSpeed's runner instead of mpirun.
var declaredTrainerDeepSpeed = map[string]string{
	"launcher.program":  "here DeepSpeed's runner on worker 0 runs",
	"launcher.hostfile": "why: DeepSpeed's runner is given the hostfile (--hostfile), which Open MPI's default need not be",
	"launcher.fqdn":     "why: as launcher.hostfile: no Open MPI in the launcher's own command",
}

// trainerMPI: what the Trainer's launcher and nodes amount to.
func trainerMPI(t *testing.T, rec *trainJobRecording) aspects {
	t.Helper()
	a := aspects{}
	var nodes []*corev1.Pod
	for _, p := range rec.pods {
		if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node" {
			nodes = append(nodes, p)
		}
	}
	for _, j := range rec.jobs {
		if j.Labels["jobset.sigs.k8s.io/replicatedjob-name"] != "launcher" {
			continue
		}
		c := j.Spec.Template.Spec.Containers[0]
		launcherAspects(a, &c, &j.Spec.Template.Spec, j.Spec.BackoffLimit)
		a["launcher.program"] = strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
		env := envMap(c.Env)
		a["launcher.hostfile"] = "default " + strconv.FormatBool(env["OMPI_MCA_orte_default_hostfile"] != "")
		a["launcher.fqdn"] = env["OMPI_MCA_orte_keep_fqdn_hostnames"]
	}
	require.NotEmpty(t, nodes, "the Trainer's node pods")
	w := nodes[0]
	workerAspects(a, &w.Spec.Containers[0], &w.Spec, len(nodes))
	a["worker.program"] = strings.Join(append(slices.Clone(w.Spec.Containers[0].Command), w.Spec.Containers[0].Args...), " ")
	a["worker.retries"] = "restart " + string(w.Spec.RestartPolicy) + " in place, the set failed with a Job"
	a["hostfile"] = hostfile(rec.hostfile, false)
	return a
}

// declaredTrainerIndexed: the differences of every TrainJob on a jax or
// xgboost runtime.
var declaredTrainerIndexed = map[string]string{
	"retries":    "restarts of any pod counted against it",
	"shm":        "why: /dev/shm is a memory volume (shmSize) instead of the runtime's 64 MiB, which XLA and NCCL outgrow",
	"unbuffered": declaredTrainer["unbuffered"],
}

// rendezvousVars: the variables a framework's processes meet by, as
// aspects: the address of the first pod (host, or host:port with port's
// variable), the count, and the variable holding the pod's index.
type rendezvousVars struct {
	addr, port, count, index string
}

var (
	jaxVars     = rendezvousVars{addr: "JAX_COORDINATOR_ADDRESS", count: "JAX_NUM_PROCESSES", index: "JAX_PROCESS_ID"}
	xgboostVars = rendezvousVars{addr: "DMLC_TRACKER_URI", port: "DMLC_TRACKER_PORT", count: "DMLC_NUM_WORKER", index: "DMLC_TASK_ID"}
)

// indexedAspects: what a pod of a framework that meets by vars amounts
// to: its program (words), where it meets the others, how many, and
// whether it knows its index (i) from its completion index.
func indexedAspects(c *corev1.Container, spec *corev1.PodSpec, words []string, i int, first string, vars rendezvousVars) aspects {
	env := envMap(c.Env)
	a := oursCommon(c, spec)
	a["program"] = strings.Join(words, " ")
	addr := env[vars.addr]
	if vars.port != "" {
		addr += ":" + env[vars.port]
	}
	a["rendezvous"] = rendezvous(addr, first)
	a["count"] = env[vars.count]
	for _, e := range c.Env {
		if e.Name == vars.index && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			a["index"] = strconv.Itoa(i)
		}
	}
	a["unbuffered"] = unbuffered(a)
	return a
}

// trainerIndexed: each pod the Trainer made on a runtime whose processes
// meet by vars.
func trainerIndexed(t *testing.T, rec *trainJobRecording, vars rendezvousVars) []aspects {
	t.Helper()
	var out []aspects
	for i, p := range rec.pods {
		c := containerOf(t, p, "node")
		a := indexedAspects(c, &p.Spec, append(slices.Clone(c.Command), c.Args...), i, p.Labels["jobset.sigs.k8s.io/jobset-name"]+"-node-0-0", vars)
		a["retries"] = string(p.Spec.RestartPolicy) + ", " + strconv.Itoa(int(rec.backoff)) + " per job"
		out = append(out, a)
	}
	return out
}

// oursIndexedPods: each pod of a prototype's one Indexed Job whose
// processes meet by vars.
func oursIndexedPods(t *testing.T, res *generator.Result, vars rendezvousVars) []aspects {
	t.Helper()
	job, c, words := oursIndexed(t, res)
	var out []aspects
	for i := range int(*job.Spec.Completions) {
		a := indexedAspects(c, &job.Spec.Template.Spec, words, i, job.Spec.Template.Spec.Subdomain+"-worker-0", vars)
		a["retries"] = fmt.Sprintf("%s, %d per pod", job.Spec.Template.Spec.RestartPolicy, *job.Spec.BackoffLimitPerIndex)
		out = append(out, a)
	}
	return out
}

// oursIndexed: the one Indexed Job of a render, its container, and the
// words its sh -c 'exec ...' runs (under the runtime, if it is).
func oursIndexed(t *testing.T, res *generator.Result) (*batchv1.Job, *corev1.Container, []string) {
	t.Helper()
	var job batchv1.Job
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			require.NoError(t, yaml.Unmarshal(o.JSON(), &job))
		}
	}
	require.NotNil(t, job.Spec.Completions, "no Indexed Job")
	c := &job.Spec.Template.Spec.Containers[0]
	command := c.Command
	// the command under the pods' runtime (runtime.sh run [--group ...] --
	// sh -c ...), which runs it as it is
	if len(command) > 2 && command[1] == "/etc/trainsonnet/runtime.sh" {
		command = command[slices.Index(command, "--")+1:]
	}
	require.Equal(t, []string{"sh", "-c"}, command[:2])
	words := shellWords(t, command[2])
	require.Equal(t, "exec", words[0])
	return &job, c, words[1:]
}

// trainerPyTorch: each pod the Trainer made on a torch runtime, as
// aspects. entry is the image's ENTRYPOINT where the trainer gives no
// command.
func trainerPyTorch(t *testing.T, rec *trainJobRecording, entry []string) []aspects {
	t.Helper()
	var out []aspects
	for i, p := range rec.pods {
		c := containerOf(t, p, "node")
		env := envMap(c.Env)
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PET_NODE_RANK" }) {
			env["PET_NODE_RANK"] = strconv.Itoa(i) // its completion index
		}
		words := append(slices.Clone(c.Command), c.Args...)
		if len(c.Command) == 0 {
			words = append(slices.Clone(entry), c.Args...)
		}
		for j, w := range words {
			words[j] = kubeletExpand(w, env)
		}
		a := common(c, &p.Spec)
		first := p.Labels["jobset.sigs.k8s.io/jobset-name"] + "-node-0-0"
		launchAspects(a, words, env, first)
		a["retries"] = string(p.Spec.RestartPolicy) + ", " + strconv.Itoa(int(rec.backoff)) + " per job"
		a["unbuffered"] = unbuffered(a)
		out = append(out, a)
	}
	return out
}
