package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The Kueue of the harness (test/cluster/up.sh WITH_KUEUE=1): its queues
// and workloads, as the e2e suites drive them.

const (
	// EnvE2EKueue enables the tests that put jobs on a Kueue queue
	// (test/e2e.sh sets it, and starts Kueue).
	EnvE2EKueue = "TRAINSONNET_E2E_KUEUE"
	// KueueNamespaceLabel (value "true") makes Kueue's webhooks see a
	// namespace's objects: up.sh registers them for such namespaces only.
	KueueNamespaceLabel = "trainsonnet.test/kueue"
	// KueueLow and KueueHigh are WorkloadPriorityClasses (KueuePriorities).
	KueueLow, KueueHigh = "trainsonnet-e2e-low", "trainsonnet-e2e-high"
)

// Kueue skips the test unless EnvE2EKueue=1, and fails it if the cluster
// runs no Kueue then.
func Kueue(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvE2EKueue) != "1" {
		t.Skipf("needs Kueue: set %s=1 and start the cluster with WITH_KUEUE=1 (test/e2e.sh does both)", EnvE2EKueue)
	}
	if os.Getenv("TRAINSONNET_KUEUE") != "1" {
		t.Fatalf("%s=1, but the cluster runs no Kueue: start it with WITH_KUEUE=1", EnvE2EKueue)
	}
}

// KueueQueue is a queue of a namespace of its own: a ResourceFlavor and a
// ClusterQueue both named after the namespace, and the LocalQueue "lq".
// A workload of lower priority may be preempted within it.
type KueueQueue struct {
	k         *Kubectl
	Namespace string
	// Resources are the ClusterQueue's covered resources.
	Resources []string
}

// KueueQueue labels namespace ns for Kueue (KueueNamespaceLabel), gives
// its containers default requests (a LimitRange), creates the
// WorkloadPriorityClasses KueueLow and KueueHigh if missing, and a queue
// in it whose flavor gives admitted pods nodeLabels and tolerations
// (nil: none), with plenty of cpu, memory and nvidia.com/gpu; the flavor
// and the ClusterQueue go when the test ends (after ns: cleanups run last
// first, and a ClusterQueue waits for its workloads).
func (k *Kubectl) KueueQueue(t testing.TB, ns string, nodeLabels map[string]string, tolerations []any) *KueueQueue {
	t.Helper()
	ctx := t.Context()
	if _, err := k.Run(ctx, nil, "label", "namespace", ns, KueueNamespaceLabel+"=true"); err != nil {
		t.Fatal(err)
	}
	q := &KueueQueue{k: k, Namespace: ns, Resources: []string{"cpu", "memory", GPUResource}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := k.Run(ctx, nil, "delete", "clusterqueue,resourceflavor", ns, "--ignore-not-found", "--wait=false"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	flavor := map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": map[string]any{"name": ns}}
	spec := map[string]any{}
	if nodeLabels != nil {
		spec["nodeLabels"] = nodeLabels
	}
	if tolerations != nil {
		spec["tolerations"] = tolerations
	}
	if len(spec) > 0 {
		flavor["spec"] = spec
	}
	priority := func(name string, value int) map[string]any {
		return map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
			"metadata": map[string]any{"name": name}, "value": value}
	}
	local := map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": "lq", "namespace": ns},
		"spec":     map[string]any{"clusterQueue": ns},
	}
	// Kueue counts what pods request: a pod that requests nothing takes
	// no quota, and gets no flavor's node labels and tolerations either
	// (such as the Spark master's, or the TensorFlow parameter servers').
	// Default requests, as platform teams set them for queued namespaces.
	limits := map[string]any{
		"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "defaults", "namespace": ns},
		"spec": map[string]any{"limits": []any{map[string]any{
			"type": "Container", "defaultRequest": map[string]string{"cpu": "50m", "memory": "64Mi"},
		}}},
	}
	if err := q.apply(ctx, limits, priority(KueueLow, 100), priority(KueueHigh, 1000), flavor, q.clusterQueue(nil), local); err != nil {
		t.Fatal(err)
	}
	return q
}

