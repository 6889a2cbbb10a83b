package operators_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// The training operator's PyTorchJob examples, each given whole to `gen
// pytorch -f`, compared process by process with the pods the operator
// made of it (testdata/training-operator-*). Where they differ, the
// difference is declared below: with the warning the render prints, or,
// where trainsonnet's way is better and said in docs/migrating/pytorchjob.md, why.

// entrypoints: the images' ENTRYPOINT of the examples whose containers
// only have args (from each example's Dockerfile): what both sides' pods
// run, a container without a command.
var entrypoints = map[string][]string{
	"pytorch_mnist_v1_pytorch_job_mnist_gloo": {"python", "/opt/mnist/src/mnist.py"},
	"pytorch_mnist_v1_pytorch_job_mnist_nccl": {"python", "/opt/mnist/src/mnist.py"},
	"pytorch_mnist_v1_pytorch_job_mnist_mpi":  {"python", "/opt/mnist/src/mnist.py"},
	"pytorch_smoke-dist_pytorch_job_sendrecv": {"python", "/opt/mlkube/dist_sendrecv.py"},
}

// declared: the differences of every PyTorchJob: aspect -> the warning
// the render prints (a part of it), or "why: ..." where trainsonnet's way
// is better and docs/migrating/pytorchjob.md says so.
var declaredPyTorch = map[string]string{
	// OnFailure without a backoffLimit (every example)
	"retries": "the operator restarted failed pods without limit",
	"init":    "why: the operator's workers wait for the master's DNS name in an init container (alpine, pulled); torchrun's store waits for rank 0 itself, and nothing else is pulled",
	"shm":     "why: /dev/shm is a memory volume (shmSize) instead of the runtime's 64 MiB, which DataLoader workers and NCCL outgrow",
}

// declaredFor: the differences of one example, as declaredPyTorch.
var declaredFor = map[string]map[string]string{
	"pytorch_elastic_echo_echo":         {"procs": "the operator's default, auto"},
	"pytorch_elastic_imagenet_imagenet": {"procs": "the operator's default, auto", "requests": "is not carried"},
}

func TestPyTorchJobs(t *testing.T) {
	files, err := filepath.Glob("testdata/training-operator-*/pytorch_*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings: make record-operators")
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			job, created := readRecording(t, f)
			params := generator.NewParams("pytorch").AddFile(name+".yaml", job)
			res, err := g.Render(context.Background(), params)
			require.NoError(t, err)
			ours := oursPyTorch(t, res, entrypoints[name])
			theirs := operatorPyTorch(t, created, entrypoints[name])
			compare(t, "operator", theirs, ours, strings.Join(res.Warnings, "\n"), declaredFor[name], declaredPyTorch)
		})
	}
}

// compare fails on each aspect of a pod that differs between the
// reference's pods (theirs) and trainsonnet's (ours) without a
// declaration (this example's, then every example's) whose warning the
// render printed, and on a declaration of the example that no longer
// differs.
func compare(t *testing.T, who string, theirs, ours []aspects, warnings string, declaredHere, declared map[string]string) {
	t.Helper()
	require.Len(t, ours, len(theirs), "pods")
	seen := map[string]bool{}
	for i := range theirs {
		keys := maps.Clone(theirs[i])
		maps.Copy(keys, ours[i]) // an aspect of one side only differs too
		for _, a := range slices.Sorted(maps.Keys(keys)) {
			if theirs[i][a] == ours[i][a] {
				continue
			}
			seen[a] = true
			why, ok := declaredHere[a]
			if !ok {
				why, ok = declared[a]
			}
			if !ok {
				t.Errorf("pod %d (rank %s): %s differs, undeclared:\n  %-11s  %s\n  trainsonnet: %s", i, theirs[i]["rank"], a, who+":", theirs[i][a], ours[i][a])
				continue
			}
			if !strings.HasPrefix(why, "why: ") && !strings.Contains(warnings, why) {
				t.Errorf("pod %d: %s differs (%s %s, trainsonnet %s) and the render does not warn %q; it warns:\n%s", i, a, who, theirs[i][a], ours[i][a], why, warnings)
			}
		}
	}
	// a declaration of this example that no longer differs is stale
	for a := range declaredHere {
		if !seen[a] {
			t.Errorf("%s is declared as a difference here, and does not differ", a)
		}
	}
}

// readRecording returns a recording's example (as applied) and the pods
// the operator made, in rank order (Master, then Workers by index).
func readRecording(t *testing.T, file string) ([]byte, []*corev1.Pod) {
	t.Helper()
	docs := splitYAML(t, file)
	var pods []*corev1.Pod
	for _, d := range docs[1:] {
		var meta struct{ Kind string }
		require.NoError(t, unmarshal(d, &meta))
		if meta.Kind != "Pod" {
			continue
		}
		var p corev1.Pod
		require.NoError(t, unmarshal(d, &p))
		pods = append(pods, &p)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		ra, rb := a.Labels["training.kubeflow.org/replica-type"], b.Labels["training.kubeflow.org/replica-type"]
		if ra != rb {
			return strings.Compare(ra, rb) // master before worker
		}
		ia, _ := strconv.Atoi(a.Labels["training.kubeflow.org/replica-index"])
		ib, _ := strconv.Atoi(b.Labels["training.kubeflow.org/replica-index"])
		return ia - ib
	})
	return docs[0], pods
}

