package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/trainsonnet/trainsonnet/internal/cli"
	"github.com/trainsonnet/trainsonnet/test/kube"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// repoRoot is the repository, seen from this package's directory (go test
// runs a package's tests there).
const repoRoot = "../.."

// runCLI runs trainsonnet in-process, exactly as the binary would, and
// returns its exit code, stdout and stderr.
func runCLI(args []string) (code int, stdout, stderr []byte) {
	var out, errb bytes.Buffer
	code = cli.Run(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.Bytes(), errb.Bytes()
}

// genArgs returns args with the relative params files and prototype paths
// of a golden case (-f testdata/x.yaml, -J testdata/prototypes, relative to
// golden/) made absolute, and --namespace=ns appended unless ns is empty:
// flags win over params files, so this overrides a namespace a case sets
// itself.
func genArgs(args []string, dir, ns string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if (a == "-f" || a == "--values" || a == "-J" || a == "--prototype-path") && i+1 < len(args) {
			i++
			f := args[i]
			if f != "-" && !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			out = append(out, f)
		}
	}
	if ns != "" {
		out = append(out, "--namespace="+ns)
	}
	return out
}

// decodeObjects decodes a YAML stream or a JSON v1 List into its objects.
func decodeObjects(manifests []byte) ([]map[string]any, error) {
	dec := apiyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var out []map[string]any
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		if obj["kind"] == "List" {
			items, _ := obj["items"].([]any)
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					out = append(out, m)
				}
			}
			continue
		}
		out = append(out, obj)
	}
}

// kubectlApplyArgs are the arguments of kube.Kubectl.ApplyDryRun (server-side
// apply, this suite's field manager, strict field validation, server dry
// run), with --warnings-as-errors in front: Pod Security Admission only
// *warns* about the pod template of a Job (it enforces on Pods, which the Job
// controller creates later), so without it a Job whose pods the namespace
// would refuse passes a dry run. Every other server warning (a fractional
// memory limit, say) is also something a user of the manifest would see.
func kubectlApplyArgs(ns string) []string {
	return []string{"--warnings-as-errors", "apply", "--server-side", "--field-manager=" + kube.FieldManager,
		"--validate=strict", "--dry-run=server", "-f", "-", "-o", "name", "--namespace", ns}
}

// strictDryRun is kube.Kubectl.ApplyDryRun with server warnings as errors
// (see kubectlApplyArgs). On rejection the error carries the server's
// message verbatim.
func strictDryRun(ctx context.Context, k *kube.Kubectl, ns string, manifests []byte) error {
	if _, err := k.Run(ctx, manifests, kubectlApplyArgs(ns)...); err != nil {
		return fmt.Errorf("server-side dry-run apply (strict validation, warnings are errors): %w", err)
	}
	return nil
}

// namespaces creates test namespaces and deletes them without holding up
// the test that made them: a namespace's deletion is started when its test
// ends (`kubectl delete --wait=false`), and the test that made the
// namespaces waits for all of them to be gone at its end. Deleting even an
// empty namespace takes the namespace controller about 5.5 s; waiting for
// each one inside its own parallel subtest would hold a -parallel slot for
// that long.
type namespaces struct {
	k     *kube.Kubectl
	mu    sync.Mutex
	names []string
}

// newNamespaces returns a namespaces whose waiting happens in t's cleanup,
// so after t's subtests.
func newNamespaces(t testing.TB, k *kube.Kubectl) *namespaces {
	n := &namespaces{k: k}
	t.Cleanup(func() { n.waitGone(t) })
	return n
}

// create makes a namespace (kube.Kubectl.CreateNamespace: labelled for this
// suite, Pod Security level enforced) and starts deleting it when t ends.
func (n *namespaces) create(t testing.TB, prefix string, level kube.PodSecurityLevel) string {
	t.Helper()
	name, err := n.k.CreateNamespace(t.Context(), prefix, level)
	require.NoError(t, err)
	n.mu.Lock()
	n.names = append(n.names, name)
	n.mu.Unlock()
	t.Cleanup(func() {
		if err := n.startDelete(name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

// startDelete starts deleting a namespace (and everything in it).
func (n *namespaces) startDelete(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n.k.Run(ctx, nil, "delete", "namespace", name, "--ignore-not-found", "--wait=false"); err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}

// waitGone deletes every namespace created (again; harmless) and waits for
// all of them to be gone, in parallel.
func (n *namespaces) waitGone(t testing.TB) {
	n.mu.Lock()
	names := slices.Clone(n.names)
	n.mu.Unlock()
	const wait = 2 * time.Minute
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait+time.Minute)
			defer cancel()
			errs[i] = n.k.DeleteNamespace(ctx, name, wait)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// recordingTB is a testing.TB whose failures are recorded instead of
// failing the real test; FailNow ends the goroutine, as it does for a real
// test. Everything else (Context, Cleanup, TempDir, ...) is the real test's.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	out    strings.Builder
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) record(fail bool, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || fail
	r.out.WriteString(strings.TrimRight(s, "\n") + "\n")
}

func (r *recordingTB) Log(args ...any)                 { r.record(false, fmt.Sprintln(args...)) }
func (r *recordingTB) Logf(format string, args ...any) { r.record(false, fmt.Sprintf(format, args...)) }
func (r *recordingTB) Error(args ...any)               { r.record(true, fmt.Sprintln(args...)) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fail() { r.record(true, "") }
func (r *recordingTB) FailNow() {
	r.record(true, "")
	runtime.Goexit()
}
func (r *recordingTB) Fatal(args ...any) {
	r.record(true, fmt.Sprintln(args...))
	runtime.Goexit()
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// captureFailure runs f with a recordingTB and returns whether f failed the
// test and everything it logged or reported.
func captureFailure(t testing.TB, f func(tb testing.TB)) (failed bool, output string) {
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.Failed(), r.out.String()
}
