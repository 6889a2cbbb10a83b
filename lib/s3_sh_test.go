package lib_test

// The cases of lib/assets/s3.sh; the harness is in scripts_test.go.

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var s3Cases = []scriptCase{
	{"s3-upload/waits_for_finished", true, s3UploadWaitsForFinished},
	{"s3-upload/when_launcher_gone", false, s3UploadWhenLauncherGone},
	{"s3-upload/aws_fails", false, s3UploadAWSFails},
	{"s3-upload/nothing_to_upload", false, s3UploadNothingToUpload},
	{"s3-download", false, s3Download},
}

// TestS3Script runs the cases of s3.sh.
func TestS3Script(t *testing.T) {
	t.Parallel()
	runCases(t, s3Cases)
}

func s3UploadEnv(f *fixture) string {
	out := filepath.Join(f.runDir, "output")
	require.NoError(f.t, os.MkdirAll(out, 0o755))
	f.env["TS_S3_FROM"] = out
	f.env["TS_S3_TO"] = "s3://bucket/results/"
	f.env["TS_NAMESPACE"] = "ml"
	f.env["TS_JOB_NAME"] = "train"
	f.env["TS_POD_NAME"] = "train-worker-0-abcde"
	return out
}

func s3UploadWaitsForFinished(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.resolvable(launcher, true)
	f.env["TS_S3_ENDPOINT"] = "http://minio:9000"
	p := f.start("s3-upload")
	p.waitFor("a launcher lookup", func() bool { return len(f.lines("getent.log")) > 0 })
	time.Sleep(1500 * time.Millisecond)
	require.False(t, p.exited(), p.output())
	assert.Empty(t, f.lines("aws.log"), "no upload before the worker finished")
	f.touch(filepath.Join(f.runDir, "finished"))
	require.Equal(t, 0, p.wait(), p.output())
	assert.Equal(t, []string{"--endpoint-url http://minio:9000 s3 cp --recursive " + out +
		" s3://bucket/results/ml/train/train-worker-0-abcde"}, f.lines("aws.log"))
	messagesArePrefixed(t, p.output())
}

func s3UploadWhenLauncherGone(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.resolvable(launcher, true)
	f.env["TS_LAUNCHER_GRACE"] = "1"
	p := f.start("s3-upload")
	p.waitFor("a successful lookup", func() bool {
		return slices.Contains(f.lines("getent.log"), launcher+" found")
	})
	f.resolvable(launcher, false)
	require.Equal(t, 0, p.wait(), p.output())
	assert.Contains(t, p.output(), "has not resolved for 1s; uploading what there is")
	assert.Equal(t, []string{"s3 cp --recursive " + out + " s3://bucket/results/ml/train/train-worker-0-abcde"},
		f.lines("aws.log"))
}

func s3UploadAWSFails(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	f.touch(filepath.Join(f.runDir, "finished"))
	f.env["STUB_AWS_RC"] = "5"
	code, p := f.run("s3-upload")
	require.Equal(t, 5, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: upload of "+out+
		" to s3://bucket/results/ml/train/train-worker-0-abcde failed (aws exit code 5)")
}

func s3UploadNothingToUpload(t *testing.T, f *fixture) {
	out := s3UploadEnv(f)
	require.NoError(t, os.Remove(out))
	f.touch(filepath.Join(f.runDir, "finished"))
	code, p := f.run("s3-upload")
	require.Equal(t, 1, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: nothing to upload: "+out+" does not exist")
	assert.Empty(t, f.lines("aws.log"))
}

func s3Download(t *testing.T, f *fixture) {
	f.env["TS_S3_FROM"] = "s3://bucket/data"
	f.env["TS_S3_TO"] = "/data"
	code, p := f.run("s3-download")
	require.Equal(t, 0, code, p.output())
	f.env["TS_S3_ENDPOINT"] = "http://minio:9000"
	f.env["STUB_AWS_RC"] = "1"
	code, p = f.run("s3-download")
	require.Equal(t, 1, code, p.output())
	assert.Contains(t, p.output(), "trainsonnet: download of s3://bucket/data to /data failed (aws exit code 1)")
	assert.Equal(t, []string{
		"s3 cp --recursive s3://bucket/data /data",
		"--endpoint-url http://minio:9000 s3 cp --recursive s3://bucket/data /data",
	}, f.lines("aws.log"))
}
