package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchDir writes params files, one job each, into a fresh directory.
func batchDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

func TestBatchOutputDirWritesABasePerJob(t *testing.T) {
	dir := batchDir(t, map[string]string{
		"train.yaml": "prototype: openmpi\nname: train\nssh:\n  secret: s\n",
		"logs.yml":   "prototype: tensorboard\nname: logs\n",
		"notes.md":   "not a job\n",
	})
	out := filepath.Join(t.TempDir(), "bases")
	code, stdout, stderr := run("batch", dir, "--output-dir", out)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	for _, f := range []string{"train/kustomization.yaml", "train/job_train-launcher.yaml", "logs/kustomization.yaml", "logs/deployment_logs-tensorboard.yaml"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "one base per job, nothing else")

	// Again: each base is replaced in place.
	code, _, stderr = run("batch", dir, "--output-dir", out)
	require.Equal(t, 0, code, stderr)
}

// One bad job: exit 2, every problem named by its file, nothing written.
func TestBatchWritesNothingWhenAJobIsBad(t *testing.T) {
	dir := batchDir(t, map[string]string{
		"a.yaml": "prototype: openmpi\nname: a\n",
		"b.yaml": "prototype: openmpi\nworkers: 0\n",
	})
	out := filepath.Join(t.TempDir(), "bases")
	code, stdout, stderr := run("batch", dir, "--output-dir", out)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "error: "+filepath.Join(dir, "b.yaml")+": workers: invalid value \"0\": must be an integer from 1 to 5000\n", stderr)
	assert.NoDirExists(t, out)

	code, stdout, _ = run("batch", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout, "nothing on stdout either")
}

func TestBatchUsage(t *testing.T) {
	dir := batchDir(t, map[string]string{
		"a.yaml": "prototype: eval\n",
		"a.json": `{"prototype": "eval", "name": "b"}`,
	})
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"batch"}, "error: batch needs params files or directories of them: trainsonnet batch jobs/\n"},
		{[]string{"batch", filepath.Join(dir, "none.yaml")}, "error: " + filepath.Join(dir, "none.yaml") + ": no such file or directory\n"},
		{[]string{"batch", dir, "--output-dir", t.TempDir() + "/x"}, "error: " + filepath.Join(dir, "a.json") + " and " + filepath.Join(dir, "a.yaml") + " are both job a: with --output-dir each job needs a name of its own\n"},
		{[]string{"batch", dir, "--output-dir", t.TempDir() + "/x", "-o", "json"}, "error: --output-dir writes kustomize bases (YAML); it cannot be combined with -o json\n"},
	} {
		code, stdout, stderr := run(c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Empty(t, stdout)
		assert.Equal(t, c.msg+"Run 'trainsonnet --help' for usage.\n", stderr, "%v", c.args)
	}
	// Without --output-dir two files may share a name: they are two jobs.
	code, _, stderr := run("batch", dir)
	assert.Equal(t, 0, code, stderr)
}

// What a batch refuses before it writes anything: two jobs that make the
// same objects, one file given twice, a file that names no job, anything
// but a regular file.
func TestBatchRefusesJobsThatCollide(t *testing.T) {
	job := "prototype: openmpi\nssh:\n  secret: s\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		args  func(dir string) []string
		want  string
	}{
		{"same objects", map[string]string{"a.yaml": job, "b.yaml": job}, func(d string) []string { return []string{d} },
			"both make NetworkPolicy openmpi"},
		{"one file twice", map[string]string{"a.yaml": job}, func(d string) []string {
			return []string{filepath.Join(d, "a.yaml"), filepath.Join(d, ".", "a.yaml")}
		}, "are the same file"},
		{"a file named .yaml", map[string]string{".yaml": job}, func(d string) []string { return []string{d} }, "names no job"},
		{"a file named ..yaml", map[string]string{"..yaml": job}, func(d string) []string { return []string{filepath.Join(d, "..yaml")} }, "names no job"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := batchDir(t, c.files)
			out := filepath.Join(t.TempDir(), "bases")
			code, stdout, stderr := run(append([]string{"batch"}, c.args(dir)...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, c.want)
			code, _, _ = run(append(append([]string{"batch"}, c.args(dir)...), "--output-dir", out)...)
			assert.Equal(t, 2, code)
			assert.NoDirExists(t, out)
		})
	}
	t.Run("a FIFO", func(t *testing.T) {
		dir := batchDir(t, map[string]string{"a.yaml": job + "name: a\n"})
		require.NoError(t, syscallMkfifo(filepath.Join(dir, "f.yaml")))
		code, _, stderr := run("batch", dir)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "f.yaml: is not a regular file")
	})
}

