package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/node"
)

// TestSmokeMPIJob proves that the real node runs an MPI-over-ssh job built
// on the test image: two sshd workers and a launcher whose `mpirun hostname`
// must print both worker host names. Once as root, once as mpiuser (uid
// 1000), the two ways the project's prototypes run.
func TestSmokeMPIJob(t *testing.T) {
	c, reason := node.FromEnv()
	if c == nil {
		t.Skip(reason)
	}
	for _, tc := range []struct {
		name    string
		nonRoot bool
	}{
		{"root", false},
		{"nonroot", true},
	} {
		t.Run(tc.name, func(t *testing.T) { runSmokeJob(t, c, tc.nonRoot) })
	}
}

func runSmokeJob(t *testing.T, c *node.Cluster, nonRoot bool) {
	const name = "mpi-smoke"
	ns := newNamespace(t, c, "mpi-smoke")
	run := func(timeout time.Duration, stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return c.Run(ctx, stdin, append([]string{"--namespace=" + ns}, args...)...)
	}

	keys, err := node.NewSSHKeyPair(name)
	require.NoError(t, err)
	secret, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": name + "-ssh"},
		"type":       "kubernetes.io/ssh-auth",
		"data": map[string]string{
			"ssh-privatekey": base64.StdEncoding.EncodeToString(keys.Private),
			"ssh-publickey":  base64.StdEncoding.EncodeToString(keys.Public),
		},
	})
	require.NoError(t, err)
	_, err = run(30*time.Second, string(secret), "create", "-f", "-")
	require.NoError(t, err)

	tmpl, err := template.ParseFiles("testdata/mpi-smoke.yaml.tmpl")
	require.NoError(t, err)
	var manifest bytes.Buffer
	require.NoError(t, tmpl.Execute(&manifest, map[string]any{"Name": name, "Image": c.Image, "NonRoot": nonRoot}))
	start := time.Now()
	_, err = run(30*time.Second, manifest.String(), "apply", "-f", "-")
	require.NoError(t, err)

	// Poll the launcher Job until it completes or fails (a failed Job never
	// reaches Complete, so `kubectl wait --for=condition=Complete` would
	// just run into its timeout).
	var state string
	deadline := time.Now().Add(4 * time.Minute)
	for state == "" && time.Now().Before(deadline) {
		conds, err := run(10*time.Second, "", "get", "job", name+"-launcher",
			`-o=jsonpath={range .status.conditions[?(@.status=="True")]}{.type} {end}`)
		if err != nil {
			t.Logf("polling the launcher Job: %v", err)
		}
		for _, cond := range strings.Fields(conds) {
			if cond == "Complete" || cond == "Failed" {
				state = cond
			}
		}
		if state == "" {
			time.Sleep(250 * time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	logs, logErr := run(30*time.Second, "", "logs", "job/"+name+"-launcher")
	t.Logf("launcher Job %q %.1fs after apply; its log:\n%s", state, elapsed.Seconds(), logs)
	if state != "Complete" || logErr != nil {
		dumpDiagnostics(t, run)
	}
	require.NoError(t, logErr)
	require.Equal(t, "Complete", state, "launcher Job state")
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	for i := 0; i < 2; i++ {
		host := fmt.Sprintf("%s-worker-%d", name, i)
		require.Contains(t, lines, "reached "+host+"."+name, "the launcher's ssh wait reached worker %d", i)
		require.Contains(t, lines, host, "mpirun ran `hostname` on worker %d", i)
	}
}

// newNamespace creates a namespace named prefix-<random> whose default
// ServiceAccount exists, and deletes it (and so the job's pods) when the
// test ends.
func newNamespace(t *testing.T, c *node.Cluster, prefix string) string {
	t.Helper()
	suffix := make([]byte, 3)
	_, err := rand.Read(suffix)
	require.NoError(t, err)
	ns := prefix + "-" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Run(ctx, "", "create", "namespace", ns)
	require.NoError(t, err)
	t.Cleanup(func() {
		if os.Getenv("TRAINSONNET_KEEP_NAMESPACE") == "1" {
			t.Logf("keeping namespace %s", ns)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if _, err := c.Run(ctx, "", "delete", "namespace", ns, "--timeout=80s"); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	// Pods are refused until the ServiceAccount controller made "default".
	for {
		if _, err := c.Run(ctx, "", "--namespace="+ns, "get", "serviceaccount", "default"); err == nil {
			return ns
		}
		if ctx.Err() != nil {
			t.Fatalf("namespace %s: no default ServiceAccount after 30s", ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dumpDiagnostics logs what helps to see why the job did not complete.
func dumpDiagnostics(t *testing.T, run func(time.Duration, string, ...string) (string, error)) {
	t.Helper()
	for _, args := range [][]string{
		{"get", "pods,jobs,services,endpointslices", "-o", "wide"},
		{"describe", "pods"},
		{"get", "events", "--sort-by=.lastTimestamp"},
		{"logs", "--selector=role=worker", "--all-containers", "--prefix", "--tail=50"},
	} {
		out, err := run(30*time.Second, "", args...)
		t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, errOrEmpty(err))
	}
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
