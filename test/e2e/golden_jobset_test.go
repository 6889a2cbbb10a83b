package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

// A golden case in the JobSet form (jobset) is one JobSet. Beyond what
// every case gets (a strict dry run, apply, re-apply), the JobSet
// controller must make what the golden promises: the headless Service its
// network names, a Job <set>-<replicated Job>-0 per replicated Job (the
// first alone while an InOrder set waits for it to be ready), and, unless
// the set is suspended (queued), each made Job's pods, host names
// <Job>-<i> under the set's subdomain. The pods are admitted in the
// case's namespace, which enforces its Pod Security level: a pod the
// level refuses is never made. Pod Security reads no JobSet, so the next
// stricter level is checked on the set's Jobs as batch/v1 Jobs (jobSetJobs).

// jobSetsOf returns the JobSets among objs.
func jobSetsOf(objs []map[string]any) []map[string]any {
	var sets []map[string]any
	for _, o := range objs {
		if o["kind"] == "JobSet" {
			sets = append(sets, o)
		}
	}
	return sets
}

// jobSetJobs is manifests with every JobSet replaced by the batch/v1 Jobs
// its controller makes of it (their names, labels and specs; no owner).
func jobSetJobs(t testing.TB, manifests []byte) []byte {
	t.Helper()
	objs, err := decodeObjects(manifests)
	require.NoError(t, err)
	var docs []string
	for _, o := range objs {
		var out []any
		if o["kind"] != "JobSet" {
			out = []any{o}
		}
		for _, rj := range asList(nested(o, "spec", "replicatedJobs")) {
			name := fmt.Sprintf("%v-%v-0", nested(o, "metadata", "name"), asMap(rj)["name"])
			md := map[string]any{"name": name}
			if ns := nested(o, "metadata", "namespace"); ns != nil {
				md["namespace"] = ns
			}
			if l := nested(rj, "template", "metadata", "labels"); l != nil {
				md["labels"] = l
			}
			out = append(out, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": nested(rj, "template", "spec")})
		}
		for _, x := range out {
			b, err := yaml.Marshal(x)
			require.NoError(t, err)
			docs = append(docs, string(b))
		}
	}
	return []byte(strings.Join(docs, "---\n"))
}

// checkJobSetMade waits (a minute at most) for the JobSet controller to
// make what set promises in namespace ns.
func checkJobSetMade(t testing.TB, k *kube.Kubectl, ns string, set map[string]any) {
	t.Helper()
	ctx := t.Context()
	name := fmt.Sprint(nested(set, "metadata", "name"))
	subdomain := fmt.Sprint(nested(set, "spec", "network", "subdomain"))
	suspended := nested(set, "spec", "suspend") == true
	inOrder := nested(set, "spec", "startupPolicy", "startupPolicyOrder") == "InOrder"
	type want struct {
		job  string
		pods int
	}
	var wants []want
	for i, rj := range asList(nested(set, "spec", "replicatedJobs")) {
		if inOrder && i > 0 {
			break // made once the one before is ready
		}
		n, _ := nested(rj, "template", "spec", "parallelism").(float64)
		wants = append(wants, want{job: fmt.Sprintf("%s-%v-0", name, asMap(rj)["name"]), pods: int(n)})
	}
	type meta struct {
		Name            string
		OwnerReferences []struct{ Kind, Name string }
		Labels          map[string]string
	}
	type list struct {
		Items []struct {
			Metadata meta
			Spec     struct{ Hostname, Subdomain string }
		}
	}
	get := func(kind, selector string) (list, error) {
		var l list
		out, err := k.Run(ctx, nil, "get", kind, "-n", ns, "-l", selector, "-o", "json")
		if err != nil {
			return l, err
		}
		return l, json.Unmarshal(out, &l)
	}
	owned := func(m meta, kind, owner string) bool {
		for _, o := range m.OwnerReferences {
			if o.Kind == kind && o.Name == owner {
				return true
			}
		}
		return false
	}
	var last string
	ok := func() bool {
		out, err := k.Run(ctx, nil, "get", "service", subdomain, "-n", ns, "-o", "json")
		if err != nil {
			last = "no Service " + subdomain + ": " + err.Error()
			return false
		}
		var svc struct {
			Metadata meta
			Spec     struct {
				ClusterIP string `json:"clusterIP"`
				Selector  map[string]string
			}
		}
		if err := json.Unmarshal(out, &svc); err != nil || svc.Spec.ClusterIP != "None" || !owned(svc.Metadata, "JobSet", name) ||
			svc.Spec.Selector["jobset.sigs.k8s.io/jobset-name"] != name {
			last = fmt.Sprintf("Service %s is not the set's headless Service: %s", subdomain, out)
			return false
		}
		jobs, err := get("jobs", "jobset.sigs.k8s.io/jobset-name="+name)
		if err != nil {
			last = err.Error()
			return false
		}
		made := map[string]bool{}
		for _, j := range jobs.Items {
			if owned(j.Metadata, "JobSet", name) {
				made[j.Metadata.Name] = true
			}
		}
		for _, w := range wants {
			if !made[w.job] {
				last = fmt.Sprintf("no Job %s owned by JobSet %s (made: %v)", w.job, name, made)
				return false
			}
			if suspended {
				continue
			}
			pods, err := get("pods", "job-name="+w.job)
			if err != nil {
				last = err.Error()
				return false
			}
			if len(pods.Items) != w.pods {
				last = fmt.Sprintf("Job %s has %d pods, not %d", w.job, len(pods.Items), w.pods)
				return false
			}
			hosts := map[string]bool{}
			for _, p := range pods.Items {
				if p.Spec.Subdomain != subdomain {
					last = fmt.Sprintf("pod %s has subdomain %q, not %q", p.Metadata.Name, p.Spec.Subdomain, subdomain)
					return false
				}
				hosts[p.Spec.Hostname] = true
			}
			for i := range w.pods {
				if h := fmt.Sprintf("%s-%d", w.job, i); !hosts[h] {
					last = fmt.Sprintf("Job %s has no pod with host name %s (%v)", w.job, h, hosts)
					return false
				}
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("JobSet %s in %s: the controller did not make what the golden promises within a minute: %s", name, ns, last)
		}
		time.Sleep(time.Second)
	}
	t.Logf("JobSet %s: Service %s, Jobs %v made by the controller%s", name, subdomain, wants, map[bool]string{true: " (suspended: no pods)", false: ", and their pods"}[suspended])
}