// --output-dir . writes the base into the working directory, which stays
// the same directory (a shell in it is not left in a deleted one).
func TestOutputDirDot(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	before, err := os.Stat(".")
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		code, _, stderr := run("gen", "openmpi", "--name", name, "--ssh-secret", "s", "--output-dir", ".")
		require.Equal(t, 0, code, stderr)
	}
	after, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the working directory is the same one")
	assert.FileExists(t, filepath.Join(dir, "job_b-launcher.yaml"))
	assert.NoFileExists(t, filepath.Join(dir, "job_a-launcher.yaml"), "the previous base's files are gone")
}

// An operator's jobs as they are: each whole PyTorchJob, MPIJob or TFJob
// is the job of the prototype that takes its kind; any other object is
// refused, naming the kinds there are.
func TestBatchOfOperatorJobs(t *testing.T) {
	golden := filepath.Join("..", "..", "golden", "testdata")
	files := map[string]string{}
	for _, f := range []string{"pytorchjob.yaml", "mpijob.yaml", "tfjob.yaml"} {
		data, err := os.ReadFile(filepath.Join(golden, f))
		require.NoError(t, err)
		files[f] = string(data)
	}
	dir := batchDir(t, files)
	out := filepath.Join(t.TempDir(), "bases")
	code, _, stderr := run("batch", dir, "--output-dir", out)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"pytorchjob/job_bert-worker.yaml", "mpijob/job_resnet-launcher.yaml", "tfjob/job_mnist-chief.yaml"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	assert.Contains(t, stderr, "warning: "+filepath.Join(dir, "pytorchjob.yaml")+": spec.runPolicy.backoffLimit 2: the operator counted")

	dir = batchDir(t, map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\n"})
	code, stdout, stderr := run("batch", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `pod.yaml: invalid value "v1/Pod": no prototype takes this kind of object (they take MPIJob (openmpi), PyTorchJob (pytorch), TFJob (tf-distributed), TrainJob (deepspeed, jax, openmpi, pytorch, xgboost: by its runtime))`)
}

// TrainJobs as they are: each the job of the prototype its runtime's
// framework names; a runtime among the files is no job but the runtime of
// the TrainJobs that name it; a TrainJob of an unknown runtime is refused
// naming it, and nothing is written.
func TestBatchOfTrainJobs(t *testing.T) {
	golden := filepath.Join("..", "..", "golden", "testdata")
	files := map[string]string{}
	for f, from := range map[string]string{"a100-runtime.yaml": "trainjob-runtime.yaml", "llm.yaml": "trainjob-patches.yaml", "bert.yaml": "trainjob.yaml"} {
		data, err := os.ReadFile(filepath.Join(golden, from))
		require.NoError(t, err)
		files[f] = string(data)
	}
	dir := batchDir(t, files)
	out := filepath.Join(t.TempDir(), "bases")
	code, _, stderr := run("batch", dir, "--output-dir", out)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"llm/job_llm-worker.yaml", "bert/job_bert-worker.yaml"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	assert.NoDirExists(t, filepath.Join(out, "a100-runtime"), "a runtime is no job")
	llm, err := os.ReadFile(filepath.Join(out, "llm", "job_llm-worker.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(llm), "pool: a100", "the runtime's node selector")

	files["bert.yaml"] = strings.Replace(files["bert.yaml"], "name: torch-distributed", "name: torch-a10", 1)
	dir = batchDir(t, files)
	code, stdout, stderr := run("batch", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `bert.yaml: spec.runtimeRef.name: invalid value torch-a10: names no ClusterTrainingRuntime trainsonnet knows`)
	assert.Contains(t, stderr, "(did you mean torch-a100?)")
}
