package kubeflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const trainJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: bert}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 2
    numProcPerNode: 4
    command: [torchrun, train.py, --out, $(OUT)]
    env: [{name: OUT, value: /out}]
`

// TestTrainJobRules: what the Trainer's CRD and webhook refuse of a
// TrainJob, one problem each, named by its field.
func TestTrainJobRules(t *testing.T) {
	for _, c := range []struct {
		path string
		v    any
		want string
	}{
		{"metadata.name", "Bert", "metadata.name: must be a DNS label"},
		{"spec.runtimeRef.kind", "Runtime", "spec.runtimeRef.kind: must be one of ClusterTrainingRuntime, TrainingRuntime"},
		{"spec.runtimeRef.apiGroup", "kubeflow.org", "spec.runtimeRef.apiGroup: must be one of trainer.kubeflow.org"},
		{"spec.trainer.numNodes", 0, "spec.trainer.numNodes: must be 1 or more"},
		{"spec.trainer.numProcPerNode", "many", "spec.trainer.numProcPerNode: must be a number of processes"},
		{"spec.managedBy", "me", "spec.managedBy: must be one of"},
		{"spec.runtimePatches", []any{map[string]any{"manager": "me"}}, `spec.runtimePatches[0].manager: must be a domain-prefixed path (such as "acme.io/foo"), as the Trainer takes it`},
		{"spec.runtimePatches", []any{map[string]any{"manager": "a.io/b"}, map[string]any{"manager": "a.io/b"}}, "spec.runtimePatches[1].manager: is given twice"},
		{"spec.podTemplateOverrides", []any{map[string]any{"targetJobs": []any{map[string]any{"name": "node"}}}}, "must not be given with spec.runtimePatches"},
	} {
		t.Run(c.path, func(t *testing.T) {
			m := set(t, decode(t, trainJob), c.path, c.v)
			if c.path == "spec.podTemplateOverrides" {
				m = set(t, m, "spec.runtimePatches", []any{map[string]any{"manager": "example.com/me"}})
			}
			_, problems, _ := Check(TrainJobKind, m)
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0].Path+": "+problems[0].Rule, c.want)
		})
	}
	_, problems, _ := Check(TrainJobKind, set(t, decode(t, trainJob), "spec.runtimeRef.name", nil))
	require.Len(t, problems, 1)
	assert.Equal(t, "spec.runtimeRef.name", problems[0].Path)
}

// TestTrainJobExpands: a TrainJob's trainer command is expanded as the
// kubelet expands it: an env value in place, the torch policy's variables
// marked for the pods, which define them.
func TestTrainJobExpands(t *testing.T) {
	m := set(t, decode(t, trainJob), "spec.trainer.args", []any{"$(PET_NODE_RANK)", "$(NONE)"})
	norm, problems, warnings := Check(TrainJobKind, m)
	require.Empty(t, problems)
	tr := norm["spec"].(map[string]any)["trainer"].(map[string]any)
	assert.Equal(t, []any{"torchrun", "train.py", "--out", "/out"}, tr["command"])
	assert.Equal(t, []any{RefStart + "PET_NODE_RANK" + RefEnd, "$(NONE)"}, tr["args"])
	assert.Len(t, warnings, 1)
}

// TestRuntime: a TrainJob's runtime is a given one of its kind and name,
// else a stock ClusterTrainingRuntime; an unknown one is a problem that
// names what is known.
func TestRuntime(t *testing.T) {
	tj, problems, _ := Check(TrainJobKind, decode(t, trainJob))
	require.Empty(t, problems)
	rt, p := Runtime(tj, nil)
	require.Nil(t, p)
	proto, _ := Prototype(rt)
	assert.Equal(t, "pytorch", proto)

	for name, want := range map[string]string{"deepspeed-distributed": "deepspeed", "mlx-distributed": "openmpi", "jax-distributed": "jax", "xgboost-distributed": "xgboost"} {
		rt, p := Runtime(set(t, decode(t, trainJob), "spec.runtimeRef.name", name), nil)
		require.Nil(t, p, name)
		proto, _ := Prototype(rt)
		assert.Equal(t, want, proto, name)
	}

	mine := decode(t, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: mine, labels: {trainer.kubeflow.org/framework: deepspeed}}
spec:
  mlPolicy: {mpi: {numProcPerNode: 2}}
  template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: a}]}}}}}]}}
`)
	mineNorm, problems, _ := Check(TrainerVersion+"/TrainingRuntime", mine)
	require.Empty(t, problems)
	given := map[string]map[string]any{RuntimeKey("TrainingRuntime", "mine"): mineNorm}
	ref := set(t, set(t, decode(t, trainJob), "spec.runtimeRef.name", "mine"), "spec.runtimeRef.kind", "TrainingRuntime")
	rt, p = Runtime(ref, given)
	require.Nil(t, p)
	proto, _ = Prototype(rt)
	assert.Equal(t, "deepspeed", proto, "an mpi runtime of DeepSpeed's framework")

	// a DeepSpeed runtime's trainer without a command runs the image's
	// ENTRYPOINT under Open MPI: openmpi's; with one, deepspeed's
	ds, p := Runtime(set(t, decode(t, trainJob), "spec.runtimeRef.name", "deepspeed-distributed"), nil)
	require.Nil(t, p)
	proto, _, ep := JobPrototype(ds, tj)
	assert.Equal(t, "deepspeed", proto, "a TrainJob with a command")
	assert.False(t, ep)
	argsOnly := decode(t, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: ds}
spec: {runtimeRef: {name: deepspeed-distributed}, trainer: {args: [--epochs, "3"]}}
`)
	proto, _, ep = JobPrototype(ds, argsOnly)
	assert.Equal(t, "openmpi", proto, "args only: the image's ENTRYPOINT")
	assert.True(t, ep)
	proto, _, _ = JobPrototype(rt, argsOnly)
	assert.Equal(t, "openmpi", proto, "a DeepSpeed runtime of the user's whose trainer has no command either")
	// the trainer's container as lib/trainer.libsonnet finds it: without a
	// trainer step, the replicated Job node; without a container named
	// node, the first; its command is the trainer's
	withCommand := decode(t, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: mine, labels: {trainer.kubeflow.org/framework: deepspeed}}
spec:
  mlPolicy: {mpi: {numProcPerNode: 2}}
  template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: trainer, image: a, command: [mpirun, python3, t.py]}]}}}}}]}}
`)
	withNorm, problems, _ := Check(TrainerVersion+"/TrainingRuntime", withCommand)
	require.Empty(t, problems)
	rt2, p := Runtime(ref, map[string]map[string]any{RuntimeKey("TrainingRuntime", "mine"): withNorm})
	require.Nil(t, p)
	proto, _, ep = JobPrototype(rt2, argsOnly)
	assert.Equal(t, "deepspeed", proto, "the runtime's trainer runs a command: DeepSpeed's runner over it")
	assert.False(t, ep)

	// the same name as a ClusterTrainingRuntime: not the namespace's
	_, p = Runtime(set(t, decode(t, trainJob), "spec.runtimeRef.name", "mine"), given)
	require.NotNil(t, p)
	assert.Contains(t, p.Rule, "names no ClusterTrainingRuntime trainsonnet knows")

	_, p = Runtime(set(t, decode(t, trainJob), "spec.runtimeRef.name", "torch-distribute"), nil)
	require.NotNil(t, p)
	assert.Contains(t, p.Rule, "(did you mean torch-distributed?)")
}
