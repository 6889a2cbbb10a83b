package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PodSecurityLevel is a Pod Security Admission level.
type PodSecurityLevel string

// The Pod Security Admission levels.
const (
	Privileged PodSecurityLevel = "privileged"
	Baseline   PodSecurityLevel = "baseline"
	Restricted PodSecurityLevel = "restricted"
)

// E2ELabel marks every object this package creates, so that leftovers of a
// killed test run can be found with `kubectl get ns,nodes -l trainsonnet.io/e2e`.
const E2ELabel = "trainsonnet.io/e2e"

// UniqueName returns prefix followed by "-" and 8 random hex digits. The
// prefix is cut so that the result is a valid DNS label (63 characters).
func UniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	if len(prefix) > 54 {
		prefix = prefix[:54]
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// CreateNamespace creates a namespace named UniqueName(prefix) whose Pod
// Security Admission labels enforce, warn about and audit level, and returns
// its name.
func (k *Kubectl) CreateNamespace(ctx context.Context, prefix string, level PodSecurityLevel) (string, error) {
	switch level {
	case Privileged, Baseline, Restricted:
	default:
		return "", fmt.Errorf("create namespace: unknown Pod Security level %q", level)
	}
	name := UniqueName(prefix)
	labels := map[string]string{E2ELabel: "true"}
	for _, mode := range []string{"enforce", "warn", "audit"} {
		labels["pod-security.kubernetes.io/"+mode] = string(level)
		labels["pod-security.kubernetes.io/"+mode+"-version"] = "latest"
	}
	doc, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name, "labels": labels},
	})
	if err != nil {
		return "", fmt.Errorf("create namespace %s: %w", name, err)
	}
	if _, err := k.Run(ctx, doc, "create", "-f", "-", "-o", "name"); err != nil {
		return "", fmt.Errorf("create namespace %s: %w", name, err)
	}
	return name, nil
}

// DeleteNamespace deletes a namespace and waits up to wait for it to be gone
// (the namespace controller first deletes everything in it). A namespace
// that does not exist is not an error.
//
// Its Jobs go first, as a user's `kubectl delete -f` would delete them:
// since Kubernetes 1.33 the namespace controller deletes a namespace's pods
// before anything else (OrderedNamespaceDeletion), and the Job controller
// keeps a failed pod of an index that has retries left (backoffLimitPerIndex,
// the pytorch prototype's) until it has made the pod's replacement, which a
// terminating namespace refuses: the namespace would wait for ever. A
// deleted Job lets go of its pods at once.
func (k *Kubectl) DeleteNamespace(ctx context.Context, name string, wait time.Duration) error {
	if _, err := k.run(ctx, wait, false, nil, "delete", "jobs", "--all", "--namespace", name,
		"--ignore-not-found", "--wait=false"); err != nil {
		return fmt.Errorf("delete the jobs of namespace %s: %w", name, err)
	}
	_, err := k.run(ctx, wait+30*time.Second, false, nil, "delete", "namespace", name,
		"--ignore-not-found", "--wait=true", "--timeout="+wait.String())
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}