func containerOf(t *testing.T, p *corev1.Pod, name string) *corev1.Container {
	t.Helper()
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return &p.Spec.Containers[0]
}

// aspects is what a pod's training amounts to, aspect by aspect, in words
// that mean the same on both sides.
type aspects map[string]string

// operatorPyTorch: each pod of the operator's, as aspects. entry is the
// image's ENTRYPOINT where the container has only args.
func operatorPyTorch(t *testing.T, pods []*corev1.Pod, entry []string) []aspects {
	var out []aspects
	first := pods[0].Name // the rendezvous: Master 0, or Worker 0 without a Master
	for _, p := range pods {
		c := containerOf(t, p, "pytorch")
		env := envMap(c.Env)
		words := append(slices.Clone(c.Command), c.Args...)
		if len(c.Command) == 0 {
			words = append(slices.Clone(entry), c.Args...)
		}
		// the words the process got: the kubelet's $(VAR) and $$
		for i, w := range words {
			words[i] = kubeletExpand(w, env)
		}
		a := common(c, &p.Spec)
		launchAspects(a, words, env, first)
		// OnFailure: the kubelet restarts the container without limit
		// (no runPolicy.backoffLimit in the examples)
		a["retries"] = string(p.Spec.RestartPolicy) + ", no limit"
		if len(p.Spec.InitContainers) > 0 {
			a["init"] = p.Spec.InitContainers[0].Name
		}
		out = append(out, a)
	}
	return out
}

// launchAspects: the training a pod's words start (as the kubelet expanded
// them), with its env: torchrun's options, or the PET_* variables it
// reads; a program's MASTER_ADDR, RANK and WORLD_SIZE.
func launchAspects(a aspects, words []string, env map[string]string, first string) {
	l := launched(words)
	a["program"] = l.program()
	switch l.launcher {
	case "torchrun":
		nproc := or(l.opt("nproc_per_node"), env["PET_NPROC_PER_NODE"])
		nnodes := or(l.opt("nnodes"), env["PET_NNODES"])
		a["procs"] = procs(nproc, a["gpu"])
		a["nodes"] = nnodes
		if ep := or(l.opt("rdzv_endpoint"), env["PET_RDZV_ENDPOINT"]); ep != "" {
			a["rendezvous"] = rendezvous(ep, first)
			a["rank"] = "elastic"
		} else {
			a["rendezvous"] = rendezvous(or(l.opt("master_addr"), env["PET_MASTER_ADDR"])+":"+or(l.opt("master_port"), env["PET_MASTER_PORT"]), first)
			a["rank"] = or(l.opt("node_rank"), env["PET_NODE_RANK"])
		}
		a["restarts"] = or(l.opt("max_restarts"), env["PET_MAX_RESTARTS"], "0")
	default: // python, or a program: one process, the pod's env
		a["procs"] = "1"
		a["nodes"] = env["WORLD_SIZE"]
		a["rank"] = env["RANK"]
		a["rendezvous"] = rendezvous(env["MASTER_ADDR"]+":"+env["MASTER_PORT"], first)
		a["restarts"] = "0"
	}
}

// oursPyTorch: each pod of trainsonnet's Indexed Job, as aspects; entry is
// the image's ENTRYPOINT where the container has no command.
func oursPyTorch(t *testing.T, res *generator.Result, entry []string) []aspects {
	t.Helper()
	var job batchv1.Job
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			require.NoError(t, json.Unmarshal(o.JSON(), &job))
		}
	}
	require.NotNil(t, job.Spec.Completions, "no Indexed Job")
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	command := c.Command
	// a static group runs torchrun under the runtime (runtime.sh run
	// --group ... -- sh -c ...), which runs it as it is
	if len(command) > 2 && command[1] == "/etc/trainsonnet/runtime.sh" {
		command = command[slices.Index(command, "--")+1:]
	}
	first := job.Spec.Template.Spec.Subdomain + "-worker-0"
	var out []aspects
	if len(command) < 2 || command[0] != "sh" || command[1] != "-c" {
		// a command as given, or the image's ENTRYPOINT: the kubelet
		// expands the words with the pod's env (its index in PET_NODE_RANK
		// and RANK)
		for i := range int(*job.Spec.Completions) {
			env := envMap(c.Env)
			env["RANK"], env["PET_NODE_RANK"] = strconv.Itoa(i), strconv.Itoa(i)
			words := append(slices.Clone(command), c.Args...)
			if len(command) == 0 {
				words = append(slices.Clone(entry), c.Args...)
			}
			for j, w := range words {
				words[j] = kubeletExpand(w, env)
			}
			a := oursCommon(&c, &spec)
			launchAspects(a, words, env, first)
			a["retries"] = fmt.Sprintf("%s, %d per pod", spec.RestartPolicy, *job.Spec.BackoffLimitPerIndex)
			out = append(out, a)
		}
		return out
	}
	for i := range int(*job.Spec.Completions) {
		// what the kubelet, then sh, make of the command in pod i: the
		// pod's env (RANK is its index), the variables sh expands
		env := envMap(c.Env)
		env["RANK"] = strconv.Itoa(i)
		text := kubeletExpand(command[2], env)
		repl := []string{`"$JOB_COMPLETION_INDEX"`, strconv.Itoa(i),
			`$((JOB_COMPLETION_INDEX == 0))`, map[bool]string{true: "1", false: "0"}[i == 0]}
		for k, v := range env {
			repl = append(repl, "${"+k+"}", v)
		}
		text = strings.NewReplacer(repl...).Replace(text)
		words := shellWords(t, text)
		require.Equal(t, []string{"exec", "torchrun"}, words[:2], text)
		l := launched(words[1:])
		a := oursCommon(&c, &spec)
		a["program"] = l.program()
		a["procs"] = procs(l.opt("nproc_per_node"), a["gpu"])
		a["nodes"] = l.opt("nnodes")
		if ep := l.opt("rdzv_endpoint"); ep != "" {
			a["rendezvous"] = rendezvous(ep, job.Spec.Template.Spec.Subdomain+"-worker-0")
			a["rank"] = "elastic"
		} else {
			a["rendezvous"] = rendezvous(l.opt("master_addr")+":"+l.opt("master_port"), job.Spec.Template.Spec.Subdomain+"-worker-0")
			a["rank"] = l.opt("node_rank")
		}
		a["restarts"] = or(l.opt("max_restarts"), "0")
		a["retries"] = fmt.Sprintf("%s, %d per pod", spec.RestartPolicy, *job.Spec.BackoffLimitPerIndex)
		out = append(out, a)
	}
	return out
}

