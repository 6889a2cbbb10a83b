package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// contractProto is a prototype of one's own on the library's pieces, with
// the pieces its params and its roles take in the blanks.
const contractProto = `
local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local mpi = import 'mpi.libsonnet';
local roles = import 'roles.libsonnet';
local storage = import 'storage.libsonnet';
local ts = import 'trainsonnet.libsonnet';
local proto = 'NAME';
local worker(p) = WORKER;
ts.prototype({
  name: proto,
  summary: 'a prototype that composes the library',
  params: PARAMS,
  render(p):: RENDER,
})
`

// TestLibContracts: composing the library's pieces wrongly stops with one
// line that names the piece and what to add, reported as "prototype
// <name>: <message>" (a bug of the prototype's author, not the user's:
// not a ValidationError), never a Jsonnet stack trace. What the pieces
// promise works: a role's pod template inside a custom resource from a
// partial role, Job spec fields through job, the lead's retries.
func TestLibContracts(t *testing.T) {
	const (
		params  = `common.params(proto, 'busybox:1.37') + batch.params('the workers')`
		worker  = `{name: 'worker', kind: 'IndexedJob', count: 2, image: p.image, lead: true}`
		objects = `roles.objects(proto, p, [worker(p)])`
	)
	for _, c := range []struct {
		name, params, worker, render string
		want                         string // the message after "prototype <name>: "; "" renders
	}{
		{name: "composes", want: ""},
		{name: "no-lifetime", params: `common.params(proto, 'busybox:1.37')`,
			want: "roles: role worker is an Indexed Job, and a Job takes the Job lifetime parameters (activeDeadlineSeconds, backoffLimit, ttlSecondsAfterFinished), which the prototype does not declare: add batch.params('<the lead role>') to its params"},
		{name: "no-lead", worker: `{name: 'worker', kind: 'IndexedJob', count: 2, image: p.image}`,
			want: "roles.objects: none of the roles worker says lead: true, so backoffLimit (batch.params) would retry nothing: add lead: true to the role whose end ends the job"},
		{name: "two-leads", render: `roles.objects(proto, p, [worker(p), worker(p) + {name: 'chief', kind: 'Job'}])`,
			want: "roles.objects: roles worker and chief say lead: true, and a job has one lead: the role whose end ends the job, which alone is retried"},
		{name: "unknown-field", worker: `{name: 'worker', image: p.image, lead: true, replicas: 2}`,
			want: "role worker: unknown field replicas; count is the replicas of a Deployment and the pods of an IndexedJob (a role's fields: "},
		{name: "backoff-limit-field", worker: `{name: 'worker', image: p.image, lead: true, backoffLimit: 3}`,
			want: "role worker: unknown field backoffLimit; the lead role (lead: true) is retried p.backoffLimit times, the others never; other Job spec fields go in job: {...}"},
		{name: "no-image", worker: `{name: 'worker', lead: true}`,
			want: "role worker: a role needs an image: add image: p.image (or an image parameter of the role's)"},
		{name: "no-name", worker: `{image: p.image, lead: true}`,
			want: "roles: a role needs a name, such as {name: 'worker', image: p.image}"},
		{name: "bad-kind", worker: `{name: 'db', kind: 'StatefulSet', image: p.image, lead: true}`,
			want: "role db: kind must be Job, IndexedJob or Deployment, not StatefulSet"},
		{name: "job-on-deployment", worker: `{name: 'ui', kind: 'Deployment', image: p.image, lead: true, job: {suspend: true}}`,
			want: "role ui: job holds Job spec fields, and ui is a Deployment (its own spec field is strategy)"},
		{name: "retry-per-index-of-a-job", worker: `{name: 'worker', image: p.image, lead: true, retryPerIndex: true}`,
			want: "role worker: retryPerIndex is for the lead role (lead: true) of kind IndexedJob"},
		{name: "no-common", params: `batch.params('the workers') + {name: ts.params.string('Name.', default='x', format='dns1035Label'), image: ts.params.string('Image.', default='busybox:1.37')}`,
			want: "roles.objects reads the common parameters, and the prototype does not declare annotations, automountServiceAccountToken, env, fsGroup, imagePullSecrets, labels, namespace, networkPolicy, priorityClassName, queue, runAsGroup, runAsUser, schedulerName, serviceAccountName, supplementalGroups, volumeMounts, volumes, workloadPriorityClass: add common.params('<default name>') to its params"},
		{name: "env-twice", params: params + ` + roles.envParams('each worker')`,
			want: "roles.envParams declares the parameter env, which common.params declares too: a parameter has one owner; leave one of them out, or refine the first with env+: {...}"},
		{name: "piece-twice", params: params + ` + batch.params('the chief')`,
			want: "batch.params declares the parameter activeDeadlineSeconds, which batch.params declares too"},
		{name: "own-before-piece", params: `{env: ts.params.map('Mine.')} + ` + params,
			want: "common.params declares the parameter env, which an earlier object declares too"},
		{name: "mpi-params-first", params: `mpi.params + ` + params,
			want: "mpi.params tells how the env of common.params reads in an MPI job: put it after common.params"},
		{name: "storage-undeclared", render: `[storage.pod(p, 'worker', [])] + ` + objects,
			want: "storage.pod reads the storage parameters, and the prototype does not declare them: add storage.params([<the directories it uses>]) to its params"},
		{name: "storage-dir-undeclared", params: params + ` + storage.params(['logDir'])`, render: `[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name}, data: {dir: storage.dir(p, 'trainDir')}}]`,
			want: "storage.dir: the directory trainDir is not declared: add 'trainDir' to the prototype's storage.params([...])"},
		{name: "storage-validate-undeclared", render: `[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name}, data: {n: std.toString(std.length(storage.validate(p, ['trainDir'])))}}]`,
			want: "storage.validate reads the storage parameters, and the prototype does not declare them: add storage.params([<the directories it uses>]) to its params"},
		{name: "storage-validate-dir-undeclared", params: params + ` + storage.params(['logDir'])`, render: `[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name}, data: {n: std.toString(std.length(storage.validate(p, ['trainDir'])))}}]`,
			want: "storage.dir: the directory trainDir is not declared: add 'trainDir' to the prototype's storage.params([...])"},
		{name: "storage-unknown-dir", params: params + ` + storage.params(['modelDir'])`,
			want: "storage.params: no directory modelDir: the directories are evalDir, logDir, storeDir, trainDir"},
		// A role's pod template in a custom resource, from a partial role;
		// Job spec fields through job; the lead retried per index.
		{name: "pod-template-in-a-custom-resource", render: `[{apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: {name: p.name},
			spec: {pytorchReplicaSpecs: {Worker: {replicas: 2, template: roles.podTemplate(proto, p, {name: 'worker', image: p.image})}}}}]`},
		{name: "job-fields", worker: worker + ` + {retryPerIndex: true, job: {maxFailedIndexes: 1}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := contractProto
			for k, v := range map[string]string{"PARAMS": or(c.params, params), "WORKER": or(c.worker, worker), "RENDER": or(c.render, objects)} {
				src = strings.ReplaceAll(src, k, v)
			}
			_, file, err := renderOwn(t, c.name, src)
			if c.want == "" {
				if err != nil {
					t.Fatalf("want a render, got: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("rendered; want the error %q", c.want)
			}
			msg := err.Error()
			if generator.IsValidation(err) || strings.Contains(msg, "\n") || strings.Contains(msg, "RUNTIME ERROR") {
				t.Errorf("want one line of a prototype bug, got %T:\n%s", err, msg)
			}
			// at the author's file: the line and column of the call
			// where there is one in it
			if !regexp.MustCompile(`^prototype ` + regexp.QuoteMeta(c.name) + `: ` + regexp.QuoteMeta(file) + `(:\d+:\d+)?: ` + regexp.QuoteMeta(c.want)).MatchString(msg) {
				t.Errorf("got:  %s\nwant: prototype %s: %s[:<line>:<column>]: %s", msg, c.name, file, c.want)
			}
		})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sshjobProto is a job over ssh of one's own, on lib/sshjob.libsonnet,
// with its j in the blank.
const sshjobProto = `
local batch = import 'batch.libsonnet';
local common = import 'common.libsonnet';
local sshjob = import 'sshjob.libsonnet';
local ts = import 'trainsonnet.libsonnet';
local proto = 'NAME';
ts.prototype({
  name: proto,
  summary: 'a launcher over ssh of its own',
  params: common.params(proto, 'busybox:1.37') + batch.params('the launcher') + sshjob.params() + sshjob.sshParams(),
  render(p):: [sshjob.config(proto, p, 'h slots=1\n')] + sshjob.jobs(proto, p, J),
})
`

// TestSSHJobContract: sshjob.jobs checks its j: a missing field, a field
// it sets itself, or one neither it nor roles knows stops with one line
// that names it; every field of a role reaches the pods (a launcher's
// sidecars, a worker's pod and affinity), none is dropped.
func TestSSHJobContract(t *testing.T) {
	const (
		base     = `port: p.ssh.port, initTimeout: p.initTimeout, secretName: 'keys'`
		launcher = `launcher: {image: p.image, exec: 'true'}`
		worker   = `worker: {image: p.image, count: 2}`
	)
	for _, c := range []struct{ name, j, want string }{
		{"no-port", `{initTimeout: 1, secretName: 'k', ` + launcher + `, ` + worker + `}`, "sshjob.jobs: j: missing port"},
		{"no-count", `{` + base + `, ` + launcher + `, worker: {image: p.image}}`, "sshjob.jobs: j.worker: missing count"},
		{"no-image", `{` + base + `, launcher: {exec: 'x'}, ` + worker + `}`, "sshjob.jobs: j.launcher: missing image"},
		{"own-command", `{` + base + `, launcher: {image: p.image, command: ['deepspeed']}, ` + worker + `}`,
			"sshjob.jobs: j.launcher: sets command, which jobs sets itself: jobs runs mpi.sh in every pod (or init): give the launcher's command as exec"},
		{"worker-kind", `{` + base + `, ` + launcher + `, worker: {image: p.image, count: 2, kind: 'Job'}}`,
			"sshjob.jobs: j.worker: sets kind, which jobs sets itself: the workers are an IndexedJob, one index per hostfile entry"},
		{"unknown-role-field", `{` + base + `, ` + launcher + `, worker: {image: p.image, count: 2, privilegd: true}}`,
			"sshjob.jobs: j.worker: unknown field privilegd (it takes followsLauncher, init, ownEnv, sshNames, waitForGPUDriver, and the fields of a role of roles.libsonnet)"},
		{"unknown-j-field", `{` + base + `, ` + launcher + `, ` + worker + `, mca: {}}`,
			"sshjob.jobs: j: unknown field mca (it takes initTimeout, launcher, launcherAsWorker, mounts, oneNode, port, secretName, volumes, worker)"},
		{"not-an-object", `{` + base + `, launcher: 'x', ` + worker + `}`, "sshjob.jobs: j.launcher: must be an object, not string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := renderOwn(t, c.name, strings.ReplaceAll(sshjobProto, "J", c.j))
			if err == nil {
				t.Fatalf("rendered; want the error %q", c.want)
			}
			if msg := err.Error(); generator.IsValidation(err) || strings.Contains(msg, "\n") || !strings.Contains(msg, ": "+c.want) {
				t.Errorf("got:  %s\nwant: prototype %s: <file>: %s", msg, c.name, c.want)
			}
		})
	}

	// Every field of a role reaches the pods.
	res, _, err := renderOwn(t, "all-fields", strings.ReplaceAll(sshjobProto, "J", `{`+base+`,
		launcher: {image: p.image, exec: 'deepspeed --hostfile /etc/trainsonnet/hostfile train.py', sidecars: [{name: 'tensorboard', image: 'tb:1'}], pod: {priorityClassName: 'launchers'}},
		worker: {image: p.image, count: 2, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: 'gpu', operator: 'Exists'}]}]}}}, pod: {priorityClassName: 'workers'}, initContainers: [{name: 'fetch', image: 'busybox:1.37'}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	y, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	out := string(y)
	for _, want := range []string{"name: tensorboard", "priorityClassName: launchers", "priorityClassName: workers", "key: gpu", "name: fetch",
		"value: deepspeed --hostfile /etc/trainsonnet/hostfile train.py", "/etc/trainsonnet/mpi.sh"} {
		if !strings.Contains(out, want) {
			t.Errorf("the render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "OMPI_") {
		t.Errorf("a job over ssh gets no Open MPI settings:\n%s", out)
	}
}

// renderOwn renders the prototype src, named name (NAME in src), with its
// defaults, from a file of its own: the file's path is returned too.
func renderOwn(t *testing.T, name, src string) (*generator.Result, string, error) {
	t.Helper()
	src = strings.ReplaceAll(src, "NAME", name)
	file := filepath.Join(t.TempDir(), name+".jsonnet")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := generator.New(generator.Options{PrototypePaths: []string{filepath.Dir(file)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Render(context.Background(), generator.NewParams(name))
	return res, file, err
}