// applyArgs are the arguments of every apply: server-side, with strict
// field validation (the server rejects unknown and duplicate fields).
func applyArgs(namespace string, extra ...string) []string {
	args := []string{"apply", "--server-side", "--field-manager=" + FieldManager,
		"--validate=strict", "-f", "-", "-o", "name"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	return append(args, extra...)
}

// ApplyDryRun sends the (multi-document) YAML or JSON manifests to the API
// server as a server-side apply with dry run and strict field validation:
// schema, validation, defaulting and admission (including Pod Security) all
// run, nothing is stored. Objects without a namespace go to namespace
// (kubectl refuses objects that name another one). On
// rejection the *Error's Stderr carries the server's message verbatim; note
// that an unknown field makes server-side apply fail with HTTP 500 and
// "field not declared in schema", not with a 400.
func (k *Kubectl) ApplyDryRun(ctx context.Context, namespace string, manifests []byte) error {
	if _, err := k.Run(ctx, manifests, applyArgs(namespace, "--dry-run=server")...); err != nil {
		return fmt.Errorf("server-side dry-run apply: %w", err)
	}
	return nil
}

// Apply server-side applies the manifests for real, with strict field
// validation; see ApplyDryRun.
func (k *Kubectl) Apply(ctx context.Context, namespace string, manifests []byte) error {
	if _, err := k.Run(ctx, manifests, applyArgs(namespace)...); err != nil {
		return fmt.Errorf("server-side apply: %w", err)
	}
	return nil
}

// Diff runs `kubectl diff --server-side` on the manifests and returns the
// diff, which is empty when applying them would change nothing. The diff
// compares whole objects, status included, so a controller writing status
// between kubectl's read and its dry run shows up as a change;
// ReapplyUnchanged is the robust check.
func (k *Kubectl) Diff(ctx context.Context, namespace string, manifests []byte) (string, error) {
	args := []string{"diff", "--server-side", "--field-manager=" + FieldManager, "-f", "-"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	out, err := k.Run(ctx, manifests, args...)
	var kerr *Error
	if errors.As(err, &kerr) && kerr.ExitCode() == 1 { // 1: differences found
		return string(out), nil
	}
	if err != nil {
		return "", fmt.Errorf("server-side diff: %w", err)
	}
	return "", nil
}

// Object is the part of a live object that this package looks at.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string              `json:"name"`
		Namespace       string              `json:"namespace,omitempty"`
		UID             string              `json:"uid"`
		ResourceVersion string              `json:"resourceVersion"`
		Generation      int64               `json:"generation,omitempty"`
		ManagedFields   []ManagedFieldEntry `json:"managedFields,omitempty"`
	} `json:"metadata"`
}

// ManagedFieldEntry is one entry of metadata.managedFields.
type ManagedFieldEntry struct {
	Manager     string          `json:"manager"`
	Operation   string          `json:"operation"`
	APIVersion  string          `json:"apiVersion"`
	Time        string          `json:"time"`
	Subresource string          `json:"subresource,omitempty"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty"`
}

