package jobs_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// BenchStartEnv set to "1" runs TestBenchStart (make bench-start).
const BenchStartEnv = "TRAINSONNET_BENCH_START"

// TestBenchStart (make bench-start) runs the same DDP training (the
// Training tests' program, 3 ranks on 3 pods) as a PyTorchJob through the
// Kubeflow training operator (v1.9.3, a host process against the real
// node's control plane), through trainsonnet's pytorch job rendered from
// that same PyTorchJob, through the same render as one JobSet (jobset,
// the real JobSet controller), and as a TrainJob on torch-distributed
// through the Kubeflow Trainer (v2.3.0, a host process, on that JobSet
// controller), in turn, and prints for each round
//
//	start: operator <s> s, trainsonnet <s> s, jobset <s> s, trainer <s> s; complete: ...; peak memory: ...
//
// start: from the apply to every rank's "train: rank R of N starts" (all
// ranks joined, training under way); complete: to the PyTorchJob's
// Succeeded, the Job's Complete, the JobSet's Completed or the TrainJob's
// Complete condition; peak memory: the sum over
// the job's pods of their cgroups' peak. Three rounds, then the medians. The operator's workers wait for
// the master's name in its init container; the operator's default image
// for it (alpine) cannot be pulled here, so the test image runs the same
// loop with getent in place of nslookup (its --pytorch-init-container-*
// flags): the same 2 s polls.
func TestBenchStart(t *testing.T) {
	if os.Getenv(BenchStartEnv) != "1" {
		t.Skipf("a benchmark on the real node: make bench-start (%s=1)", BenchStartEnv)
	}
	kube.JobSet(t)
	s := newSuite(t)
	dir := os.Getenv("TRAINSONNET_TRAINING_OPERATOR_DIR")
	require.NotEmpty(t, dir, "TRAINSONNET_TRAINING_OPERATOR_DIR: the training operator's cache dir (test/cluster/build.sh operators)")
	tmp := t.TempDir()
	initTemplate := filepath.Join(tmp, "init.yaml")
	require.NoError(t, os.WriteFile(initTemplate, []byte(`
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: Never
  resources:
    limits: {cpu: 100m, memory: 20Mi}
    requests: {cpu: 50m, memory: 10Mi}
  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if getent hosts {{.MasterAddr}}; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']
`), 0o600))
	op, err := s.k.StartTrainingOperator(t.Context(), kube.TrainingOperator{
		Bin: filepath.Join(dir, "training-operator"), CRDs: filepath.Join(dir, "crds.yaml"),
		Log: filepath.Join(tmp, "training-operator.log"), Schemes: []string{"pytorchjob"},
		Args: []string{"--pytorch-init-container-image=" + s.node.Image, "--pytorch-init-container-template-file=" + initTemplate},
	})
	require.NoError(t, err)
	defer op.Stop()
	trDir := os.Getenv("TRAINSONNET_TRAINER_DIR")
	require.NotEmpty(t, trDir, "TRAINSONNET_TRAINER_DIR: the Kubeflow Trainer's cache dir (test/cluster/build.sh operators)")
	trState := filepath.Join(tmp, "trainer")
	require.NoError(t, os.MkdirAll(trState, 0o700))
	tr, err := s.k.StartTrainer(t.Context(), kube.Trainer{
		Bin: filepath.Join(trDir, "trainer"), CRDs: filepath.Join(trDir, "crds.yaml"),
		Webhooks: filepath.Join(trDir, "examples", ".install", "webhooks.yaml"), Runtimes: filepath.Join(trDir, "examples", ".install", "runtimes.yaml"),
		Log: filepath.Join(tmp, "trainer.log"), Dir: trState, WebhookPort: 19447, HealthPort: 18092,
	})
	require.NoError(t, err)
	defer tr.Stop()

	var lines []string
	forms := []struct {
		name   string
		prefix string
		form   benchForm
	}{{"operator", "bench-op", benchOperator}, {"trainsonnet", "bench-ts", benchJobs}, {"jobset", "bench-js", benchJobSet}, {"trainer", "bench-tr", benchTrainer}}
	runs := make([][]benchResult, len(forms))
	say := func(rs []benchResult) string {
		var start, complete, peak []string
		for i, f := range forms {
			start = append(start, fmt.Sprintf("%s %.1f s", f.name, rs[i].start.Seconds()))
			complete = append(complete, fmt.Sprintf("%s %.1f s", f.name, rs[i].complete.Seconds()))
			peak = append(peak, fmt.Sprintf("%s %d MiB", f.name, rs[i].peak>>20))
		}
		return "start: " + strings.Join(start, ", ") + "; complete: " + strings.Join(complete, ", ") + "; peak memory: " + strings.Join(peak, ", ")
	}
	for round := range 3 {
		rs := make([]benchResult, len(forms))
		for i, f := range forms {
			// each run a subtest: its namespace and its slot on the node
			// go when it ends
			t.Run(fmt.Sprintf("%s-%d", f.name, round), func(t *testing.T) { rs[i] = benchRun(t, s, fmt.Sprintf("%s-%d", f.prefix, round), f.form) })
		}
		if t.Failed() {
			return
		}
		line := say(rs)
		t.Log(line)
		lines = append(lines, line)
		for i := range forms {
			runs[i] = append(runs[i], rs[i])
		}
	}
	medians := make([]benchResult, len(forms))
	for i := range forms {
		medians[i] = median(runs[i])
	}
	lines = append(lines, "median: "+say(medians))
	fmt.Println(strings.Join(lines, "\n"))
}

