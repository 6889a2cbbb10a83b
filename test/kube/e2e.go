package kube

import (
	"context"
	"os"
	"testing"
	"time"
)

// cleanupTimeout bounds each deletion made in a test's cleanup.
const cleanupTimeout = 2 * time.Minute

// E2E returns a Kubectl from the environment for an end-to-end test, or
// skips the test unless TRAINSONNET_E2E=1, so that a plain `go test ./...`
// stays fast and hermetic. With TRAINSONNET_E2E=1, a missing KUBECTL or
// KUBECONFIG or an API server that does not answer fails the test instead:
// CI asked for the e2e tests, so they must not silently disappear.
func E2E(t testing.TB) *Kubectl {
	t.Helper()
	if os.Getenv(EnvE2E) != "1" {
		t.Skipf("end-to-end test: set %s=1 and run against a cluster (test/cluster/with-cluster.sh)", EnvE2E)
	}
	k, err := FromEnv()
	if err != nil {
		t.Fatalf("%s=1 but: %v", EnvE2E, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := k.Run(ctx, nil, "get", "--raw=/readyz"); err != nil {
		t.Fatalf("%s=1 but the API server is not ready: %v", EnvE2E, err)
	}
	return k
}

// Namespace creates a namespace for the test (see CreateNamespace) and
// deletes it when the test and its subtests have finished, waiting for it
// to be gone.
func (k *Kubectl) Namespace(t testing.TB, prefix string, level PodSecurityLevel) string {
	t.Helper()
	name, err := k.CreateNamespace(t.Context(), prefix, level)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout+30*time.Second)
		defer cancel()
		if err := k.DeleteNamespace(ctx, name, cleanupTimeout); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

// FakeNodes creates kwok nodes for the test (see CreateFakeNodes) and deletes
// them when the test has finished. Cleanups run last-in first-out: call it
// before Namespace, so that the namespace's pods are gone before the nodes
// they run on.
func (k *Kubectl) FakeNodes(t testing.TB, nodes ...FakeNode) {
	t.Helper()
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	// Register the cleanup first: a failure half-way may have created some.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := k.DeleteNodes(ctx, names...); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := k.CreateFakeNodes(t.Context(), nodes...); err != nil {
		t.Fatal(err)
	}
}
