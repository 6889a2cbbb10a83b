package operators_test

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/trainsonnet/trainsonnet/generator"
)

// mpi-operator's v2beta1 examples, each given whole to `gen openmpi -f`,
// compared with what mpi-operator made of it: the launcher's command, the
// hostfile (a line per worker, its slots), the images, resources and
// retries of the launcher and the workers. Intel MPI and MPICH are refused
// (TestMPIJobsRefused).

// declaredMPI: the differences of every MPIJob, as declaredPyTorch.
var declaredMPI = map[string]string{
	// the workers run trainsonnet's sshd whatever their command: the
	// examples' images start their own (or run it as their ENTRYPOINT)
	"worker.program": "why: the workers run trainsonnet's sshd on an unprivileged port with a host key of their own; an image's sshd and its config are not needed",
	// the operator's workers restart in place (restartPolicy Never on the
	// pods, but the MPIJob replaces a failed worker); ours are replaced by
	// their Indexed Job, as often as the launcher is retried
	"worker.retries": "why: a lost worker is replaced by its Indexed Job, as often as the launcher may be retried",
}

var declaredMPIFor = map[string]map[string]string{
	// the worker's own command is the image's ENTRYPOINT: said
	"horovod_tensorflow-mnist":                    {"worker.program": "is not run: the workers run trainsonnet's sshd"},
	"tensorflow-benchmarks_tensorflow-benchmarks": {"worker.program": "is not run: the workers run trainsonnet's sshd"},
}

func TestMPIJobs(t *testing.T) {
	files, err := filepath.Glob("testdata/mpi-operator-*/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings: make record-operators")
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	ran := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		docs := splitYAML(t, f)
		var job struct {
			Spec struct {
				MPIImplementation string `json:"mpiImplementation"`
			} `json:"spec"`
		}
		require.NoError(t, unmarshal(docs[0], &job))
		if impl := job.Spec.MPIImplementation; impl != "" && impl != "OpenMPI" {
			continue // refused: TestMPIJobsRefused
		}
		ran++
		t.Run(name, func(t *testing.T) {
			theirs := operatorMPI(t, docs[1:])
			res, err := g.Render(context.Background(), generator.NewParams("openmpi").AddFile(name+".yaml", docs[0]))
			require.NoError(t, err)
			ours := oursMPI(t, res)
			warnings := strings.Join(res.Warnings, "\n")
			seen := map[string]bool{}
			for _, a := range slices.Sorted(maps.Keys(theirs)) {
				if theirs[a] == ours[a] {
					continue
				}
				seen[a] = true
				why, ok := declaredMPIFor[name][a]
				if !ok {
					why, ok = declaredMPI[a]
				}
				if !ok {
					t.Errorf("%s differs, undeclared:\n  operator:    %s\n  trainsonnet: %s", a, theirs[a], ours[a])
					continue
				}
				if !strings.HasPrefix(why, "why: ") && !strings.Contains(warnings, why) {
					t.Errorf("%s differs (operator %s, trainsonnet %s) and the render does not warn %q; it warns:\n%s", a, theirs[a], ours[a], why, warnings)
				}
			}
			for a := range declaredMPIFor[name] {
				if !seen[a] {
					t.Errorf("%s is declared as a difference of %s, and does not differ", a, name)
				}
			}
		})
	}
	require.Positive(t, ran, "no Open MPI example")
}

// TestMPIJobsRefused: the examples of MPI implementations openmpi does
// not set up are refused, naming spec.mpiImplementation.
func TestMPIJobsRefused(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, f := range []string{"pi_pi-intel", "pi_pi-mpich"} {
		files, _ := filepath.Glob("testdata/mpi-operator-*/" + f + ".yaml")
		require.Len(t, files, 1, f)
		docs := splitYAML(t, files[0])
		_, err := g.Render(context.Background(), generator.NewParams("openmpi").AddFile(f+".yaml", docs[0]).SetText("exec", "mpirun -n 2 /home/mpiuser/pi", "--exec"))
		var verr *generator.ValidationError
		require.ErrorAs(t, err, &verr, f)
		require.Len(t, verr.Problems, 1, "%s: %v", f, err)
		require.Equal(t, f+".yaml: spec.mpiImplementation", verr.Problems[0].Source)
	}
}

// operatorMPI: what mpi-operator's launcher and workers amount to.
func operatorMPI(t *testing.T, docs [][]byte) aspects {
	t.Helper()
	a := aspects{}
	var workers []*corev1.Pod
	for _, d := range docs {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		require.NoError(t, unmarshal(d, &meta))
		switch meta.Kind {
		case "Job":
			var j batchv1.Job
			require.NoError(t, unmarshal(d, &j))
			c := j.Spec.Template.Spec.Containers[0]
			launcherAspects(a, &c, &j.Spec.Template.Spec, j.Spec.BackoffLimit)
			a["launcher.program"] = strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
			env := envMap(c.Env)
			a["launcher.hostfile"] = "default " + strconv.FormatBool(env["OMPI_MCA_orte_default_hostfile"] != "")
			a["launcher.fqdn"] = env["OMPI_MCA_orte_keep_fqdn_hostnames"]
		case "Pod":
			var p corev1.Pod
			require.NoError(t, unmarshal(d, &p))
			if p.Labels["training.kubeflow.org/job-role"] == "worker" {
				workers = append(workers, &p)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, unmarshal(d, &cm))
			a["hostfile"] = hostfile(cm.Data["hostfile"], false)
		}
	}
	require.NotEmpty(t, workers)
	w := workers[0]
	workerAspects(a, &w.Spec.Containers[0], &w.Spec, len(workers))
	a["worker.program"] = strings.Join(append(slices.Clone(w.Spec.Containers[0].Command), w.Spec.Containers[0].Args...), " ")
	a["worker.retries"] = "replaced by the MPIJob, restart " + string(w.Spec.RestartPolicy)
	return a
}

