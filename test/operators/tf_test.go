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

// The training operator's TFJob examples, each given whole to `gen
// tf-distributed -f`, compared task by task with the pods the operator
// made: the program, TF_CONFIG's meaning (the cluster's tasks by role and
// index, the port, the task's own type and index), images, pull policy,
// GPUs and limits, and retries.

// tfEntrypoints: the images' ENTRYPOINT of the examples whose containers
// have no command (their Dockerfiles).
var tfEntrypoints = map[string][]string{
	"tensorflow_dist-mnist_tf_job_mnist":                  {"python", "/var/tf_dist_mnist/dist_mnist.py"},
	"tensorflow_distribution_strategy_multi_worker_tfjob": {"python", "/multi_worker_strategy-with-keras.py", "--saved_model_dir", "/train/saved_model/", "--checkpoint_dir", "/train/checkpoint"},
}

var declaredTF = map[string]string{
	"retries": "why: restartPolicy Never in the examples: a failed task fails the job in both; trainsonnet retries the lead's pod backoffLimit times (0), and replaces a lost task of another role as often",
}

var declaredTFFor = map[string]map[string]string{
	"tensorflow_simple": {"retries": "the operator restarted failed tasks without limit"},
	// one worker: the operator sets no TF_CONFIG (training on its own)
	"tensorflow_mnist_with_summaries_tf_job_mnist": {
		"cluster": "why: a TFJob of one task gets no TF_CONFIG from the operator; here it names that one worker, which TensorFlow runs alone all the same",
		"task":    "why: as cluster",
	},
}

func TestTFJobs(t *testing.T) {
	files, err := filepath.Glob("testdata/training-operator-*/tensorflow_*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings: make record-operators")
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			docs := splitYAML(t, f)
			theirs := operatorTF(t, docs[1:], tfEntrypoints[name])
			// as given: tasks without a command run their image's
			// ENTRYPOINT in both (a JobSet here where one would never end)
			res, err := g.Render(context.Background(), generator.NewParams("tf-distributed").AddFile(name+".yaml", docs[0]))
			require.NoError(t, err)
			ours := oursTF(t, res, tfEntrypoints[name])
			require.ElementsMatch(t, slices.Collect(maps.Keys(theirs)), slices.Collect(maps.Keys(ours)), "tasks")
			warnings := strings.Join(res.Warnings, "\n")
			seen := map[string]bool{}
			for _, task := range slices.Sorted(maps.Keys(theirs)) {
				for _, a := range slices.Sorted(maps.Keys(theirs[task])) {
					if theirs[task][a] == ours[task][a] {
						continue
					}
					seen[a] = true
					why, ok := declaredTFFor[name][a]
					if !ok {
						why, ok = declaredTF[a]
					}
					if !ok {
						t.Errorf("%s: %s differs, undeclared:\n  operator:    %s\n  trainsonnet: %s", task, a, theirs[task][a], ours[task][a])
						continue
					}
					if !strings.HasPrefix(why, "why: ") && !strings.Contains(warnings, why) {
						t.Errorf("%s: %s differs (operator %s, trainsonnet %s) and the render does not warn %q; it warns:\n%s", task, a, theirs[task][a], ours[task][a], why, warnings)
					}
				}
			}
			for a := range declaredTFFor[name] {
				if !seen[a] {
					t.Errorf("%s is declared as a difference of %s, and does not differ", a, name)
				}
			}
		})
	}
}

// tfConfig is TF_CONFIG as the operator writes it.
type tfConfig struct {
	Cluster map[string][]string `json:"cluster"`
	Task    struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	} `json:"task"`
	Environment string `json:"environment"`
}

// meaning: TF_CONFIG's cluster with each address as its role and index
// (whatever each side names the hosts), its port, and the task.
func (c tfConfig) meaning() (cluster, task string) {
	var parts []string
	for _, role := range slices.Sorted(maps.Keys(c.Cluster)) {
		var tasks []string
		for _, addr := range c.Cluster[role] {
			host, port, _ := strings.Cut(addr, ":")
			host, _, _ = strings.Cut(host, ".")
			i := strings.LastIndex(host, "-"+role)
			idx := strings.TrimPrefix(strings.TrimPrefix(host[i+1:], role), "-")
			if k := strings.LastIndex(idx, "-"); k >= 0 {
				idx = idx[k+1:] // a JobSet's pod: <name>-<role>-0-<i>
			}
			if idx == "" {
				idx = "0" // a role of one task: <name>-chief
			}
			tasks = append(tasks, idx+":"+port)
		}
		parts = append(parts, role+"=["+strings.Join(tasks, " ")+"]")
	}
	return strings.Join(parts, " "), fmt.Sprintf("%s %d in %q", c.Task.Type, c.Task.Index, c.Environment)
}