// benchForm: how a bench run's job is made: a PyTorchJob for the
// training operator, trainsonnet's render of it as Jobs, or as a JobSet.
type benchForm int

const (
	benchOperator benchForm = iota
	benchJobs
	benchJobSet
	benchTrainer
)

// median: each measure's median over the runs.
func median(rs []benchResult) benchResult {
	mid := func(get func(benchResult) int64) int64 {
		v := make([]int64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return benchResult{
		start:    time.Duration(mid(func(r benchResult) int64 { return int64(r.start) })),
		complete: time.Duration(mid(func(r benchResult) int64 { return int64(r.complete) })),
		peak:     mid(func(r benchResult) int64 { return r.peak }),
	}
}

type benchResult struct {
	start, complete time.Duration
	peak            int64 // bytes, summed over the pods
}

// benchPyTorchJob: 3 pods (Master and 2 Workers) of the test image running
// the program under torchrun as user 1000, nprocPerNode 1.
func benchPyTorchJob(name, image string) []byte {
	c := map[string]any{
		"name": "pytorch", "image": image, "imagePullPolicy": "Never",
		"command": []string{"torchrun", trainingDir + "/train.py"},
		// Debian's torchrun (see TestTraining)
		"env":          []map[string]string{{"name": "PET_REDIRECTS", "value": "1"}, {"name": "PET_TEE", "value": "1"}},
		"volumeMounts": []map[string]any{{"name": "training", "mountPath": trainingDir, "readOnly": true}},
	}
	tmpl := map[string]any{"spec": map[string]any{
		"securityContext": map[string]any{"runAsUser": 1000, "runAsGroup": 1000},
		"containers":      []any{c},
		"volumes":         []any{map[string]any{"name": "training", "configMap": map[string]any{"name": "training"}}},
	}}
	job := map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"nprocPerNode": "1",
			"pytorchReplicaSpecs": map[string]any{
				"Master": map[string]any{"replicas": 1, "restartPolicy": "OnFailure", "template": tmpl},
				"Worker": map[string]any{"replicas": 2, "restartPolicy": "OnFailure", "template": tmpl},
			},
		},
	}
	b, _ := yaml.Marshal(job)
	return b
}

