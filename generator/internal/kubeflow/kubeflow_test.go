package kubeflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

const pytorchJob = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: img, command: [python3, /t.py]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: img, command: [python3, /t.py]}
`

const mpiJob = `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - {name: l, image: img, command: [mpirun, pi]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: w, image: img}
`

const tfJob = `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dist}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
          - {name: tensorflow, image: img}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: img}
`

const tfChief = `    Chief:
      replicas: 1
      template:
        spec:
          containers:
          - {name: tensorflow, image: img}
`

func decode(t *testing.T, text string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(text))
	require.NoError(t, err)
	dec := json.NewDecoder(strings.NewReader(string(j)))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	return m
}

// set changes the member at the dotted path (list entries by index).
func set(t *testing.T, m map[string]any, path string, v any) map[string]any {
	t.Helper()
	var cur any = m
	parts := strings.Split(path, ".")
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if _, del := v.(deleted); del {
					delete(c, p)
				} else {
					c[p] = v
				}
				return m
			}
			cur = c[p]
		case []any:
			n := int(p[0] - '0')
			if last {
				c[n] = v
				return m
			}
			cur = c[n]
		default:
			t.Fatalf("no %s in the object", path)
		}
	}
	return m
}

type deleted struct{}

const (
	master = "spec.pytorchReplicaSpecs.Master"
	worker = "spec.pytorchReplicaSpecs.Worker"
	wc     = worker + ".template.spec.containers.0"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, kind, doc, path string
		value                 any
		want                  []string // the problems, as path: [value:] rule
	}{
		{"whole", "kubeflow.org/v1/PyTorchJob", pytorchJob, "", nil, nil},
		{"a container is null", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".template.spec.containers", []any{nil},
			[]string{worker + ".template.spec.containers[0]: must not be null: an entry of a list is a value"}},
		{"spec is a list", "kubeflow.org/v1/PyTorchJob", pytorchJob, "spec", []any{},
			[]string{`spec: "[]": must be a map of fields, not a list`}},
		{"no replica specs", "kubeflow.org/v1/PyTorchJob", pytorchJob, "spec.pytorchReplicaSpecs", deleted{},
			[]string{"spec.pytorchReplicaSpecs: required: a PyTorchJobSpec has one"}},
		{"a replica spec is text", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker, "x",
			[]string{worker + `: "x": must be a map of fields, not text`}},
		{"a replica spec is null", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker, nil,
			[]string{worker + ": must not be null: give a value or leave the key out"}},
		{"a template without a spec", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".template", map[string]any{},
			[]string{worker + ".template.spec: required: a PodTemplateSpec has one"}},
		{"no containers", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".template.spec.containers", []any{},
			[]string{worker + ".template.spec.containers: must have at least one entry"}},
		{"an env entry without a name", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".env", []any{map[string]any{"value": "1"}},
			[]string{worker + ".template.spec.containers[0].env[0].name: required: an EnvVar has one"}},
		{"an env value that is a number", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".env", []any{map[string]any{"name": "A", "value": json.Number("1")}},
			[]string{worker + `.template.spec.containers[0].env[0].value: "1": must be text, not a number: quote it`}},
		{"resources of the wrong type", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".resources", "2",
			[]string{worker + `.template.spec.containers[0].resources: "2": must be a map of fields, not text`}},
		{"a quantity that is none", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".resources", map[string]any{"limits": map[string]any{"cpu": "lots"}},
			[]string{worker + `.template.spec.containers[0].resources.limits.cpu: "lots": must be a quantity such as 2, 500m or 4Gi`}},
		{"replicas of a fraction", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".replicas", json.Number("2.5"),
			[]string{worker + `.replicas: "2.5": must be a whole number`}},
		{"replicas as text", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".replicas", "2",
			[]string{worker + `.replicas: "2": must be a whole number, not text`}},
		{"replicas past int32", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".replicas", json.Number("3000000000"),
			[]string{worker + `.replicas: "3000000000": must be a whole number of at most 2147483647 (a 32-bit integer)`}},
		{"a field of no type", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".imagee", "x",
			[]string{worker + ".template.spec.containers[0].imagee: not a field of Container: did you mean image?"}},
		{"no Worker replicas", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".replicas", json.Number("0"),
			[]string{worker + `.replicas: "0": must be 1 or more (leave Worker out for no workers)`}},
		{"two Masters", "kubeflow.org/v1/PyTorchJob", pytorchJob, master + ".replicas", json.Number("2"),
			[]string{master + `.replicas: "2": must be 1: a PyTorchJob has one Master (add the others to Worker)`}},
		{"no image", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".image", deleted{},
			[]string{worker + ".template.spec.containers[0].image: required: the operator refuses a container without an image"}},
		{"no container named pytorch", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".name", "main",
			[]string{worker + ".template.spec.containers: must have a container named pytorch: the operator takes its command, resources and port from it"}},
		{"a replica type of no PyTorchJob", "kubeflow.org/v1/PyTorchJob", pytorchJob, "spec.pytorchReplicaSpecs.Chief", map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "pytorch", "image": "i"}}}}},
			[]string{"spec.pytorchReplicaSpecs.Chief: not a replica type of a PyTorchJob: it has Master and Worker"}},
		{"a restart policy of none", "kubeflow.org/v1/PyTorchJob", pytorchJob, worker + ".restartPolicy", "Sometimes",
			[]string{worker + `.restartPolicy: "Sometimes": must be one of Always, OnFailure, Never, ExitCode`}},
		{"a GPU requested without a limit", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".resources", map[string]any{"requests": map[string]any{"nvidia.com/gpu": json.Number("2")}},
			[]string{worker + `.template.spec.containers[0].resources.requests.nvidia.com/gpu: "2": needs the same limit: Kubernetes refuses a pod that requests nvidia.com/gpu without limits.nvidia.com/gpu (set the limit; the request may then go)`}},
		{"half a GPU", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".resources", map[string]any{"limits": map[string]any{"nvidia.com/gpu": "500m"}},
			[]string{worker + `.template.spec.containers[0].resources.limits.nvidia.com/gpu: "500m": must be a whole number: nvidia.com/gpu is counted in whole devices`}},
		{"a GPU and a half", "kubeflow.org/v1/PyTorchJob", pytorchJob, wc + ".resources", map[string]any{"limits": map[string]any{"nvidia.com/gpu": json.Number("1.5")}},
			[]string{worker + `.template.spec.containers[0].resources.limits.nvidia.com/gpu: "1.5": must be a whole number: nvidia.com/gpu is counted in whole devices`}},
		{"a name that is no DNS label", "kubeflow.org/v1/PyTorchJob", pytorchJob, "metadata.name", "1st",
			[]string{`metadata.name: "1st": must be a DNS label that starts with a letter, as the operator takes it: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
		{"an unknown clean pod policy", "kubeflow.org/v1/PyTorchJob", pytorchJob, "spec.runPolicy", map[string]any{"cleanPodPolicy": "Some"},
			[]string{`spec.runPolicy.cleanPodPolicy: "Some": must be one of All, Running, None`}},
		{"nulls are unset", "kubeflow.org/v1/PyTorchJob", pytorchJob, "spec.elasticPolicy", nil, nil},

		{"an MPIJob whole", "kubeflow.org/v2beta1/MPIJob", mpiJob, "", nil, nil},
		{"an MPIJob without a launcher", "kubeflow.org/v2beta1/MPIJob", mpiJob, "spec.mpiReplicaSpecs.Launcher", deleted{},
			[]string{"spec.mpiReplicaSpecs.Launcher: required: an MPIJob has a Launcher, which runs mpirun"}},
		{"two launchers", "kubeflow.org/v2beta1/MPIJob", mpiJob, "spec.mpiReplicaSpecs.Launcher.replicas", json.Number("2"),
			[]string{`spec.mpiReplicaSpecs.Launcher.replicas: "2": must be 1: an MPIJob has one launcher`}},
		{"workers without a count", "kubeflow.org/v2beta1/MPIJob", mpiJob, "spec.mpiReplicaSpecs.Worker.replicas", deleted{},
			[]string{"spec.mpiReplicaSpecs.Worker.replicas: required: the operator counts an MPIJob's workers from it (its default, 0, it refuses)"}},
		{"an unknown launcher creation policy", "kubeflow.org/v2beta1/MPIJob", mpiJob, "spec.launcherCreationPolicy", "Later",
			[]string{`spec.launcherCreationPolicy: "Later": must be one of AtStartup, WaitForWorkersReady`}},
		{"slots of null", "kubeflow.org/v2beta1/MPIJob", mpiJob, "spec.slotsPerWorker", nil, nil},

		{"a TFJob whole", "kubeflow.org/v1/TFJob", tfJob, "", nil, nil},
		{"an unknown success policy", "kubeflow.org/v1/TFJob", tfJob, "spec.successPolicy", "SomeWorkers",
			[]string{`spec.successPolicy: "SomeWorkers": must be one of AllWorkers`}},
		{"a Master beside a Chief", "kubeflow.org/v1/TFJob", tfJob + tfChief, "spec.tfReplicaSpecs.Master", map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "tensorflow", "image": "i"}}}}},
			[]string{"spec.tfReplicaSpecs.Master: beside Chief: a TFJob has one chief (Master is its older name)"}},
		{"negative parameter servers", "kubeflow.org/v1/TFJob", tfJob, "spec.tfReplicaSpecs.PS.replicas", json.Number("-1"),
			[]string{`spec.tfReplicaSpecs.PS.replicas: "-1": must be 0 or more`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := decode(t, c.doc)
			if c.path != "" {
				m = set(t, m, c.path, c.value)
			}
			_, problems, _ := Check(c.kind, m)
			var got []string
			for _, p := range problems {
				s := p.Path + ": "
				if p.Value != "" {
					s += p.Value + ": "
				}
				got = append(got, s+p.Rule)
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestCheckNormalizes: nulls and empty lists are unset, as the API server
// has them; an extended resource's quantity is a number whatever its
// spelling.
func TestCheckNormalizes(t *testing.T) {
	m := decode(t, pytorchJob)
	m = set(t, m, "spec.elasticPolicy", nil)
	m = set(t, m, wc+".command", []any{})
	m = set(t, m, wc+".resources", map[string]any{"limits": map[string]any{"nvidia.com/gpu": "2", "cpu": "2"}})
	out, problems, _ := Check("kubeflow.org/v1/PyTorchJob", m)
	require.Empty(t, problems)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	s := string(b)
	assert.NotContains(t, s, "elasticPolicy")
	assert.Contains(t, s, `"resources":{"limits":{"cpu":"2","nvidia.com/gpu":2}}`)
	w := out["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)
	c := w["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	assert.NotContains(t, c, "command", "command: [] runs the image's ENTRYPOINT, as no command does")
}

// TestExpand: the kubelet's expansion, as k8s.io/kubernetes documents
// it: $(VAR) of a known variable, $$ as $, anything else as written.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"$(A)":         "1",
		"x$(A)y$(A)":   "x1y1",
		"$(EMPTY)":     "",
		"$(B)":         "$(B)",
		"$$(A)":        "$(A)",
		"$$$(A)":       "$1",
		"$$":           "$",
		"$":            "$",
		"a$":           "a$",
		"$x":           "$x",
		"$(A":          "$(A",
		"${A}":         "${A}",
		"100$ $(A)$$ ": "100$ 1$ ",
	} {
		assert.Equal(t, want, expand(in, lookup), in)
	}
}

// TestCheckExpandsAsTheKubelet: a container's command, args and env
// values are the words its process got; a variable trainsonnet's pods
// define is left to their shell; the rest is said.
func TestCheckExpandsAsTheKubelet(t *testing.T) {
	m := decode(t, pytorchJob)
	m = set(t, m, wc+".command", []any{"python3", "/t.py", "--out=/ckpt/$(RUN_ID)", "--rank", "$(RANK)", "$$HOME", "$(PET_NNODES)", "$(TOKEN)"})
	m = set(t, m, wc+".env", []any{
		map[string]any{"name": "RUN_ID", "value": "r42"},
		map[string]any{"name": "DIR", "value": "/ckpt/$(RUN_ID)/$(LATER)"},
		map[string]any{"name": "TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
		map[string]any{"name": "LATER", "value": "x"},
	})
	out, problems, warnings := Check("kubeflow.org/v1/PyTorchJob", m)
	require.Empty(t, problems)
	w := out["spec"].(map[string]any)["pytorchReplicaSpecs"].(map[string]any)["Worker"].(map[string]any)
	c := w["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{"python3", "/t.py", "--out=/ckpt/r42", "--rank", RefStart + "RANK" + RefEnd, "$HOME", "$(PET_NNODES)", "$(TOKEN)"}, c["command"])
	assert.Equal(t, "/ckpt/r42/$(LATER)", c["env"].([]any)[1].(map[string]any)["value"], "an env value sees the entries before it")
	at := worker + ".template.spec.containers[0]"
	assert.Equal(t, []string{
		at + ".env[1].value: $(LATER) stays as written: its env entry comes after this one, and the kubelet expands only the entries before",
		at + ".command[6]: $(PET_NNODES) stays as written: the operator set PET_NNODES for torchrun; here trainsonnet gives torchrun its options, and the pods have no PET_NNODES",
		at + ".command[7]: $(TOKEN) stays as written: its env entry takes its value from elsewhere (valueFrom), which is not carried: the kubelet would have put the value there; write the value, or read the variable in the program",
	}, warnings)
}
