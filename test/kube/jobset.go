package kube

import (
	"os"
	"testing"
)

// The JobSet controller of the harness (test/cluster/up.sh WITH_JOBSET=1).

const (
	// EnvE2EJobSet enables the tests that run JobSets (test/e2e.sh sets
	// it, and starts the JobSet controller).
	EnvE2EJobSet = "TRAINSONNET_E2E_JOBSET"
	// JobSetNamespaceLabel (value "true") makes JobSet's webhooks see a
	// namespace's objects: up.sh registers them for such namespaces only.
	JobSetNamespaceLabel = "trainsonnet.test/jobset"
)

// JobSet skips the test unless EnvE2EJobSet=1, and fails it if the
// cluster runs no JobSet controller then.
func JobSet(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvE2EJobSet) != "1" {
		t.Skipf("needs the JobSet controller: set %s=1 and start the cluster with WITH_JOBSET=1 (test/e2e.sh does both)", EnvE2EJobSet)
	}
	if os.Getenv("TRAINSONNET_JOBSET") != "1" {
		t.Fatalf("%s=1, but the cluster runs no JobSet controller: start it with WITH_JOBSET=1", EnvE2EJobSet)
	}
}

// JobSetNamespace labels namespace ns for JobSet's webhooks.
func (k *Kubectl) JobSetNamespace(t testing.TB, ns string) {
	t.Helper()
	if _, err := k.Run(t.Context(), nil, "label", "namespace", ns, JobSetNamespaceLabel+"=true"); err != nil {
		t.Fatal(err)
	}
}
