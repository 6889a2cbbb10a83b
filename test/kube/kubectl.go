// Package kube drives kubectl against a real Kubernetes cluster for the
// project's end-to-end tests.
//
// The cluster normally comes from test/cluster/ (up.sh or with-cluster.sh),
// which exports KUBECTL (the kubectl built for the pinned Kubernetes version)
// and KUBECONFIG. Every kubectl invocation runs with a timeout, so a hung
// kubectl or API server cannot hang CI.
//
// Manifests are always checked with server-side apply and strict field
// validation. Never pass --validate=false: with it the server only warns
// about unknown fields on client-side create/apply and silently drops them.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Environment variables read by this package.
const (
	// EnvKubectl names the kubectl binary to run.
	EnvKubectl = "KUBECTL"
	// EnvKubeconfig names the kubeconfig file (or list of files).
	EnvKubeconfig = "KUBECONFIG"
	// EnvE2E set to "1" enables the end-to-end tests (see E2E).
	EnvE2E = "TRAINSONNET_E2E"
	// EnvE2EKwok set to "1" enables the tests that need kwok fake nodes.
	EnvE2EKwok = "TRAINSONNET_E2E_KWOK"
)

// FieldManager is the server-side apply field manager of all applies made
// through this package.
const FieldManager = "trainsonnet-e2e"

// DefaultTimeout bounds a single kubectl invocation when Kubectl.Timeout is 0.
const DefaultTimeout = 2 * time.Minute

// Kubectl runs one kubectl binary against one cluster. The zero Timeout
// means DefaultTimeout. A Kubectl is safe for concurrent use.
type Kubectl struct {
	// Path is the kubectl binary.
	Path string
	// Kubeconfig is exported to kubectl as KUBECONFIG; it may be a list of
	// files separated by os.PathListSeparator.
	Kubeconfig string
	// Timeout bounds each invocation.
	Timeout time.Duration
}

// FromEnv returns a Kubectl for $KUBECTL and $KUBECONFIG. Both must be set:
// the tests create and delete namespaces and nodes, so they never fall back
// to whatever cluster ~/.kube/config points at.
func FromEnv() (*Kubectl, error) {
	path := os.Getenv(EnvKubectl)
	if path == "" {
		return nil, fmt.Errorf("%s is not set; source the env file written by test/cluster/up.sh, or run under test/cluster/with-cluster.sh", EnvKubectl)
	}
	resolved, err := exec.LookPath(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvKubectl, path, err)
	}
	kubeconfig := os.Getenv(EnvKubeconfig)
	if kubeconfig == "" {
		return nil, fmt.Errorf("%s is not set; refusing to use the default kubeconfig", EnvKubeconfig)
	}
	return &Kubectl{Path: resolved, Kubeconfig: kubeconfig}, nil
}

// Error is returned when kubectl fails or times out. Stderr holds kubectl's
// message (usually the API server's) verbatim.
type Error struct {
	// Args are the arguments kubectl was run with.
	Args []string
	// Stdout and Stderr are kubectl's output.
	Stdout, Stderr string
	// Err is the *exec.ExitError, or the context error on a timeout.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = strings.TrimSpace(e.Stdout)
	}
	return fmt.Sprintf("kubectl %s: %v: %s", strings.Join(e.Args, " "), e.Err, msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is kubectl's exit code, or -1 if it did not exit normally.
func (e *Error) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Run runs kubectl with args, feeding it stdin if not nil, and returns its
// standard output. On failure the error is an *Error.
func (k *Kubectl) Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return k.run(ctx, k.timeout(), false, stdin, args...)
}

// RunCombined is Run with standard output and standard error in one
// stream, in the order kubectl wrote them: a server warning is printed
// while its object is being applied, before the object's name, which is
// how a caller tells which object a warning is about. On failure the error
// is an *Error whose Stdout holds that stream.
func (k *Kubectl) RunCombined(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return k.run(ctx, k.timeout(), true, stdin, args...)
}

func (k *Kubectl) timeout() time.Duration {
	if k.Timeout <= 0 {
		return DefaultTimeout
	}
	return k.Timeout
}

// run is the one way this harness runs kubectl.
func (k *Kubectl) run(ctx context.Context, timeout time.Duration, combined bool, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Path, args...)
	// kubectl diff starts a diff program that may hold the pipes open after
	// kubectl is killed; don't wait for it forever.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), EnvKubeconfig+"="+k.Kubeconfig)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if combined {
		cmd.Stderr = &stdout
	}
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// Killed: by our timeout or by the caller's context.
		err = fmt.Errorf("killed (timeout %s): %w", timeout, ctxErr)
	}
	return stdout.Bytes(), &Error{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}