// benchTrainJob: the same training as a TrainJob on the Trainer's
// torch-distributed: 3 nodes, one process each, torchrun in the command,
// as user 1000, the program's ConfigMap through runtimePatches.
func benchTrainJob(name, image string) []byte {
	return []byte(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: ` + name + `}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 3
    numProcPerNode: 1
    image: ` + image + `
    command: [torchrun, ` + trainingDir + `/train.py]
    env: [{name: PET_REDIRECTS, value: "1"}, {name: PET_TEE, value: "1"}]
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
`)
}

var startLine = regexp.MustCompile(`train: rank (\d+) of (\d+) starts`)

// benchRun applies the PyTorchJob (to the operator) or trainsonnet's
// render of it, and measures it until it has completed.
func benchRun(t *testing.T, s *suite, name string, form benchForm) benchResult {
	jc := s.startFor(t, name, kube.Baseline, 10*time.Minute)
	jc.trainingProgram()
	manifest := benchPyTorchJob(name, s.node.Image)
	selector := "training.kubeflow.org/job-name=" + name
	if form == benchTrainer {
		s.k.JobSetNamespace(t, jc.ns)
		manifest = benchTrainJob(name, s.node.Image)
		selector = jobSetLabel + "=" + name
	}
	if form == benchJobs || form == benchJobSet {
		p := generator.NewParams("pytorch").AddFile("pytorchjob.yaml", manifest)
		selector = "job-name=" + name + "-worker"
		if form == benchJobSet {
			s.k.JobSetNamespace(t, jc.ns)
			p.Set("jobset", true)
			selector = jobSetLabel + "=" + name
		}
		res, err := s.g.Render(jc.ctx, p)
		require.NoError(t, err)
		manifest = jc.yaml(res)
	}
	jc.apply(manifest)
	var r benchResult
	started := map[string]bool{} // ranks
	peaks := map[string]int64{}  // pod UID -> its cgroup's peak
	for {
		pods := jc.pods(selector)
		for _, p := range pods {
			uid := podUID(t, jc, p.name())
			if v := cgroupPeak(uid); v > peaks[uid] {
				peaks[uid] = v
			}
			if r.start == 0 && p.Status.Phase == "Running" {
				out, _ := jc.kubectl(nil, "logs", p.name(), "--tail=-1")
				for _, m := range startLine.FindAllStringSubmatch(string(out), -1) {
					started[m[1]] = true
				}
			}
		}
		if r.start == 0 && len(started) == 3 {
			r.start = time.Since(jc.begin)
		}
		if r.complete == 0 && benchDone(t, jc, name, form) {
			r.complete = time.Since(jc.begin)
		}
		if r.start > 0 && r.complete > 0 {
			break
		}
		select {
		case <-jc.ctx.Done():
			t.Fatalf("%s: not started and complete before the case's deadline (started ranks: %v)", name, started)
		case <-time.After(500 * time.Millisecond):
		}
	}
	for _, v := range peaks {
		r.peak += v
	}
	return r
}

// benchDone: the PyTorchJob Succeeded, trainsonnet's Job Complete, or
// its JobSet Completed.
func benchDone(t *testing.T, jc *jobCase, name string, form benchForm) bool {
	kind, obj, cond := "pytorchjob", name, "Succeeded"
	switch form {
	case benchJobs:
		kind, obj, cond = "job", name+"-worker", "Complete"
	case benchJobSet:
		kind, obj, cond = "jobset", name, "Completed"
	case benchTrainer:
		kind, obj, cond = "trainjob", name, "Complete"
	}
	out, err := jc.kubectl(nil, "get", kind, obj, "-o", "json")
	require.NoError(t, err)
	var st struct {
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(out, &st))
	for _, c := range st.Status.Conditions {
		if c.Type == cond && c.Status == "True" {
			return true
		}
		if c.Type == "Failed" && c.Status == "True" {
			t.Fatalf("%s %s failed", kind, obj)
		}
	}
	return false
}

var uids = map[string]string{}

func podUID(t *testing.T, jc *jobCase, pod string) string {
	if u, ok := uids[jc.ns+"/"+pod]; ok {
		return u
	}
	out, err := jc.kubectl(nil, "get", "pod", pod, "-o", "jsonpath={.metadata.uid}")
	require.NoError(t, err)
	uids[jc.ns+"/"+pod] = string(out)
	return string(out)
}

// cgroupPeak: the peak memory of the pod's cgroup on this host (the real
// node's kubelet runs with cgroupfs: .../kubepods/<qos>/pod<uid>), or 0.
func cgroupPeak(uid string) int64 {
	if uid == "" {
		return 0
	}
	var peak int64
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil //nolint:nilerr // a cgroup gone while walking
			}
			if filepath.Base(path) != "pod"+uid {
				return nil
			}
			for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
				if b, err := os.ReadFile(filepath.Join(path, f)); err == nil {
					if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > peak {
						peak = v
					}
				}
			}
			return filepath.SkipDir
		})
		if peak > 0 {
			break
		}
	}
	return peak
}
