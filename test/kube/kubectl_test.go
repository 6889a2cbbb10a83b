package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// fakeKubectl writes a shell script standing in for kubectl.
func fakeKubectl(t *testing.T, script string) *Kubectl {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubectl")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return &Kubectl{Path: path, Kubeconfig: "/nonexistent/kubeconfig"}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvKubectl, "")
	t.Setenv(EnvKubeconfig, "/tmp/kc")
	_, err := FromEnv()
	require.ErrorContains(t, err, "KUBECTL is not set")

	k := fakeKubectl(t, "true")
	t.Setenv(EnvKubectl, k.Path)
	t.Setenv(EnvKubeconfig, "")
	_, err = FromEnv()
	require.ErrorContains(t, err, "KUBECONFIG is not set")

	t.Setenv(EnvKubeconfig, "/tmp/kc")
	got, err := FromEnv()
	require.NoError(t, err)
	assert.Equal(t, k.Path, got.Path)
	assert.Equal(t, "/tmp/kc", got.Kubeconfig)
}

func TestRunPassesKubeconfigArgsAndStdin(t *testing.T) {
	k := fakeKubectl(t, `echo "kc=$KUBECONFIG args=$*"; cat`)
	out, err := k.Run(t.Context(), []byte("doc\n"), "apply", "-f", "-")
	require.NoError(t, err)
	assert.Equal(t, "kc=/nonexistent/kubeconfig args=apply -f -\ndoc\n", string(out))
}

func TestRunErrorKeepsServerMessage(t *testing.T) {
	msg := `Error from server: failed to create typed patch object: .spec.x: field not declared in schema`
	k := fakeKubectl(t, "echo '"+msg+"' >&2; exit 1")
	_, err := k.Run(t.Context(), nil, "apply")
	var kerr *Error
	require.ErrorAs(t, err, &kerr)
	assert.Equal(t, 1, kerr.ExitCode())
	assert.Equal(t, msg+"\n", kerr.Stderr)
	assert.Contains(t, err.Error(), msg)
}

func TestRunTimeoutKillsKubectl(t *testing.T) {
	k := fakeKubectl(t, "exec sleep 60")
	k.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := k.Run(context.Background(), nil, "get", "pods")
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "error %v should wrap DeadlineExceeded", err)
	assert.Less(t, time.Since(start), 10*time.Second)
}

func TestApplyArgsAreStrictServerSide(t *testing.T) {
	for _, args := range [][]string{applyArgs("ns"), applyArgs("", "--dry-run=server")} {
		assert.Contains(t, args, "--server-side")
		assert.Contains(t, args, "--validate=strict")
		assert.False(t, slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--validate=false") }))
	}
}

func TestUniqueName(t *testing.T) {
	a, b := UniqueName("ns"), UniqueName("ns")
	assert.Regexp(t, regexp.MustCompile(`^ns-[0-9a-f]{8}$`), a)
	assert.NotEqual(t, a, b)
	assert.Len(t, UniqueName(strings.Repeat("x", 80)), 63)
}

func TestCreateNamespaceRejectsUnknownLevel(t *testing.T) {
	k := fakeKubectl(t, "exit 0")
	_, err := k.CreateNamespace(t.Context(), "x", "strict")
	require.ErrorContains(t, err, "unknown Pod Security level")
}

// TestRunTriesAgainWhatFailedForAMoment: a read that fails for a reason of
// the moment (the API server restarting) is tried again until it
// succeeds, its requests bounded; what failed for a reason of its own
// (NotFound) and what must not run twice (create) are not.
func TestRunTriesAgainWhatFailedForAMoment(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	k := fakeKubectl(t, `n=$(cat `+count+` 2>/dev/null || echo 0); n=$((n + 1)); echo $n >`+count+`
if [ $n -lt 3 ]; then echo 'The connection to the server 127.0.0.1:16443 was refused - did you specify the right host or port?' >&2; echo 'dial tcp 127.0.0.1:16443: connect: connection refused' >&2; exit 1; fi
echo "args=$*"`)
	out, err := k.Run(t.Context(), nil, "--namespace", "ns", "get", "pods")
	require.NoError(t, err)
	assert.Equal(t, "args=--request-timeout=30s --namespace ns get pods\n", string(out))
	got, err := os.ReadFile(count)
	require.NoError(t, err)
	assert.Equal(t, "3\n", string(got), "tries")

	for _, c := range []struct {
		script string
		args   []string
	}{
		{`echo 'Error from server (NotFound): pods "x" not found' >&2; exit 1`, []string{"get", "pod", "x"}},
		{`echo 'dial tcp 127.0.0.1:16443: connect: connection refused' >&2; exit 1`, []string{"create", "-f", "-"}},
	} {
		require.NoError(t, os.Remove(count))
		k := fakeKubectl(t, `n=$(cat `+count+` 2>/dev/null || echo 0); echo $((n + 1)) >`+count+`; `+c.script)
		_, err := k.Run(t.Context(), nil, c.args...)
		require.Error(t, err, "%v", c.args)
		got, err := os.ReadFile(count)
		require.NoError(t, err)
		assert.Equal(t, "1\n", string(got), "tries of %v", c.args)
	}
}

// TestRunGivesUpAtItsTimeout: a kubectl that keeps failing for a reason of
// the moment is tried until the invocation's timeout, and its error says
// so and keeps kubectl's last message.
func TestRunGivesUpAtItsTimeout(t *testing.T) {
	k := fakeKubectl(t, `echo 'Unable to connect to the server: net/http: TLS handshake timeout' >&2; exit 1`)
	k.Timeout = 1500 * time.Millisecond
	_, err := k.Run(t.Context(), nil, "logs", "pod/x")
	var kerr *Error
	require.ErrorAs(t, err, &kerr)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "tries")
	assert.Contains(t, err.Error(), "TLS handshake timeout")
}

func TestRetryable(t *testing.T) {
	for args, want := range map[string]bool{
		"get pods -o json":                              true,
		"--namespace get get pods":                      true,
		"-n ns logs pod/x --container c":                true,
		"logs -f pod/x":                                 false,
		"get pods -w":                                   false,
		"apply --server-side -f -":                      true,
		"--warnings-as-errors apply --server-side -f -": true,
		"apply -f -":                                    false,
		"delete namespace x --ignore-not-found":         true,
		"delete pod x":                                  false,
		"create -f -":                                   false,
		"exec pod/x -- true":                            false,
		"describe pods":                                 true,
	} {
		assert.Equal(t, want, retryable(strings.Fields(args)), args)
	}
}
