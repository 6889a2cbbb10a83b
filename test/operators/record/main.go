// Command record runs a Kubeflow operator (the training operator,
// mpi-operator or the Trainer v2) as a host process against the harness's control plane,
// applies each of the operator's own upstream examples, and records every
// object the operator made for it: the reference that test/operators'
// migration test compares trainsonnet's renders with, process by process.
//
//	test/operators/record.sh        # builds the operators, starts a cluster, runs this
//
// Each example becomes one file of testdata: a header naming the operator's
// version and the example's source, then a YAML stream of the example as
// applied and the objects the operator created (pods, services, config maps,
// secrets, jobs, JobSets) as the API server holds them, with what changes from run to
// run taken out (UIDs, times, resource versions, status, generated key
// material) and the namespace written as "default".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/test/kube"
)

func main() {
	var o options
	flag.StringVar(&o.operator, "operator", "", "training-operator, mpi-operator or trainer")
	flag.StringVar(&o.version, "version", "", "the operator's version, as recorded")
	flag.StringVar(&o.module, "module", "", "the operator's Go module, as recorded")
	flag.StringVar(&o.bin, "bin", "", "the operator's binary")
	flag.StringVar(&o.crds, "crds", "", "the CRDs to install (YAML stream)")
	flag.StringVar(&o.examples, "examples", "", "directory of the upstream examples")
	flag.StringVar(&o.out, "out", "", "directory to write the recordings to")
	flag.StringVar(&o.log, "log", "", "the operator's log file")
	flag.StringVar(&o.install, "install", "", "trainer: directory of its webhooks.yaml and runtimes.yaml")
	flag.StringVar(&o.state, "state", "", "trainer: directory for its configuration and certificates")
	flag.Parse()
	if err := o.run(); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

type options struct {
	operator, version, module, bin, crds, examples, out, log string
	install, state                                           string
}

// jobKinds are the kinds of the operators' jobs, and where each counts
// its replicas.
var jobKinds = map[string]string{
	"PyTorchJob": "pytorchReplicaSpecs",
	"TFJob":      "tfReplicaSpecs",
	"MPIJob":     "mpiReplicaSpecs",
	"TrainJob":   "", // its pods are its JobSet's (jobSetPods)
}

func (o *options) run() error {
	if o.operator == "" || o.bin == "" || o.crds == "" || o.examples == "" || o.out == "" {
		return errors.New("-operator, -bin, -crds, -examples and -out are required")
	}
	k, err := kube.FromEnv()
	if err != nil {
		return err
	}
	ctx := context.Background()
	// Nodes for the pods: kwok's, with GPUs, so that the examples'
	// GPU pods are scheduled and run as the operator expects.
	var nodes []kube.FakeNode
	for i := range 4 {
		nodes = append(nodes, kube.FakeNode{Name: fmt.Sprintf("record-%s-%d", o.operator, i), GPUs: 8, CPU: "64", Memory: "512Gi"})
	}
	if err := k.CreateFakeNodes(ctx, nodes...); err != nil {
		return err
	}
	var op *kube.Operator
	switch o.operator {
	case "training-operator":
		op, err = k.StartTrainingOperator(ctx, kube.TrainingOperator{Bin: o.bin, CRDs: o.crds, Log: o.log, Schemes: []string{"pytorchjob", "tfjob"}})
	case "mpi-operator":
		op, err = k.StartMPIOperator(ctx, o.bin, o.crds, o.log)
	case "trainer":
		op, err = k.StartTrainer(ctx, kube.Trainer{Bin: o.bin, CRDs: o.crds, Log: o.log, Dir: o.state,
			Webhooks: filepath.Join(o.install, "webhooks.yaml"), Runtimes: filepath.Join(o.install, "runtimes.yaml"),
			WebhookPort: 19447, HealthPort: 18092})
	default:
		err = fmt.Errorf("unknown operator %q", o.operator)
	}
	if err != nil {
		return err
	}
	defer op.Stop()

	files, err := o.exampleFiles()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		n, err := o.record(ctx, k, f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if n > 0 {
			fmt.Printf("record: %s: %d objects\n", f, n)
		}
	}
	return nil
}

func (o *options) exampleFiles() ([]string, error) {
	var files []string
	err := filepath.WalkDir(o.examples, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != o.examples {
			return filepath.SkipDir // what the recorder installs, no example
		}
		if !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			rel, _ := filepath.Rel(o.examples, path)
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// record applies one example file in a namespace of its own and writes
// what the operator made of its job; a file without a job is skipped.
func (o *options) record(ctx context.Context, k *kube.Kubectl, rel string) (int, error) {
	data, err := os.ReadFile(filepath.Join(o.examples, rel))
	if err != nil {
		return 0, err
	}
	var docs []map[string]any
	var job map[string]any
	for _, d := range bytes.Split(data, []byte("\n---")) {
		var m map[string]any
		if err := yaml.Unmarshal(d, &m); err != nil {
			return 0, err
		}
		if m == nil {
			continue
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "namespace")
		}
		if _, ok := jobKinds[str(m["kind"])]; ok {
			if job != nil {
				return 0, errors.New("two jobs in one example")
			}
			job = m
		}
		docs = append(docs, m)
	}
	if job == nil {
		return 0, nil
	}
	ns := "rec-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(strings.TrimSuffix(rel, ".yaml")), "-"), "-")
	if len(ns) > 63 {
		ns = ns[:63]
	}
	if _, err := k.Run(ctx, nil, "create", "namespace", ns); err != nil {
		return 0, err
	}
	// JobSet's webhooks (which the Trainer's JobSets need) see it
	if _, err := k.Run(ctx, nil, "label", "namespace", ns, kube.JobSetNamespaceLabel+"=true"); err != nil {
		return 0, err
	}
	var stream bytes.Buffer
	for _, d := range docs {
		b, _ := json.Marshal(d)
		stream.Write(b)
		stream.WriteByte('\n')
	}
	note := ""
	if _, err := k.Run(ctx, stream.Bytes(), "create", "-n", ns, "-f", "-"); err != nil {
		// an example its own operator's admission refuses is recorded
		// as refused, with the reason
		_, why, denied := strings.Cut(err.Error(), "denied the request: ")
		if !denied {
			return 0, err
		}
		note = "# Refused when applied, by the operator's admission webhook: " + strings.TrimSpace(why) + "\n"
	}
	want := replicas(job)
	// The operator's pods, and for mpi-operator the launcher's Job and its
	// pod (launcherCreationPolicy WaitForWorkersReady waits for kwok to
	// make the workers ready); a TrainJob's are its JobSet's, once that
	// is made. Then a few seconds more, for anything the operator makes
	// after them.
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	var last, since = -1, start
	for note == "" {
		objs, err := o.created(ctx, k, ns)
		if err != nil {
			return 0, err
		}
		if job["kind"] == "TrainJob" {
			want = jobSetPods(objs)
		}
		n := count(objs, "Pod")
		if want > 0 && n >= want {
			break
		}
		if n != last {
			last, since = n, time.Now()
		}
		if job["kind"] == "TrainJob" && want == 0 && time.Since(start) > 30*time.Second {
			note = "# The Trainer made no JobSet in 30 s; its last error for the TrainJob: " + o.lastError(ns) + "\n"
			break
		}
		if job["kind"] == "TrainJob" && want > 0 && time.Since(since) > 30*time.Second {
			// a replicated Job that depends on another's completion,
			// which kwok's pods never reach
			note = fmt.Sprintf("# Of the JobSet's %d pods, %d were made in 30 s: the others' replicated Job depends on one whose pods\n# kwok never completes.\n", want, n)
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d pods after 90 s (operator log: %s)", n, want, o.log)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second)
	objs, err := o.created(ctx, k, ns)
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# What %s %s (%s) created for its example %s,\n", o.operator, o.version, o.module, rel)
	fmt.Fprintf(&out, "# applied to a kube-apiserver %s with kwok nodes (8 nvidia.com/gpu each).\n", os.Getenv("TRAINSONNET_K8S_VERSION"))
	out.WriteString("# Recorded by test/operators/record.sh (make record-operators); do not edit.\n")
	out.WriteString("# The first document is the example as applied; the others are the objects the\n")
	out.WriteString("# operator (and, for its Jobs, the Job controller) created, without what changes\n")
	out.WriteString("# from run to run (UIDs, times, versions, status, key material), namespace \"default\".\n")
	// a runtime the example brings (a Trainer's TrainingRuntime) follows
	// the job, as applied: the job's own
	var brought []map[string]any
	for _, d := range docs {
		if k := str(d["kind"]); strings.HasSuffix(k, "TrainingRuntime") {
			brought = append(brought, d)
		}
	}
	if len(brought) > 0 {
		out.WriteString("# The documents after the first up to the first Pod are the runtimes the example brings, as applied.\n")
	}
	out.WriteString(note)
	for _, d := range append(append([]map[string]any{job}, brought...), objs...) {
		b, err := yaml.Marshal(d)
		if err != nil {
			return 0, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	text := strings.ReplaceAll(out.String(), ns, "default")
	name := strings.ReplaceAll(strings.TrimSuffix(rel, ".yaml"), "/", "_") + ".yaml"
	if err := os.WriteFile(filepath.Join(o.out, name), []byte(text), 0o644); err != nil {
		return 0, err
	}
	_, _ = k.Run(ctx, nil, "delete", "namespace", ns, "--wait=false")
	return len(objs), nil
}

func str(v any) string { s, _ := v.(string); return s }

// replicas is the number of pods the job's replica specs ask for.
func replicas(job map[string]any) int {
	spec, _ := job["spec"].(map[string]any)
	specs, _ := spec[jobKinds[str(job["kind"])]].(map[string]any)
	n := 0
	for _, rs := range specs {
		r, _ := rs.(map[string]any)
		switch v := r["replicas"].(type) {
		case float64:
			n += int(v)
		case nil:
			n++ // the operators' default
		}
	}
	return n
}

// lastError is the first line of the last reconciler error the
// operator's log (JSON lines) holds for namespace ns, or "none".
func (o *options) lastError(ns string) string {
	data, err := os.ReadFile(o.log)
	if err != nil {
		return "none (" + err.Error() + ")"
	}
	found := "none"
	for _, line := range strings.Split(string(data), "\n") {
		var e struct {
			Namespace string `json:"namespace"`
			Error     string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Namespace == ns && e.Error != "" {
			found, _, _ = strings.Cut(e.Error, "\n")
		}
	}
	return found
}

// jobSetPods is the number of pods of the JobSet in objs (0: none yet):
// each replicated Job's replicas times its parallelism.
func jobSetPods(objs []map[string]any) int {
	n := 0
	for _, o := range objs {
		if o["kind"] != "JobSet" {
			continue
		}
		spec, _ := o["spec"].(map[string]any)
		for _, rj := range list(spec["replicatedJobs"]) {
			r, _ := rj.(map[string]any)
			reps, par := 1, 1
			if v, ok := r["replicas"].(float64); ok {
				reps = int(v)
			}
			tmpl, _ := r["template"].(map[string]any)
			js, _ := tmpl["spec"].(map[string]any)
			if v, ok := js["parallelism"].(float64); ok {
				par = int(v)
			}
			n += reps * par
		}
	}
	return n
}

func count(objs []map[string]any, kind string) int {
	n := 0
	for _, o := range objs {
		if o["kind"] == kind {
			n++
		}
	}
	return n
}

// created lists the objects in ns that the operator (or a controller
// acting on its objects) made, cleaned and in a stable order.
func (o *options) created(ctx context.Context, k *kube.Kubectl, ns string) ([]map[string]any, error) {
	kinds := "pods,services,configmaps,secrets,jobs.batch"
	if o.operator == "trainer" {
		kinds += ",jobsets.jobset.x-k8s.io"
	}
	out, err := k.Run(ctx, nil, "get", "-n", ns, kinds+",podgroups.scheduling.x-k8s.io", "-o", "json", "--ignore-not-found")
	if err != nil {
		// no PodGroup API: ask without it
		out, err = k.Run(ctx, nil, "get", "-n", ns, kinds, "-o", "json")
		if err != nil {
			return nil, err
		}
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	var objs []map[string]any
	for _, it := range list.Items {
		md, _ := it["metadata"].(map[string]any)
		if it["kind"] == "ConfigMap" && md["name"] == "kube-root-ca.crt" {
			continue
		}
		clean(it)
		objs = append(objs, it)
	}
	order := map[string]int{"Pod": 0, "JobSet": 1, "Job": 2, "Service": 3, "ConfigMap": 4, "Secret": 5}
	slices.SortStableFunc(objs, func(a, b map[string]any) int {
		if c := order[str(a["kind"])] - order[str(b["kind"])]; c != 0 {
			return c
		}
		return strings.Compare(name(a), name(b))
	})
	return objs, nil
}

func name(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	return str(md["name"])
}

// clean takes out of o what changes from run to run, and what admission
// adds to every pod alike (the service account token's volume, the
// not-ready/unreachable tolerations).
func clean(o map[string]any) {
	delete(o, "status")
	md, _ := o["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"} {
		delete(md, f)
	}
	if gn := str(md["generateName"]); gn != "" && o["kind"] == "Pod" {
		md["name"] = gn + "xxxxx" // a Job's pod: a random suffix
	}
	dropOwnerUIDs(o)
	redactUIDs(o)
	spec, _ := o["spec"].(map[string]any)
	switch o["kind"] {
	case "Pod":
		cleanPod(spec)
		delete(spec, "nodeName")
	case "Service":
		if spec["clusterIP"] != "None" {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
	case "ConfigMap":
		// the Trainer's snapshot of the runtime a TrainJob ran on: the
		// runtime as the API server held it
		data, _ := o["data"].(map[string]any)
		if rt, ok := data["runtime"].(string); ok {
			var m map[string]any
			if yaml.Unmarshal([]byte(rt), &m) == nil && m != nil {
				clean(m)
				if b, err := yaml.Marshal(m); err == nil {
					data["runtime"] = string(b)
				}
			}
		}
	case "Secret":
		data, _ := o["data"].(map[string]any)
		for key := range data {
			data[key] = "<redacted>"
		}
	}
}

func cleanPod(spec map[string]any) {
	var vols []any
	for _, v := range list(spec["volumes"]) {
		if !strings.HasPrefix(str(v.(map[string]any)["name"]), "kube-api-access-") {
			vols = append(vols, v)
		}
	}
	if vols == nil {
		delete(spec, "volumes")
	} else {
		spec["volumes"] = vols
	}
	for _, f := range []string{"containers", "initContainers"} {
		for _, c := range list(spec[f]) {
			cm := c.(map[string]any)
			var mounts []any
			for _, m := range list(cm["volumeMounts"]) {
				if !strings.HasPrefix(str(m.(map[string]any)["name"]), "kube-api-access-") {
					mounts = append(mounts, m)
				}
			}
			if mounts == nil {
				delete(cm, "volumeMounts")
			} else {
				cm["volumeMounts"] = mounts
			}
		}
	}
	var tols []any
	for _, t := range list(spec["tolerations"]) {
		key := str(t.(map[string]any)["key"])
		if key != "node.kubernetes.io/not-ready" && key != "node.kubernetes.io/unreachable" {
			tols = append(tols, t)
		}
	}
	if tols == nil {
		delete(spec, "tolerations")
	} else {
		spec["tolerations"] = tols
	}
}

func list(v any) []any { l, _ := v.([]any); return l }

// redactUIDs writes <uid> for the value of every label, annotation or
// selector key in v that holds an object's UID (the Job controller's
// controller-uid, JobSet's jobset-uid), at any depth.
func redactUIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, isStr := e.(string); isStr && (strings.HasSuffix(k, "controller-uid") || strings.HasSuffix(k, "-uid") && strings.Contains(k, "/")) {
				x[k] = "<uid>"
				continue
			}
			redactUIDs(e)
		}
	case []any:
		for _, e := range x {
			redactUIDs(e)
		}
	}
}

// dropOwnerUIDs takes the UIDs out of every ownerReferences in v (an
// object's, and those of the pod template of a Job).
func dropOwnerUIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "ownerReferences" {
				for _, ref := range list(e) {
					delete(ref.(map[string]any), "uid")
				}
				continue
			}
			dropOwnerUIDs(e)
		}
	case []any:
		for _, e := range x {
			dropOwnerUIDs(e)
		}
	}
}