// oursCommon: common's aspects of trainsonnet's container, and its
// /dev/shm.
func oursCommon(c *corev1.Container, spec *corev1.PodSpec) aspects {
	a := common(c, spec)
	delete(a, "shm")
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev/shm" {
			a["shm"] = "memory volume"
		}
	}
	return a
}

// common: the aspects read alike from both sides' main container.
func common(c *corev1.Container, spec *corev1.PodSpec) aspects {
	a := aspects{
		"image": c.Image,
		"pull":  string(c.ImagePullPolicy),
		"gpu":   c.Resources.Limits.Name("nvidia.com/gpu", "").String(),
		"cpu":   limit(c, corev1.ResourceCPU),
		"mem":   limit(c, corev1.ResourceMemory),
	}
	var req []string
	for _, r := range slices.Sorted(maps.Keys(c.Resources.Requests)) {
		if _, isLimit := c.Resources.Limits[r]; !isLimit {
			q := c.Resources.Requests[r]
			req = append(req, string(r)+"="+q.String())
		}
	}
	a["requests"] = strings.Join(req, ",")
	// the user's variables (not the launcher's, not trainsonnet's), as
	// the process sees them: the kubelet's $(VAR) expanded
	var env []string
	values := envMap(c.Env)
	for _, e := range c.Env {
		if e.ValueFrom == nil && !launcherEnv(e.Name) {
			env = append(env, e.Name+"="+values[e.Name])
		}
	}
	slices.Sort(env)
	a["env"] = strings.Join(env, " ")
	var mounts []string
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(m.Name, "trainsonnet-") {
			mounts = append(mounts, m.MountPath)
		}
	}
	slices.Sort(mounts)
	a["mounts"] = strings.Join(mounts, " ")
	return a
}

func launcherEnv(name string) bool {
	return strings.HasPrefix(name, "PET_") || strings.HasPrefix(name, "JAX_") || strings.HasPrefix(name, "DMLC_") || strings.HasPrefix(name, "TRAINSONNET_") ||
		slices.Contains([]string{"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "TRAIN_DIR"}, name)
}

func limit(c *corev1.Container, r corev1.ResourceName) string {
	if q, ok := c.Resources.Limits[r]; ok {
		return q.String()
	}
	return ""
}

// procs: the processes a pod starts, as torchrun reads nproc_per_node.
func procs(nproc, gpu string) string {
	switch {
	case nproc == "" || nproc == "auto" && gpu == "0":
		return "auto: one per CPU of the node"
	case nproc == "auto" || nproc == "gpu":
		return gpu
	}
	return nproc
}

// rendezvous: whether an address (host:port) is the first pod's, on
// either side's naming (<name>-master-0, <name>-worker-0.<name>).
func rendezvous(addr, first string) string {
	host, port, _ := strings.Cut(addr, ":")
	host, _, _ = strings.Cut(host, ".")
	if host == first {
		return "the first pod, port " + port
	}
	return addr
}

func or(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		if e.ValueFrom == nil {
			m[e.Name] = kubeletExpand(e.Value, m) // an entry sees those before it
		}
	}
	return m
}

// kubeletExpand is the kubelet's expansion of a command's word or an env
// value (k8s.io/kubernetes third_party/forked/golang/expansion): $(NAME)
// of a variable in env, $$ as $, anything else as written.
func kubeletExpand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				return b.String() + s[i:]
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
