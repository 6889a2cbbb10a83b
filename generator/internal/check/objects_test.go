package check

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

func obj(apiVersion, kind, ns, name string) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

// TestObjectOrder: the kinds of kindOrder first, then the other kinds
// trainsonnet knows by kind, then the custom kinds by API group and kind,
// each by namespace and name; a custom kind named like a known one
// (example.com Job) is still custom.
func TestObjectOrder(t *testing.T) {
	items := []any{
		obj("kubeflow.org/v2beta1", "MPIJob", "b", "x"),
		obj("example.com/v1", "Job", "", "a"),
		obj("jobset.x-k8s.io/v1alpha2", "JobSet", "", "z"),
		obj("kubeflow.org/v2beta1", "MPIJob", "a", "y"),
		obj("kubeflow.org/v2beta1", "MPIJob", "a", "x"),
		obj("kubeflow.org/v1", "TFJob", "", "t"),
		obj("apps/v1", "ReplicaSet", "", "r"),
		obj("batch/v1", "Job", "", "j"),
		obj("v1", "ConfigMap", "", "c"),
	}
	objs, _, err := Objects("test", items, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.APIVersion+" "+o.ID())
	}
	want := []string{
		"v1 ConfigMap c",
		"batch/v1 Job j",
		"apps/v1 ReplicaSet r",
		"example.com/v1 Job a",
		"jobset.x-k8s.io/v1alpha2 JobSet z",
		"kubeflow.org/v2beta1 MPIJob a/x",
		"kubeflow.org/v2beta1 MPIJob a/y",
		"kubeflow.org/v2beta1 MPIJob b/x",
		"kubeflow.org/v1 TFJob t",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCustomKinds: what a custom kind must have, and that a kind of a
// group trainsonnet knows is never taken for one.
func TestCustomKinds(t *testing.T) {
	for _, c := range []struct {
		item any
		want string // in the error; "" for none
	}{
		{obj("kubeflow.org/v2beta1", "MPIJob", "ml", "pi"), ""},
		{map[string]any{"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": map[string]any{"name": "pi",
			"labels": map[string]any{"a": "b"}, "annotations": map[string]any{"example.com/x": "anything, at all"}}, "spec": map[string]any{"anything": 1}}, ""},
		{obj("kubeflow.org/v2beta1", "MPIJob", "", "Pi"), `metadata.name: Invalid value: "Pi"`},
		{obj("kubeflow.org/v2beta1", "MPIJob", "Team", "pi"), `metadata.namespace: Invalid value: "Team"`},
		{obj("kubeflow.org/v2beta1", "MPIJob", "", ""), `metadata.name: Required value`},
		{obj("kubeflow.org/V2", "MPIJob", "", "pi"), `apiVersion: Invalid value: "kubeflow.org/V2": the version`},
		{obj("kube_flow.org/v2", "MPIJob", "", "pi"), `apiVersion: Invalid value: "kube_flow.org/v2": the group`},
		{obj("kubeflow.org/v2", "mpiJob", "", "pi"), `kind: Invalid value: "mpiJob"`},
		{map[string]any{"apiVersion": "kubeflow.org/v2", "kind": "MPIJob"}, "metadata: Required value"},
		{map[string]any{"apiVersion": "kubeflow.org/v2", "kind": "MPIJob", "metadata": map[string]any{"name": "pi", "labels": map[string]any{"a b": "c"}}},
			`metadata.labels: Invalid value: "a b"`},
		{map[string]any{"apiVersion": "kubeflow.org/v2", "kind": "MPIJob", "metadata": map[string]any{"name": "pi", "annotations": map[string]any{"a b": "c"}}},
			`metadata.annotations: Invalid value: "a b"`},
		{map[string]any{"apiVersion": "kubeflow.org/v2", "kind": "MPIJob", "metadata": map[string]any{"name": "pi", "lables": map[string]any{}}},
			`unknown field "metadata.lables"`},
		{map[string]any{"apiVersion": "kubeflow.org/v2", "kind": "MPIJob", "metadata": map[string]any{"name": "pi", "labels": map[string]any{"a": 1}}},
			`metadata.labels`},
		// Groups trainsonnet knows stay strict: core, apps, a version it
		// does not have.
		{obj("v1", "ConfigMapp", "", "c"), "v1 ConfigMapp is not a type trainsonnet knows"},
		// No apiVersion: said so, with the one a kind of k8s.io/api has.
		{obj("", "ConfigMap", "", "c"), "the object has no apiVersion: a ConfigMap is apiVersion: v1"},
		{obj("", "Job", "", "c"), "the object has no apiVersion: a Job is apiVersion: batch/v1"},
		{obj("", "Foo", "", "c"), "the object has no apiVersion"},
		// Typed kinds: decoded strictly from the tree.
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "dataa": map[string]any{}},
			`unknown field "dataa"`},
		{map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": "ssh"}}}}, `port`},
		{map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"Port": int64(22)}}}}, `unknown field "spec.ports[0].Port"`},
		{map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": map[string]any{
			"containers": []any{map[string]any{"name": "a", "resources": map[string]any{"limits": map[string]any{"cpu": "two"}}}}}}, `quantities must match`},
		{map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(22), "targetPort": "ssh"}}}}, ""},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "Bad_Name"}}, `metadata.name`},
		{map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": 22.5}}}}, `port`},
		{map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(1) << 40}}}}, `port`},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"a": int64(1)}}, `data`},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "labels": nil}, "data": nil}, ""},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "immutable": "yes"}, `immutable`},
		{obj("apps/v1", "Deploymnet", "", "d"), "apps/v1 Deploymnet is not a type trainsonnet knows"},
		{obj("batch/v1beta1", "CronJob", "", "c"), "batch/v1beta1 CronJob is not a type trainsonnet knows"},
	} {
		_, problems, err := Objects("test", []any{c.item}, nil, false)
		if err == nil && len(problems) > 0 {
			err = errors.New(problems[0].String("test"))
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.item, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want one with %q", c.item, err, c.want)
		}
	}
}

// TestJobSetJobs: a JobSet's replicated Jobs are batch/v1 Job templates,
// decoded strictly: a misspelt Job or pod field is the prototype's bug,
// named with the replicated Job it is in; a good one passes, its pod
// checked as every custom resource's.
func TestJobSetJobs(t *testing.T) {
	set := func(jobSpec map[string]any) any {
		o := obj("jobset.x-k8s.io/v1alpha2", "JobSet", "", "train")
		o["spec"] = map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "worker", "replicas": 1,
			"template": map[string]any{"spec": jobSpec},
		}}}
		return o
	}
	pod := map[string]any{"spec": map[string]any{
		"restartPolicy": "Never",
		"containers":    []any{map[string]any{"name": "w", "image": "busybox"}},
	}}
	if _, _, err := Objects("test", []any{set(map[string]any{"completions": 2, "template": pod})}, nil, false); err != nil {
		t.Errorf("a good JobSet: %v", err)
	}
	for name, spec := range map[string]map[string]any{
		"a misspelt Job field":      {"completion": 2, "template": pod},
		"a misspelt pod field":      {"template": map[string]any{"spec": map[string]any{"containers": pod["spec"].(map[string]any)["containers"], "restartPolicyy": "Never"}}},
		"a field of the wrong type": {"completions": "two", "template": pod},
	} {
		_, _, err := Objects("test", []any{set(spec)}, nil, false)
		if err == nil || !strings.Contains(err.Error(), "spec.replicatedJobs[0].template") {
			t.Errorf("%s: want an error naming spec.replicatedJobs[0].template, got %v", name, err)
		}
	}
}
