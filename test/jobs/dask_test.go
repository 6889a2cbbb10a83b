package jobs_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// uiStandIn stands in for TensorBoard and Jupyter Lab in the scheduler
// pod (testdata/ui-standin.sh): it checks what the pod gives it and serves
// HTTP on its port. Dask (Debian's python3-distributed) and Open MPI with
// mpi4py (standing in for Horovod) are real.
//
//go:embed testdata/ui-standin.sh
var uiStandIn string

// TestHorovodDask runs horovod-dask on the real node: 2 workers of 2 Dask
// workers each.
//
//   - interactive: the default, a long-lived cluster with the scheduler as
//     a Deployment, Jupyter and TensorBoard on. From the scheduler pod (as
//     a user would, with kubectl exec) a Dask client sees 4 workers on both
//     pods and computes on them, mpirun runs an mpi4py allreduce across the
//     ring over ssh, goto and update reach the workers, and the UIs answer
//     through the Service <name>-dask.
//   - batch: scheduler.args as the chart's users wrote them; the scheduler
//     is a Job that runs them once the ring answers, and the whole cluster
//     ends Complete.
//   - interactive-survives: a Jupyter that fails at every start (as one
//     missing from the image) leaves the scheduler pod Ready and the
//     cluster computing; the scheduler pod deleted, its Deployment's next
//     one finds the same workers, whose Dask workers come back to it.
func TestHorovodDask(t *testing.T) {
	runCases(t, []jobTest{
		{"interactive", testDaskInteractive},
		{"batch", testDaskBatch},
		{"interactive-survives", testDaskInteractiveSurvives},
	})
}

// daskClient computes on every Dask worker through the scheduler that
// DASK_SCHEDULER_ADDRESS names, once NUM_DASK_WORKERS have come.
const daskClient = `python3 -c '
import os, socket
from distributed import Client
c = Client(timeout=60)
c.wait_for_workers(int(os.environ["NUM_DASK_WORKERS"]), timeout=240)
print("dask workers:", len(c.scheduler_info()["workers"]))
print("dask sum =", c.submit(sum, c.map(lambda x: x * x, range(10))).result())
print("dask hosts:", " ".join(sorted(set(c.run(socket.gethostname).values()))))
'`

// ringAllreduce: every rank of the ring adds rank + 1 (Horovod's
// allreduce, with mpi4py standing in).
const ringAllreduce = `mpirun -np "$NUM_PROC" python3 -c '
from mpi4py import MPI
c = MPI.COMM_WORLD
print("allreduce", c.allreduce(c.Get_rank() + 1), "on", MPI.Get_processor_name(), flush=True)
'`

// daskParams: 2 workers of 2 Dask workers, the test image, the stand-ins
// on PATH.
func (jc *jobCase) daskParams() *generator.Params {
	jc.t.Helper()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "standin"},
		"data":     map[string]any{"tensorboard": uiStandIn, "jupyter": uiStandIn},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	repo, tag, ok := strings.Cut(jc.s.node.Image, ":")
	require.True(jc.t, ok, "test image %q has a tag", jc.s.node.Image)
	jc.launcher = "scheduler"
	return generator.NewParams("horovod-dask").
		Set("name", jc.name).
		Set("worker.image.repository", repo).
		Set("worker.image.tag", tag).
		Set("worker.image.pullPolicy", "Never").
		Set("worker.number", 2).
		Set("worker.dask.number", 2).
		Set("worker.dask.memory", "512Mi").
		Set("env", map[string]string{
			"PATH": "/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			// the chart's cluster.sh set Dask's knobs as env: they reach the
			// Dask workers (and the ranks ssh starts)
			"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "100",
		}).
		Set("volumes", []any{map[string]any{"name": "standin", "configMap": map[string]any{"name": "standin", "defaultMode": 0o555}}}).
		Set("volumeMounts", []any{map[string]any{"name": "standin", "mountPath": "/standin", "readOnly": true}})
}

