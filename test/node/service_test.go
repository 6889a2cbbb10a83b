package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/test/node"
)

// TestServiceRouting proves that the node's kube-proxy routes Services, as
// the TensorBoard Deployment and the Dask/Spark schedulers need: an HTTP
// server pod of the test image behind a ClusterIP Service answers a client
// pod that asks for the Service by its DNS name, and the same server
// answers this machine on a NodePort and on the ClusterIP. Each answer must
// carry a token that only this server knows.
func TestServiceRouting(t *testing.T) {
	c, reason := node.FromEnv()
	if c == nil {
		t.Skip(reason)
	}
	ns := newNamespace(t, c, "svc")
	run := func(timeout time.Duration, stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return c.Run(ctx, stdin, append([]string{"--namespace=" + ns}, args...)...)
	}
	diagnose := func() {
		dumpDiagnostics(t, run)
		out, err := run(30*time.Second, "", "logs", "deployment/web", "--tail=20")
		t.Logf("web log:\n%s%v", out, errOrEmpty(err))
	}

	tokenBytes := make([]byte, 8)
	_, err := rand.Read(tokenBytes)
	require.NoError(t, err)
	token := "trainsonnet-" + hex.EncodeToString(tokenBytes)

	start := time.Now()
	_, err = run(30*time.Second, renderTemplate(t, "testdata/service.yaml.tmpl", map[string]any{
		"Image": c.Image, "Token": token,
	}), "apply", "-f", "-")
	require.NoError(t, err)
	clusterIP, err := run(10*time.Second, "", "get", "service", "web", "-o=jsonpath={.spec.clusterIP}")
	require.NoError(t, err)
	require.NotNil(t, net.ParseIP(clusterIP), "ClusterIP %q", clusterIP)
	nodePort, err := run(10*time.Second, "", "get", "service", "web-nodeport", "-o=jsonpath={.spec.ports[0].nodePort}")
	require.NoError(t, err)
	require.NotEmpty(t, nodePort)

	// The server's readiness probe passes: its EndpointSlice entry is ready.
	if _, err := run(130*time.Second, "", "rollout", "status", "deployment/web", "--timeout=120s"); err != nil {
		diagnose()
		require.NoError(t, err, "the web Deployment did not become available")
	}
	t.Logf("web Deployment available %.1fs after apply; Service web has ClusterIP %s, web-nodeport NodePort %s",
		time.Since(start).Seconds(), clusterIP, nodePort)

	t.Run("pod to ClusterIP by DNS name", func(t *testing.T) {
		// The short name goes through the pod's DNS search path.
		names := []string{"web", "web." + ns + ".svc.cluster.local"}
		start := time.Now()
		_, err := run(30*time.Second, renderTemplate(t, "testdata/service-client.yaml.tmpl", map[string]any{
			"Image": c.Image, "Names": names,
		}), "apply", "-f", "-")
		require.NoError(t, err)
		var phase string
		deadline := time.Now().Add(2 * time.Minute)
		for phase != "Succeeded" && phase != "Failed" && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			phase, err = run(10*time.Second, "", "get", "pod", "client", "-o=jsonpath={.status.phase}")
			if err != nil {
				t.Logf("polling the client pod: %v", err)
			}
		}
		logs, logErr := run(30*time.Second, "", "logs", "client")
		t.Logf("client pod %s %.1fs after apply; its log:\n%s", phase, time.Since(start).Seconds(), logs)
		require.NoError(t, logErr)
		require.Equal(t, "Succeeded", phase, "client pod phase")
		for _, name := range names {
			require.Regexp(t, fmt.Sprintf(`(?m)^%s resolved %s body %s tries `,
				regexp.QuoteMeta(name), regexp.QuoteMeta(clusterIP), token), logs,
				"the client reached %s at the ClusterIP", name)
		}
	})

	t.Run("host to NodePort", func(t *testing.T) {
		requireHTTPBody(t, "http://"+net.JoinHostPort(c.NodeIP, nodePort)+"/", token)
	})

	t.Run("host to ClusterIP", func(t *testing.T) {
		requireHTTPBody(t, "http://"+net.JoinHostPort(clusterIP, "80")+"/", token)
	})

	if t.Failed() {
		diagnose()
	}
}

// requireHTTPBody GETs url from this machine until it answers 200 with
// body want, for up to 30 s (kube-proxy applies a change within about a
// second).
func requireHTTPBody(t *testing.T, url, want string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	var last string
	for tries := 1; ; tries++ {
		resp, err := client.Get(url)
		if err == nil {
			body, readErr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if readErr == nil && resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == want {
				t.Logf("GET %s: answered after %d tries, %.2fs", url, tries, time.Since(start).Seconds())
				return
			}
			last = fmt.Sprintf("status %d, body %q, read error %v", resp.StatusCode, body, readErr)
		} else {
			last = err.Error()
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("GET %s: no answer with the token after %d tries in 30s; last: %s", url, tries, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// renderTemplate executes the template file with data.
func renderTemplate(t *testing.T, file string, data any) string {
	t.Helper()
	tmpl, err := template.ParseFiles(file)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tmpl.Execute(&out, data))
	return out.String()
}
