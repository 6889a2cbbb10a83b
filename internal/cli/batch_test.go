package cli

import (
	"os"
	"path/filepath"
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
