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
//
// A loaded machine makes the API server and the kubelets answer late, or
// not at all for a moment (an API server or a kubelet restarted by a fault
// case): a kubectl that reads, or writes what it may write again, is tried
// again when it failed for such a reason of the moment (see retryable and
// transient), each try's requests bounded by RequestTimeout, all of them
// by the invocation's timeout. A test's outcome never hangs on a request
// that a busy server dropped.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
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

// DefaultTimeout bounds a single kubectl invocation when Kubectl.Timeout is 0,
// its tries again included.
const DefaultTimeout = 2 * time.Minute

// DefaultRequestTimeout bounds each request of a kubectl that may be
// tried again (kubectl's --request-timeout), when Kubectl.RequestTimeout
// is 0: a request a busy API server never answers fails the try, not the
// whole invocation.
const DefaultRequestTimeout = 30 * time.Second

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
	// RequestTimeout bounds each request of an invocation that may be
	// tried again (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
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

// run is the one way this harness runs kubectl: once, or, for a kubectl
// that may be tried again (retryable), until it succeeds, fails for a
// reason that is not of the moment (transient), or timeout has passed.
func (k *Kubectl) run(ctx context.Context, timeout time.Duration, combined bool, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	again := retryable(args)
	tryArgs := args
	if again && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--request-timeout") }) {
		rt := k.RequestTimeout
		if rt <= 0 {
			rt = DefaultRequestTimeout
		}
		tryArgs = append([]string{"--request-timeout=" + rt.String()}, args...)
	}
	delay := 500 * time.Millisecond
	for tries := 1; ; tries++ {
		out, err := k.once(ctx, timeout, combined, stdin, tryArgs)
		if err == nil {
			return out, nil
		}
		err.Args = args
		if !again || ctx.Err() != nil || !transient(err.Stderr+err.Stdout) {
			if tries > 1 {
				err.Err = fmt.Errorf("%w (after %d tries)", err.Err, tries)
			}
			return out, err
		}
		select {
		case <-ctx.Done():
			err.Err = fmt.Errorf("%w (after %d tries, the last of them: %w)", ctx.Err(), tries, err.Err)
			return out, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// once runs kubectl once, within ctx.
func (k *Kubectl) once(ctx context.Context, timeout time.Duration, combined bool, stdin []byte, args []string) ([]byte, *Error) {
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

// retryable: kubectl args that only read (get, describe, logs, events,
// version, api-resources: never a watch or a followed log, which a
// request timeout would cut), or write what may be written again with the
// same result (a server-side apply, a delete that ignores what is gone).
func retryable(args []string) bool {
	verb, flags := "", map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--namespace" || a == "-n" || a == "--kubeconfig" || a == "--context":
			i++ // its value
		case strings.HasPrefix(a, "-"):
			name, _, _ := strings.Cut(a, "=")
			flags[name] = true
		case verb == "":
			verb = a
		}
	}
	if flags["-w"] || flags["--watch"] || flags["--watch-only"] || flags["-f"] && verb == "logs" || flags["--follow"] {
		return false
	}
	switch verb {
	case "get", "describe", "logs", "events", "version", "api-resources":
		return true
	case "apply":
		return flags["--server-side"]
	case "delete":
		return flags["--ignore-not-found"]
	}
	return false
}

// transientSigns are what kubectl prints when a request failed for a
// reason of the moment: the API server (or a kubelet it reaches for logs)
// not listening, not answering in time, or saying it is overloaded or
// restarting; never an answer about the request itself (NotFound,
// Forbidden, Invalid, a webhook's denial, a conflict).
var transientSigns = []string{
	"Unable to connect to the server",
	"connection refused",
	"connection reset by peer",
	"i/o timeout",
	"TLS handshake timeout",
	"Client.Timeout exceeded",
	"context deadline exceeded",
	"http2: client connection lost",
	"net/http: request canceled",
	"unexpected EOF",
	"error dialing backend",
	"the server is currently unable to handle the request",
	"the server was unable to return a response in the time allotted",
	"Timeout: request did not complete within requested timeout",
	"etcdserver: request timed out",
	"etcdserver: leader changed",
	"rpc error: code = Unavailable",
}

// transient: kubectl's output says its request failed for a reason of the
// moment (transientSigns).
func transient(output string) bool {
	return slices.ContainsFunc(transientSigns, func(sign string) bool { return strings.Contains(output, sign) })
}