// requireDaskOutput checks what daskClient and ringAllreduce printed; the
// worker pods' names are <name>-worker-<i>, or <name>-worker-0-<i> in a
// JobSet (jc.jobset).
func (jc *jobCase) requireDaskOutput(log string) {
	jc.t.Helper()
	worker := jc.name + "-worker-"
	if jc.jobset {
		worker += "0-"
	}
	require.NotEmpty(jc.t, lineWith(log, "dask workers: 4"), "a client in the scheduler pod sees 2 x 2 Dask workers:\n%s", log)
	require.NotEmpty(jc.t, lineWith(log, "dask sum = 285"), "and computes on them:\n%s", log)
	require.NotEmpty(jc.t, lineWith(log, fmt.Sprintf("dask hosts: %s0 %s1", worker, worker)), "on both worker pods:\n%s", log)
	for i := range 2 {
		require.NotEmpty(jc.t, lineWith(log, "allreduce 3 on", fmt.Sprintf("%s%d", worker, i)),
			"the allreduce over the ring sums rank + 1 on worker %d:\n%s", i, log)
	}
}

func testDaskInteractive(t *testing.T, s *suite) {
	jc := s.start(t, "dask", kube.Baseline) // sshd runs as root, as in horovod
	res, err := s.g.Render(jc.ctx, jc.daskParams().
		Set("scheduler.jupyterPort", 8888).
		Set("scheduler.tensorboardPort", 6006))
	require.NoError(t, err)
	require.True(t, hasObject(res, "Deployment", jc.name+"-scheduler"), "interactive: the scheduler is a Deployment")
	jc.apply(jc.yaml(res))

	// The scheduler is up once every worker answers over ssh.
	var sched string
	deadline := time.Now().Add(5 * time.Minute)
	for {
		pods := jc.podsOf("scheduler")
		if len(pods) == 1 {
			sched = pods[0].name()
			if out, err := jc.kubectl(nil, "logs", "pod/"+sched, "--container", "scheduler"); err == nil && strings.Contains(string(out), "interactive mode") {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "the scheduler never reached interactive mode")
		time.Sleep(pollInterval)
	}
	execIn := func(pod, container, cmd string) string {
		t.Helper()
		out, err := jc.kubectl(nil, "exec", "pod/"+pod, "--container", container, "--", "sh", "-c", cmd)
		require.NoError(t, err, "kubectl exec %s:\n%s", cmd, out)
		t.Logf("%s $ %s\n%s", pod, cmd, out)
		return string(out)
	}
	exec := func(cmd string) string { t.Helper(); return execIn(sched, "scheduler", cmd) }
	// TensorBoard listens on 6006 in this pod: mpirun (hwloc's GL plugin,
	// probing X display :6) hung there until trainsonnet set
	// HWLOC_COMPONENTS=-gl. A hang fails at the bound, not the case's.
	jc.requireDaskOutput(exec(daskClient + " && timeout 60 " + ringAllreduce))

	// The chart's helpers, on the PATH.
	require.Equal(t, jc.name+"-worker-1\n", exec("goto 1 hostname"))
	out := exec("update hostname")
	for i := range 2 {
		host := jc.workerHost(i)
		require.Contains(t, out, fmt.Sprintf("%s: %s-worker-%d\n", host, jc.name, i), "update ran on %s", host)
	}
	// Jupyter (with its generated token) and TensorBoard answer through
	// the Service <name>-dask, from a worker (a pod cannot count on
	// reaching itself through a Service: that needs the bridge's hairpin
	// mode).
	workers := jc.podsOf("worker")
	require.Len(t, workers, 2)
	for _, port := range []int{8888, 6006} {
		execIn(workers[0].name(), "worker", fmt.Sprintf(`python3 -c 'import urllib.request as u; print(u.urlopen("http://%s-dask:%d/", timeout=10).status)' | grep -x 200`, jc.name, port))
	}
	require.Contains(t, jc.logs(sched, "jupyter"), "with a token of 26 characters", "Jupyter got the token generated into <name>-jupyter")
	require.Contains(t, jc.logs(sched, "tensorboard"), "--logdir=/storage/train --port=6006 --bind_all")
	for _, w := range workers {
		wlog := jc.logs(w.name(), "worker")
		require.NotEmpty(t, lineWith(wlog, "Dask workers started against tcp://"+jc.name+"-dask:8786 (2 processes)"), "%s: its log:\n%s", w.name(), wlog)
		require.Empty(t, lineWith(wlog, "the Dask workers exited"), "%s: its Dask workers never exited; its log:\n%s", w.name(), wlog)
	}
}

func testDaskInteractiveSurvives(t *testing.T, s *suite) {
	jc := s.start(t, "dasklive", kube.Baseline)
	params := jc.daskParams().Set("scheduler.jupyterPort", 8888)
	// Jupyter fails at every start, as one missing from the image would.
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "standin"},
		"data": map[string]any{
			"tensorboard": uiStandIn,
			"jupyter":     "#!/bin/sh\necho 'jupyter stand-in: failing on purpose' >&2\nexit 1\n",
		},
	})
	require.NoError(t, err)
	jc.apply(cm)
	res, err := s.g.Render(jc.ctx, params)
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	// waitScheduler: the scheduler pod other than old, once in interactive
	// mode and Ready (a failing UI must not take its readiness).
	waitScheduler := func(old string) string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			for _, p := range jc.podsOf("scheduler") {
				if p.name() == old {
					continue
				}
				out, err := jc.kubectl(nil, "logs", "pod/"+p.name(), "--container", "scheduler")
				if err == nil && strings.Contains(string(out), "interactive mode") {
					require.NoError(t, jc.s.k.Wait(jc.ctx, jc.ns, "condition=Ready", 2*time.Minute, "pod/"+p.name()),
						"the scheduler pod is Ready, its Jupyter failing or not")
					return p.name()
				}
			}
			require.True(t, time.Now().Before(deadline), "no scheduler pod reached interactive mode")
			time.Sleep(pollInterval)
		}
	}
	compute := func(sched string) {
		t.Helper()
		out, err := jc.kubectl(nil, "exec", "pod/"+sched, "--container", "scheduler", "--", "sh", "-c", daskClient+" && timeout 60 "+ringAllreduce)
		require.NoError(t, err, "%s", out)
		jc.requireDaskOutput(string(out))
	}
	sched := waitScheduler("")
	compute(sched)
	jlog := jc.logs(sched, "jupyter")
	require.Contains(t, jlog, "jupyter exited with code 1; starting it again", "dask.sh ui starts the failed UI again:\n%s", jlog)
	workersBefore := jc.podsOf("worker")
	require.Len(t, workersBefore, 2)

	// The scheduler pod goes (a node drained, say); its Deployment makes
	// another, which finds the same ring.
	_, err = jc.kubectl(nil, "delete", "pod", sched, "--wait=true")
	require.NoError(t, err)
	next := waitScheduler(sched)
	compute(next)
	workersAfter := jc.podsOf("worker")
	require.Len(t, workersAfter, 2)
	for i := range workersBefore {
		require.Equal(t, workersBefore[i].name(), workersAfter[i].name(), "the same worker pods serve the new scheduler")
		wlog := jc.logs(workersAfter[i].name(), "worker")
		require.Contains(t, wlog, "launcher watchdog off", "%s: an interactive worker outlives its scheduler; its log:\n%s", workersAfter[i].name(), wlog)
	}
}

func testDaskBatch(t *testing.T, s *suite) {
	jc := s.start(t, "daskbatch", kube.Baseline)
	res, err := s.g.Render(jc.ctx, jc.daskParams().
		Set("scheduler.args", []string{afterLauncherResolves(jc.name+"-scheduler", daskClient+" && "+ringAllreduce+" && update true")}))
	require.NoError(t, err)
	require.True(t, hasObject(res, "Job", jc.name+"-scheduler"), "with scheduler.args: the scheduler is a Job")
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-scheduler"), "the scheduler's Job ends with scheduler.args")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "the workers end with it")
	_, log, code := jc.launcherResult()
	t.Logf("scheduler log:\n%s", log)
	jc.requireDaskOutput(log)
	require.Zero(t, code)
	for _, w := range jc.requireAllSucceeded(2) {
		wlog := jc.logs(w.name(), "worker")
		requireWatchdogSawLauncher(t, w, wlog)
	}
	jc.requireNothingRunning()
}

func hasObject(res *generator.Result, kind, name string) bool {
	for _, o := range res.Objects {
		if o.Kind == kind && o.Name == name {
			return true
		}
	}
	return false
}
