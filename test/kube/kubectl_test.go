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