// operatorTF: each of the operator's tasks ("worker-1"), as aspects.
func operatorTF(t *testing.T, docs [][]byte, entry []string) map[string]aspects {
	t.Helper()
	out := map[string]aspects{}
	for _, d := range docs {
		var meta struct{ Kind string }
		require.NoError(t, unmarshal(d, &meta))
		if meta.Kind != "Pod" {
			continue
		}
		var p corev1.Pod
		require.NoError(t, unmarshal(d, &p))
		c := containerOf(t, &p, "tensorflow")
		a := common(c, &p.Spec)
		delete(a, "env")
		words := append(slices.Clone(c.Command), c.Args...)
		if len(c.Command) == 0 {
			words = append(slices.Clone(entry), c.Args...)
		}
		a["program"] = strings.Join(words, " ")
		var cfg tfConfig
		if tc := envMap(c.Env)["TF_CONFIG"]; tc != "" {
			require.NoError(t, json.Unmarshal([]byte(tc), &cfg))
			a["cluster"], a["task"] = cfg.meaning()
		} else {
			a["cluster"], a["task"] = "none", "none"
		}
		a["retries"] = "restart " + string(p.Spec.RestartPolicy)
		role := p.Labels["training.kubeflow.org/replica-type"]
		if role == "master" {
			role = "chief"
		}
		out[role+"-"+p.Labels["training.kubeflow.org/replica-index"]] = a
	}
	return out
}

// oursTF: each of trainsonnet's tasks, as aspects: TF_CONFIG as the
// kubelet expands it, from the ConfigMap of the cluster; the Jobs, or a
// JobSet's Jobs; a container without a command runs entry.
func oursTF(t *testing.T, res *generator.Result, entry []string) map[string]aspects {
	t.Helper()
	data := map[string]string{}
	var jobs []batchv1.Job
	for _, o := range res.Objects {
		switch o.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, json.Unmarshal(o.JSON(), &cm))
			maps.Copy(data, cm.Data)
		case "Job":
			var j batchv1.Job
			require.NoError(t, json.Unmarshal(o.JSON(), &j))
			jobs = append(jobs, j)
		case "JobSet":
			var set struct {
				Spec struct {
					ReplicatedJobs []struct{ Template batchv1.JobTemplateSpec }
				}
			}
			require.NoError(t, json.Unmarshal(o.JSON(), &set))
			for _, r := range set.Spec.ReplicatedJobs {
				jobs = append(jobs, batchv1.Job{Spec: r.Template.Spec})
			}
		}
	}
	out := map[string]aspects{}
	for _, j := range jobs {
		spec := j.Spec.Template.Spec
		c := spec.Containers[0]
		n := 1
		if j.Spec.Completions != nil {
			n = int(*j.Spec.Completions)
		}
		for i := range n {
			env := map[string]string{}
			for _, e := range c.Env {
				switch {
				case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
					env[e.Name] = data[e.ValueFrom.ConfigMapKeyRef.Key]
				case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
					env[e.Name] = strconv.Itoa(i) // the completion index
				default:
					v := e.Value
					for k, x := range env {
						v = strings.ReplaceAll(v, "$("+k+")", x)
					}
					env[e.Name] = v
				}
			}
			a := common(&c, &spec)
			delete(a, "env")
			delete(a, "mounts") // compared below, without trainsonnet's own
			a["mounts"] = userMounts(c.VolumeMounts)
			// runtime.sh run [its options] -- sh -c <exec>, or the
			// image's ENTRYPOINT unwrapped
			if len(c.Command) == 0 {
				a["program"] = strings.Join(append(slices.Clone(entry), c.Args...), " ")
			} else {
				dash := slices.Index(c.Command, "--")
				require.Equal(t, []string{"sh", "-c"}, c.Command[dash+1:dash+3], c.Command)
				a["program"] = strings.Join(shellWords(t, c.Command[dash+3]), " ")
			}
			var cfg tfConfig
			require.NoError(t, json.Unmarshal([]byte(env["TF_CONFIG"]), &cfg), env["TF_CONFIG"])
			a["cluster"], a["task"] = cfg.meaning()
			a["retries"] = "restart " + string(spec.RestartPolicy)
			if j.Spec.BackoffLimit != nil && *j.Spec.BackoffLimit > 0 {
				a["retries"] += fmt.Sprintf(", %d retries", *j.Spec.BackoffLimit)
			}
			out[cfg.Task.Type+"-"+strconv.Itoa(cfg.Task.Index)] = a
		}
	}
	return out
}

func userMounts(ms []corev1.VolumeMount) string {
	var out []string
	for _, m := range ms {
		if !strings.HasPrefix(m.Name, "trainsonnet-") && m.MountPath != "/mnt" {
			out = append(out, m.MountPath)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