// oursMPI: what trainsonnet's launcher and workers amount to.
func oursMPI(t *testing.T, res *generator.Result) aspects {
	t.Helper()
	a := aspects{}
	// runLauncherAsWorker: one Indexed Job, whose index 0 is the launcher
	// and a rank, as the operator's launcher is
	asWorker := true
	for _, o := range res.Objects {
		if o.Kind == "Job" && strings.HasSuffix(o.Name, "-launcher") {
			asWorker = false
		}
	}
	for _, o := range res.Objects {
		switch o.Kind {
		case "Job":
			var j batchv1.Job
			require.NoError(t, json.Unmarshal(o.JSON(), &j))
			c := j.Spec.Template.Spec.Containers[0]
			env := envMap(c.Env)
			if asWorker {
				launcherAspects(a, &c, &j.Spec.Template.Spec, j.Spec.BackoffLimitPerIndex)
				a["launcher.program"] = strings.Join(shellWords(t, env["TS_EXEC"]), " ")
				a["launcher.hostfile"] = "default " + strconv.FormatBool(env["OMPI_MCA_orte_default_hostfile"] != "")
				a["launcher.fqdn"] = env["OMPI_MCA_orte_keep_fqdn_hostnames"]
				workerAspects(a, &c, &j.Spec.Template.Spec, int(*j.Spec.Completions)-1)
				a["worker.program"] = "trainsonnet's sshd"
				a["worker.retries"] = "replaced by the Indexed Job"
			} else if strings.HasSuffix(j.Name, "-launcher") {
				launcherAspects(a, &c, &j.Spec.Template.Spec, j.Spec.BackoffLimit)
				a["launcher.program"] = strings.Join(shellWords(t, env["TS_EXEC"]), " ") // as sh -c runs it
				a["launcher.hostfile"] = "default " + strconv.FormatBool(env["OMPI_MCA_orte_default_hostfile"] != "")
				a["launcher.fqdn"] = env["OMPI_MCA_orte_keep_fqdn_hostnames"]
			} else {
				workerAspects(a, &c, &j.Spec.Template.Spec, int(*j.Spec.Completions))
				a["worker.program"] = "trainsonnet's sshd"
				a["worker.retries"] = "replaced by the Indexed Job"
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, json.Unmarshal(o.JSON(), &cm))
			if h, ok := cm.Data["hostfile"]; ok {
				a["hostfile"] = hostfile(h, asWorker)
			}
		}
	}
	return a
}

func launcherAspects(a aspects, c *corev1.Container, spec *corev1.PodSpec, backoff *int32) {
	for k, v := range common(c, spec) {
		if k != "requests" && k != "env" && k != "mounts" {
			a["launcher."+k] = v
		}
	}
	a["launcher.retries"] = "6"
	if backoff != nil {
		a["launcher.retries"] = strconv.Itoa(int(*backoff))
	}
}

func workerAspects(a aspects, c *corev1.Container, spec *corev1.PodSpec, n int) {
	for k, v := range common(c, spec) {
		if k != "requests" && k != "env" && k != "mounts" {
			a["worker."+k] = v
		}
	}
	a["workers"] = strconv.Itoa(n)
}

// hostfile: the hostfile's lines as worker index and slots, whatever
// each side names the hosts: the operator's launcher, a rank with
// runLauncherAsWorker, as "launcher"; and in trainsonnet's
// launcher-as-worker shape (asWorker) worker 0 is the launcher and worker
// i the operator's worker i-1.
func hostfile(text string, asWorker bool) string {
	var out []string
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		host, slots, _ := strings.Cut(line, " ")
		name, _, _ := strings.Cut(host, ".")
		at := "line " + strconv.Itoa(i) + ": "
		if strings.HasSuffix(name, "-launcher") || strings.HasSuffix(name, "-launcher-0-0") {
			out = append(out, at+"launcher "+slots)
			continue
		}
		if j := strings.LastIndex(name, "-node-0-"); j >= 0 {
			// a Trainer's JobSet: its replicated Job node's pod i
			out = append(out, at+"worker "+name[j+len("-node-0-"):]+" "+slots)
			continue
		}
		idx := name[strings.LastIndex(name, "-worker-")+len("-worker-"):]
		if n, err := strconv.Atoi(idx); asWorker && err == nil {
			if n == 0 {
				out = append(out, at+"launcher "+slots)
				continue
			}
			idx = strconv.Itoa(n - 1)
		}
		out = append(out, at+"worker "+idx+" "+slots)
	}
	return strings.Join(out, "; ")
}
