package jobs_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// sparkStandIn stands in for Spark's processes (testdata/spark-standin.py:
// no reachable registry carries Spark or Horovod). It checks what the pods
// give it against the rendered spark-defaults.conf and connects the way
// Spark would: worker to master at the master URL, executor to driver at
// spark.driver.host:spark.driver.port.
//
//go:embed testdata/spark-standin.py
var sparkStandIn string

// TestHorovodSpark runs horovod-spark on the real node with the stand-in
// as spark-class and spark-submit, in GPU mode (an extended resource the
// node advertises stands in for nvidia.com/gpu, and the discovery script
// finds the worker's GPUs through TS_GPUS): what trainsonnet adds is under
// test, the master Service, the driver's stable address, cores equal to
// GPUs, the ConfigMap's settings, the bounded wait for the master, and the
// end.
//
//   - complete: 2 workers of 2 GPUs register with the master, whose
//     executors reach the driver; the driver runs 2 processes of 2 GPUs,
//     writes into the store, and completes; it then says on its end port
//     that the job is over, and the master and workers stop at once,
//     though their stopGrace (10 minutes here) has not passed.
//   - driver-fails: the driver exits 3: its Job fails (the job's status is
//     the driver's), and the master and workers still stop.
func TestHorovodSpark(t *testing.T) {
	runCases(t, []jobTest{
		{"complete", testSparkComplete},
		{"driver-fails", testSparkDriverFails},
	})
}

// sparkGPU is the extended resource the node advertises as GPUs.
const sparkGPU = "example.com/gpu"

// sparkParams: 2 workers of 2 GPUs, 1 process per 2 GPUs, the stand-in on
// PATH, on the store, with a short stopGrace.
func (jc *jobCase) sparkParams() *generator.Params {
	jc.t.Helper()
	// The node offers 8 of sparkGPU (idempotent; PATCH of the status, as
	// Kubernetes documents for extended resources without a device plugin).
	_, err := jc.kubectl(nil, "patch", "node", jc.s.node.NodeName, "--subresource=status", "--type=json",
		"-p", `[{"op":"add","path":"/status/capacity/example.com~1gpu","value":"8"}]`)
	require.NoError(jc.t, err)
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "standin"},
		"data":     map[string]any{"spark-class": sparkStandIn, "spark-submit": sparkStandIn},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	return generator.NewParams("horovod-spark").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("worker.number", 2).
		Set("worker.gpu", 2).
		Set("gpuResource", sparkGPU).
		Set("taskCpus", 2).
		Set("driver.script", "/app/train.py").
		Set("stopGrace", 10).
		Set("env", jc.standInEnv(map[string]string{
			"STANDIN_JOB": jc.name,
			"PATH":        "/standin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		})).
		Set("volumes", []any{map[string]any{"name": "standin", "configMap": map[string]any{"name": "standin", "defaultMode": 0o555}}}).
		Set("volumeMounts", []any{map[string]any{"name": "standin", "mountPath": "/standin", "readOnly": true}})
}

// sparkUID is a user the test image has no passwd entry for, as
// horovod/horovod has none for 1000: Spark's login needs a name for it.
const sparkUID = 4242

func testSparkComplete(t *testing.T, s *suite) {
	jc := s.start(t, "spark", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.sparkParams().Set("runAsUser", sparkUID).Set("stopGrace", 600))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-driver"), "driver Job")
	jc.requireToldByLead("driver", 7079, "spark-class", "master", "worker")

	driver := jc.podsOf("driver")
	require.Len(t, driver, 1)
	log := jc.logs(driver[0].name(), "")
	require.Contains(t, log, "driver: master ACCEPTED", "the driver reached the master through its Service; its log:\n%s", log)
	require.Contains(t, log, "driver: 2 processes on executors", "both executors reached the driver at its stable address; its log:\n%s", log)
	require.Contains(t, log, "allreduce of ranks = 1", "its log:\n%s", log)
	// Every Spark process found a name for its uid, which the image lacks:
	// the pods' copy of /etc/passwd has one (Spark's Hadoop login).
	for _, p := range append(jc.podsOf("driver"), append(jc.podsOf("master"), jc.podsOf("worker")...)...) {
		plog := jc.logs(p.name(), "")
		require.Contains(t, plog, fmt.Sprintf("standin: login: spark (uid %d)", sparkUID), "%s: its log:\n%s", p.name(), plog)
	}
	workers := jc.podsOf("worker")
	require.Len(t, workers, 2)
	for _, w := range workers {
		log := jc.logs(w.name(), "")
		require.Contains(t, log, `worker: REGISTERED with 2 cores, GPUs ['0', '1']`, "%s: cores = GPUs, found by the discovery script; its log:\n%s", w.name(), log)
		require.Contains(t, log, "worker: executor got RUN 1 slots", "%s: its log:\n%s", w.name(), log)
		require.NotContains(t, log, "WRONG", "%s: its log:\n%s", w.name(), log)
	}
	master := jc.podsOf("master")
	require.Len(t, master, 1)
	mlog := jc.logs(master[0].name(), "")
	require.Equal(t, 2, strings.Count(mlog, "master: worker registered"), "master's log:\n%s", mlog)
	jc.requireNothingRunning()
}

func testSparkDriverFails(t *testing.T, s *suite) {
	jc := s.start(t, "sparkfail", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.sparkParams().Set("driver.env", map[string]string{"STANDIN_EXIT": "3"}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Failed", jc.waitJob(jc.name+"-driver"), "the driver's exit code is the job's status")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-master"), "the master stops once the driver is gone")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "the workers stop once the driver is gone")
	jc.requireNothingRunning()
}