// Key identifies the object: kind, namespace and name.
func (o *Object) Key() string {
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// applyEntry returns this package's Apply entry of managedFields, or nil.
func (o *Object) applyEntry() *ManagedFieldEntry {
	for i, e := range o.Metadata.ManagedFields {
		if e.Manager == FieldManager && e.Operation == "Apply" && e.Subresource == "" {
			return &o.Metadata.ManagedFields[i]
		}
	}
	return nil
}

// Live returns those objects named in the manifests that exist, as the
// server has them (managedFields included).
func (k *Kubectl) Live(ctx context.Context, namespace string, manifests []byte) ([]Object, error) {
	args := []string{"get", "-f", "-", "--ignore-not-found", "--show-managed-fields", "-o", "json"}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	out, err := k.Run(ctx, manifests, args...)
	if err != nil {
		return nil, fmt.Errorf("get live objects: %w", err)
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, nil
	}
	// One object comes back as itself, several as a List.
	var list struct {
		Kind  string   `json:"kind"`
		Items []Object `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("get live objects: decode: %w", err)
	}
	if list.Kind == "List" {
		return list.Items, nil
	}
	var obj Object
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, fmt.Errorf("get live objects: decode: %w", err)
	}
	return []Object{obj}, nil
}

// ReapplyUnchanged server-side applies manifests that were applied before
// and checks that the second apply changed nothing: every object keeps its
// UID (not recreated), its generation (no spec change) and this package's
// managedFields Apply entry, timestamp included.
//
// Comparing resourceVersions would be simpler but is not reliable: a
// controller writing status (a Job's, say) between the two reads bumps the
// resourceVersion without any change from us. The Apply entry's timestamp
// only moves when our apply really writes (the API server keeps the old
// timestamps on a no-op apply); since it has a resolution of one second,
// ReapplyUnchanged waits until the last write by this field manager is more
// than a second old before it re-applies.
func (k *Kubectl) ReapplyUnchanged(ctx context.Context, namespace string, manifests []byte) error {
	before, err := k.Live(ctx, namespace, manifests)
	if err != nil {
		return fmt.Errorf("reapply: %w", err)
	}
	if len(before) == 0 {
		return errors.New("reapply: none of the objects exists; apply them first")
	}
	var last time.Time
	for i := range before {
		e := before[i].applyEntry()
		if e == nil {
			return fmt.Errorf("reapply: %s has no managedFields entry of %q; apply it with Apply first", before[i].Key(), FieldManager)
		}
		if t, err := time.Parse(time.RFC3339, e.Time); err == nil && t.After(last) {
			last = t
		}
	}
	if wait := time.Until(last.Add(time.Second + 50*time.Millisecond)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("reapply: %w", ctx.Err())
		}
	}
	// Only for the error message: what the server would change.
	diff, diffErr := k.Diff(ctx, namespace, manifests)
	if err := k.Apply(ctx, namespace, manifests); err != nil {
		return fmt.Errorf("reapply: %w", err)
	}
	after, err := k.Live(ctx, namespace, manifests)
	if err != nil {
		return fmt.Errorf("reapply: %w", err)
	}
	byKey := make(map[string]*Object, len(after))
	for i := range after {
		byKey[after[i].Key()] = &after[i]
	}
	var problems []string
	for i := range after {
		if !slices.ContainsFunc(before, func(b Object) bool { return b.Key() == after[i].Key() }) {
			problems = append(problems, after[i].Key()+": created by the re-apply (it did not exist before)")
		}
	}
	for i := range before {
		b := &before[i]
		a, ok := byKey[b.Key()]
		switch {
		case !ok:
			problems = append(problems, b.Key()+": gone after the re-apply")
		case a.Metadata.UID != b.Metadata.UID:
			problems = append(problems, b.Key()+": recreated (new UID)")
		case a.Metadata.Generation != b.Metadata.Generation:
			problems = append(problems, fmt.Sprintf("%s: generation %d -> %d", b.Key(), b.Metadata.Generation, a.Metadata.Generation))
		case !sameEntry(a.applyEntry(), b.applyEntry()):
			problems = append(problems, fmt.Sprintf("%s: written by the re-apply (resourceVersion %s -> %s)",
				b.Key(), b.Metadata.ResourceVersion, a.Metadata.ResourceVersion))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	msg := "reapply changed objects:\n  " + strings.Join(problems, "\n  ")
	switch {
	case diffErr != nil:
		msg += "\n(kubectl diff failed: " + diffErr.Error() + ")"
	case diff != "":
		msg += "\nkubectl diff --server-side before the re-apply:\n" + diff
	}
	return errors.New(msg)
}

func sameEntry(a, b *ManagedFieldEntry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.APIVersion == b.APIVersion && a.Time == b.Time && bytes.Equal(a.FieldsV1, b.FieldsV1)
}

// Wait runs `kubectl wait --for=<condition>` on the resources (for example
// "node/a", or "pod" with "--all"), for at most timeout.
func (k *Kubectl) Wait(ctx context.Context, namespace, condition string, timeout time.Duration, resources ...string) error {
	args := append([]string{"wait", "--for=" + condition, "--timeout=" + timeout.String()}, resources...)
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	if _, err := k.run(ctx, timeout+30*time.Second, false, nil, args...); err != nil {
		return fmt.Errorf("wait for %s: %w", condition, err)
	}
	return nil
}

// Pod is a summary of a live Pod.
type Pod struct {
	Name       string
	Namespace  string
	NodeName   string // empty while unscheduled
	Phase      string
	Conditions []PodCondition
}

// PodCondition is one entry of a Pod's status.conditions.
type PodCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Condition returns the condition of the given type, or nil.
func (p *Pod) Condition(typ string) *PodCondition {
	for i := range p.Conditions {
		if p.Conditions[i].Type == typ {
			return &p.Conditions[i]
		}
	}
	return nil
}

// WaitUnschedulable polls the pod name in namespace until the scheduler
// has judged it unschedulable (no node, PodScheduled False) and returns
// that condition, or an error once timeout has passed.
func (k *Kubectl) WaitUnschedulable(ctx context.Context, namespace, name string, timeout time.Duration) (*PodCondition, error) {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := k.Pods(ctx, namespace, "")
		if err == nil {
			for _, p := range pods {
				if c := p.Condition("PodScheduled"); p.Name == name && p.NodeName == "" && c != nil && c.Status == "False" {
					return c, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pod %s/%s was not unschedulable within %s (last error: %w)", namespace, name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Pods lists the pods in namespace matching the label selector (all pods if
// selector is empty), sorted by name.
func (k *Kubectl) Pods(ctx context.Context, namespace, selector string) ([]Pod, error) {
	args := []string{"get", "pods", "--namespace", namespace, "-o", "json"}
	if selector != "" {
		args = append(args, "--selector", selector)
	}
	out, err := k.Run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				Phase      string         `json:"phase"`
				Conditions []PodCondition `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("list pods: decode: %w", err)
	}
	pods := make([]Pod, 0, len(list.Items))
	for _, it := range list.Items {
		pods = append(pods, Pod{
			Name: it.Metadata.Name, Namespace: it.Metadata.Namespace,
			NodeName: it.Spec.NodeName, Phase: it.Status.Phase, Conditions: it.Status.Conditions,
		})
	}
	slices.SortFunc(pods, func(a, b Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// KwokAnnotation is the annotation (with value "fake") that makes the kwok
// started by `WITH_KWOK=1 test/cluster/up.sh` manage a node.
const KwokAnnotation = "kwok.x-k8s.io/node"

// GPUResource is the extended resource of NVIDIA GPUs.
const GPUResource = "nvidia.com/gpu"

// FakeNode describes a node that kwok pretends to run.
type FakeNode struct {
	Name   string
	Labels map[string]string
	// GPUs is the nvidia.com/gpu capacity and allocatable (0: none).
	GPUs int
	// CPU, Memory and Pods default to "32", "256Gi" and 110.
	CPU, Memory string
	Pods        int
}

func (n FakeNode) object() map[string]any {
	labels := map[string]string{
		E2ELabel:                 "true",
		"type":                   "kwok",
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	cpu, mem, pods := n.CPU, n.Memory, n.Pods
	if cpu == "" {
		cpu = "32"
	}
	if mem == "" {
		mem = "256Gi"
	}
	if pods == 0 {
		pods = 110
	}
	res := map[string]string{"cpu": cpu, "memory": mem, "pods": strconv.Itoa(pods)}
	if n.GPUs > 0 {
		res[GPUResource] = strconv.Itoa(n.GPUs)
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"name":        n.Name,
			"labels":      labels,
			"annotations": map[string]string{KwokAnnotation: "fake"},
		},
		// The API server keeps the status given on create, so the
		// scheduler sees the capacity at once.
		"status": map[string]any{"capacity": res, "allocatable": res},
	}
}

// CreateFakeNodes creates the nodes for kwok and waits up to a minute until
// kwok reports them Ready. It needs a cluster started with WITH_KWOK=1.
// Note that kwok's default stages complete pods owned by a Job at once
// (phase Succeeded, freeing their resources); pods of a StatefulSet or bare
// pods stay Running.
func (k *Kubectl) CreateFakeNodes(ctx context.Context, nodes ...FakeNode) error {
	if len(nodes) == 0 {
		return nil
	}
	items := make([]any, 0, len(nodes))
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.Name == "" {
			return errors.New("create fake nodes: a node has no name")
		}
		items = append(items, n.object())
		names = append(names, "node/"+n.Name)
	}
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return fmt.Errorf("create fake nodes: %w", err)
	}
	if _, err := k.Run(ctx, doc, "create", "-f", "-", "-o", "name"); err != nil {
		return fmt.Errorf("create fake nodes: %w", err)
	}
	if err := k.Wait(ctx, "", "condition=Ready", time.Minute, names...); err != nil {
		return fmt.Errorf("create fake nodes (is kwok running? start the cluster with WITH_KWOK=1): %w", err)
	}
	return nil
}

// DeleteNodes deletes the named nodes and waits for them to be gone.
// Missing nodes are not an error.
func (k *Kubectl) DeleteNodes(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	args := append([]string{"delete", "node", "--ignore-not-found", "--wait=true", "--timeout=1m"}, names...)
	if _, err := k.Run(ctx, nil, args...); err != nil {
		return fmt.Errorf("delete nodes: %w", err)
	}
	return nil
}
