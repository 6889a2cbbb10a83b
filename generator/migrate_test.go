package generator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/trainsonnet/trainsonnet/generator"
)

// A PyTorchJob of the training operator's shape, whose container has only
// args when command is "".
func pytorchJob(command string) string {
	cmd := `command: [` + command + `]`
	if command == "" {
		cmd = `args: ["--epochs", "1"]`
	}
	return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: registry.example.com/mnist:latest
            ` + cmd + `
            resources: {limits: {nvidia.com/gpu: 2}}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - name: pytorch
            image: registry.example.com/mnist:latest
            ` + cmd + `
            resources: {limits: {nvidia.com/gpu: 2}}
`
}

func renderJob(t *testing.T, g *generator.Generator, p *generator.Params) (*batchv1.Job, []string, error) {
	t.Helper()
	res, err := g.Render(context.Background(), p)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			var j batchv1.Job
			require.NoError(t, json.Unmarshal(o.JSON(), &j))
			return &j, res.Warnings, nil
		}
	}
	t.Fatal("no Job")
	return nil, nil, nil
}

// TestMigrateWholeObject: a whole PyTorchJob given as a params file gives
// the parameters it holds (workers, name, namespace, image, GPUs, the
// command after its launcher), said where it differs from the operator;
// a later input overrides them.
func TestMigrateWholeObject(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)

	j, warnings, err := renderJob(t, g, generator.NewParams("pytorch").AddFile("job.yaml", []byte(pytorchJob(`python3, -u, /opt/mnist.py, --epochs, "1"`))))
	require.NoError(t, err)
	assert.Equal(t, "mnist-worker", j.Name)
	assert.Equal(t, "ml", j.Namespace)
	assert.Equal(t, int32(4), *j.Spec.Completions, "Master + Worker replicas")
	c := j.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "registry.example.com/mnist:latest", c.Image)
	assert.Equal(t, "Always", string(c.ImagePullPolicy), ":latest, as Kubernetes pulls it")
	assert.Equal(t, "2", c.Resources.Limits.Name("nvidia.com/gpu", "").String())
	// python3 once per pod, as the operator ran it: torchrun, one process
	assert.Contains(t, c.Command[len(c.Command)-1], "--nproc_per_node=1 ")
	assert.True(t, strings.HasSuffix(c.Command[len(c.Command)-1], " /opt/mnist.py --epochs 1"), c.Command[len(c.Command)-1])
	assert.Contains(t, strings.Join(warnings, "\n"), "job.yaml: spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].command: the operator ran python3 once in each pod")
	assert.Contains(t, strings.Join(warnings, "\n"), "restarted failed pods without limit")
	assert.Equal(t, int32(6), *j.Spec.BackoffLimitPerIndex)

	// a later flag wins
	j, _, err = renderJob(t, g, generator.NewParams("pytorch").AddFile("job.yaml", []byte(pytorchJob(`torchrun, /opt/mnist.py`))).SetText("workers", "2", "--workers"))
	require.NoError(t, err)
	assert.Equal(t, int32(2), *j.Spec.Completions)
	assert.Contains(t, last(j.Spec.Template.Spec.Containers[0].Command), "--nproc_per_node=2 ", "torchrun: one process per GPU")
}

// TestMigrateNeeds: what an object cannot give (the script torchrun
// runs) is a problem naming the field, unless another input, before or
// after the file, sets the parameter.
func TestMigrateNeeds(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	job := []byte(pytorchJob("torchrun, --nproc_per_node=2"))
	_, _, err = renderJob(t, g, generator.NewParams("pytorch").AddFile("job.yaml", job))
	var verr *generator.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Problems, 1)
	assert.Equal(t, "job.yaml: spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].command", verr.Problems[0].Source)
	assert.Contains(t, verr.Problems[0].Rule, "names no script to run")

	for _, p := range []*generator.Params{
		generator.NewParams("pytorch").AddFile("job.yaml", job).SetText("exec", "/opt/mnist.py --epochs 1", "--exec"),
		generator.NewParams("pytorch").SetText("exec", "/opt/mnist.py --epochs 1", "--exec").AddFile("job.yaml", job),
	} {
		j, _, err := renderJob(t, g, p)
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(last(j.Spec.Template.Spec.Containers[0].Command), " /opt/mnist.py --epochs 1"))
		assert.Contains(t, last(j.Spec.Template.Spec.Containers[0].Command), "--nproc_per_node=2 ")
	}
}

// TestMigrateEntrypoint: a container that gives only args runs the
// image's ENTRYPOINT with them, as the operator ran it: no command, the
// operator's variables and torchrun's, one process per pod.
func TestMigrateEntrypoint(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	j, warnings, err := renderJob(t, g, generator.NewParams("pytorch").AddFile("job.yaml", []byte(pytorchJob(""))))
	require.NoError(t, err)
	c := j.Spec.Template.Spec.Containers[0]
	assert.Empty(t, c.Command)
	assert.Equal(t, []string{"--epochs", "1"}, c.Args)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "4", env["PET_NNODES"])
	assert.Equal(t, "1", env["PET_NPROC_PER_NODE"])
	assert.Equal(t, "mnist-worker-0.mnist", env["PET_MASTER_ADDR"])
	assert.Equal(t, "mnist-worker-0.mnist", env["MASTER_ADDR"])
	assert.Equal(t, "4", env["WORLD_SIZE"])
	assert.Contains(t, strings.Join(warnings, "\n"), "the image's ENTRYPOINT runs as it is")
}

// TestMigrateRefusals: an object of a kind the prototype does not take,
// and an object with parameters beside it, are refused in one line each.
func TestMigrateRefusals(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	for _, c := range []struct{ proto, file, source, rule string }{
		{"openmpi", pytorchJob(`torchrun, x.py`), "job.yaml", "a params file holds openmpi's parameters, or a whole kubeflow.org/v2beta1/MPIJob or trainer.kubeflow.org/v1alpha1/TrainJob; this is an object of another kind"},
		{"eval", pytorchJob(`torchrun, x.py`), "job.yaml", "a params file holds eval's parameters; this is an object of another kind"},
		{"pytorch", "apiVersion: v1\nkind: Pod\n", "job.yaml", "a params file holds pytorch's parameters, or a whole kubeflow.org/v1/PyTorchJob or trainer.kubeflow.org/v1alpha1/TrainJob; this is an object of another kind"},
		{"pytorch", pytorchJob(`torchrun, x.py`) + "workers: 3\n", "job.yaml: workers", "a PyTorchJob has apiVersion, kind, metadata and spec"},
		// a parameter derived from the object names the fields it came from
		{"pytorch", strings.Replace(pytorchJob(`torchrun, x.py`), "replicas: 3", "replicas: 5000", 1),
			"job.yaml: spec.pytorchReplicaSpecs.Master.replicas + spec.pytorchReplicaSpecs.Worker.replicas → workers", "must be an integer from 1 to 1000"},
		{"pytorch", strings.Replace(pytorchJob(`torchrun, x.py`), "metadata: {name: mnist, namespace: ml}", "metadata: {namespace: ml}", 1),
			"job.yaml: metadata.name", "required: a PyTorchJob has a name, which names its jobs here: give it, or set name"},
	} {
		_, err := g.Render(context.Background(), generator.NewParams(c.proto).AddFile("job.yaml", []byte(c.file)))
		var verr *generator.ValidationError
		require.True(t, errors.As(err, &verr), "%s: %v", c.source, err)
		require.NotEmpty(t, verr.Problems)
		assert.Equal(t, c.source, verr.Problems[0].Source)
		assert.Contains(t, verr.Problems[0].Rule, c.rule)
	}
}

// TestJobParamsOfObjects: in a batch, a whole object of a kind a
// prototype takes is that prototype's job without a prototype key; any
// other object names the kinds there are.
func TestJobParamsOfObjects(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	p, err := g.JobParams("job.yaml", []byte(pytorchJob(`torchrun, x.py`)))
	require.NoError(t, err)
	assert.Equal(t, "pytorch", p.Prototype())
	_, err = g.JobParams("pod.yaml", []byte("apiVersion: v1\nkind: Pod\n"))
	var verr *generator.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, verr.Problems[0].Rule, "no prototype takes this kind of object (they take MPIJob (openmpi), PyTorchJob (pytorch), TFJob (tf-distributed), TrainJob (deepspeed, jax, openmpi, pytorch, xgboost: by its runtime))")
	_, err = g.JobParams("params.yaml", []byte("workers: 2\n"))
	require.ErrorAs(t, err, &verr, "a params file still names its prototype")
	assert.Contains(t, verr.Problems[0].Rule, "names no prototype")
}

// TestMigrateExportedObject: a PyTorchJob as `kubectl get -o yaml` shows
// it (uid, managedFields, kubectl's last applied configuration, status)
// renders as the object it was: kubectl's bookkeeping is not carried.
func TestMigrateExportedObject(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	exported := strings.Replace(pytorchJob(`torchrun, x.py`), "metadata: {name: mnist, namespace: ml}", `metadata:
  name: mnist
  namespace: ml
  uid: 4f0c
  resourceVersion: "12"
  generation: 1
  creationTimestamp: "2026-01-01T00:00:00Z"
  managedFields: [{manager: kubectl, operation: Update}]
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"kind":"PyTorchJob"}'}`, 1) + `status:
  conditions: [{type: Created, status: "True"}]
`
	res, err := g.Render(context.Background(), generator.NewParams("pytorch").AddFile("job.yaml", []byte(exported)))
	require.NoError(t, err)
	out, err := res.YAML()
	require.NoError(t, err)
	assert.NotContains(t, string(out), "last-applied-configuration")
	assert.NotContains(t, strings.Join(res.Warnings, "\n"), "metadata.annotations")
}

// last is a command's last word: the script of its sh -c.
func last(command []string) string { return command[len(command)-1] }