// Cut sets the ClusterQueue's quota of the resources in cut (a quantity
// each); the others keep plenty.
func (q *KueueQueue) Cut(ctx context.Context, cut map[string]string) error {
	return q.apply(ctx, q.clusterQueue(cut))
}

func (q *KueueQueue) clusterQueue(cut map[string]string) map[string]any {
	var quotas []any
	for _, r := range q.Resources {
		quota := map[string]string{"cpu": "1000", "memory": "10Ti"}[r]
		if quota == "" {
			quota = "1000"
		}
		if v, ok := cut[r]; ok {
			quota = v
		}
		quotas = append(quotas, map[string]any{"name": r, "nominalQuota": quota})
	}
	return map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": q.Namespace},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]string{"kubernetes.io/metadata.name": q.Namespace}},
			"preemption":        map[string]any{"withinClusterQueue": "LowerPriority"},
			"resourceGroups": []any{map[string]any{
				"coveredResources": q.Resources,
				"flavors":          []any{map[string]any{"name": q.Namespace, "resources": quotas}},
			}},
		},
	}
}

func (q *KueueQueue) apply(ctx context.Context, objs ...map[string]any) error {
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
	if err != nil {
		return err
	}
	_, err = q.k.Run(ctx, doc, "apply", "--server-side", "--force-conflicts", "--field-manager="+FieldManager, "-f", "-")
	return err
}

// Workload is what the suites read of a Kueue Workload.
type Workload struct {
	Metadata struct {
		Name            string `json:"name"`
		OwnerReferences []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		PodSets []struct {
			Count int `json:"count"`
		} `json:"podSets"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
		Admission *struct {
			PodSetAssignments []struct {
				ResourceUsage map[string]string `json:"resourceUsage"`
			} `json:"podSetAssignments"`
		} `json:"admission"`
	} `json:"status"`
}

// Pods is the number of pods the workload holds.
func (w *Workload) Pods() int {
	n := 0
	for _, ps := range w.Spec.PodSets {
		n += ps.Count
	}
	return n
}

// Condition reports whether the workload's condition typ is True.
func (w *Workload) Condition(typ string) bool {
	for _, c := range w.Status.Conditions {
		if c.Type == typ {
			return c.Status == "True"
		}
	}
	return false
}

// Pending reports whether Kueue has looked at the workload and reserved
// it no quota.
func (w *Workload) Pending() bool {
	for _, c := range w.Status.Conditions {
		if c.Type == "QuotaReserved" {
			return c.Status == "False"
		}
	}
	return false
}

// Usage is the workload's admitted use of resource r.
func (w *Workload) Usage(r string) resource.Quantity {
	var total resource.Quantity
	if w.Status.Admission == nil {
		return total
	}
	for _, a := range w.Status.Admission.PodSetAssignments {
		if v, ok := a.ResourceUsage[r]; ok {
			if q, err := resource.ParseQuantity(v); err == nil {
				total.Add(q)
			}
		}
	}
	return total
}

// Workloads are the Kueue workloads in ns of the job named job (the
// prefix of its objects): the one named after it (a pod group) and those
// owned by its objects (a Job, a Deployment's pods).
func (k *Kubectl) Workloads(ctx context.Context, ns, job string) ([]*Workload, error) {
	out, err := k.Run(ctx, nil, "get", "workloads.kueue.x-k8s.io", "--namespace", ns, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("list workloads: %w", err)
	}
	var list struct {
		Items []*Workload `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("list workloads: decode: %w", err)
	}
	var wls []*Workload
	for _, w := range list.Items {
		mine := w.Metadata.Name == job
		for _, o := range w.Metadata.OwnerReferences {
			mine = mine || strings.HasPrefix(o.Name, job+"-") || o.Kind == "JobSet" && o.Name == job
		}
		if mine {
			wls = append(wls, w)
		}
	}
	return wls, nil
}

// DescribeWorkloads says what a failing test needs to know of wls.
func DescribeWorkloads(wls []*Workload) string {
	var b strings.Builder
	for _, w := range wls {
		fmt.Fprintf(&b, "%s (%d pods;", w.Metadata.Name, w.Pods())
		for _, c := range w.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s %s: %s;", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString(") ")
	}
	return fmt.Sprintf("%d workloads: %s", len(wls), b.String())
}
