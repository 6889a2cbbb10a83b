package jobs_test

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestTFDistributed runs tf-distributed on the real node with 2 parameter
// servers and 2 workers of a stand-in TensorFlow program (standInTF,
// Debian's python3 in the test image: no reachable registry has
// TensorFlow). Each task reads TF_CONFIG, checks it against the chart's
// PSHOSTS, WORKERHOSTS, JOBNAME and TASKID, and finds its own address
// there; the parameter servers listen on theirs, every worker connects to
// every parameter server over the TF_CONFIG addresses and exchanges a
// value, and worker 0 writes a checkpoint into trainDir on the shared
// storage. What trainsonnet adds is what is under test: the stable names,
// the wiring, the bounded wait for the parameter servers, and the end.
//
//   - complete: each worker's init command (worker.init, run in an init
//     container with the worker's image, environment and volumes) prepares
//     a file in scratchDir that the worker then finds; the workers
//     complete, the parameter servers then stop by themselves (stopGrace
//     after the workers' Service is gone) and their Job completes too;
//     then eval reads the checkpoint on the same store.
//   - worker-fails: worker 1 exits 1; the worker Job fails, and nothing
//     keeps running: the parameter servers stop as well.
//   - chief-ends-the-job: with a chief (the workers serve it, as
//     TensorFlow 2's do their coordinator), the job ends with it: it says
//     so on its end port, and the parameter servers and the workers stop
//     at once, though their stopGrace (10 minutes here) has not passed.
func TestTFDistributed(t *testing.T) {
	runCases(t, []jobTest{
		{"complete", testTFComplete},
		{"worker-fails", testTFWorkerFails},
		{"chief-ends-the-job", testTFChiefEndsTheJob},
	})
}

// standInTF stands in for a TensorFlow program in the parameter server
// architecture, over plain TCP on the addresses TF_CONFIG gives.
const standInTF = `import json, os, socket, sys, time
cfg = json.loads(os.environ["TF_CONFIG"])
kind, index, cluster = cfg["task"]["type"], cfg["task"]["index"], cfg["cluster"]
assert os.environ["JOBNAME"] == kind, (os.environ["JOBNAME"], kind)
assert int(os.environ["TASKID"]) == index, (os.environ["TASKID"], index)
assert os.environ["PSHOSTS"] == ",".join(cluster["ps"]), os.environ["PSHOSTS"]
assert os.environ["WORKERHOSTS"] == ",".join(cluster["worker"]), os.environ["WORKERHOSTS"]
me = cluster[kind][index]
print(kind, index, "is", me, "in", json.dumps(cluster, sort_keys=True), flush=True)
lead = os.environ.get("STANDIN_LEAD", "worker")
# servers until stopped: the parameter servers, and with a chief the
# workers too (TensorFlow 2's workers serve the chief, its coordinator)
if kind == "ps" or kind == "worker" and lead == "chief":
    srv = socket.create_server(("", int(me.rsplit(":", 1)[1])))
    while True:
        conn, _ = srv.accept()
        got = conn.recv(100).decode()
        print(kind, index, "got", got, flush=True)
        conn.sendall(("%s %d has %s" % (kind, index, got)).encode())
        conn.close()
# a worker: what its init container prepared in scratchDir, if anything
prepared = os.path.join(os.environ.get("SCRATCH", "/mnt"), "prepared")
if os.path.exists(prepared):
    print("worker", index, "found", open(prepared).read().strip(), flush=True)
# wait until the parameter servers' watch can see the lead, the workers
# or the chief (its Service lists it once running), as a real training
# run would outlast it anyway (not in a JobSet, where nothing watches it)
while os.environ.get("STANDIN_WATCHED", "1") == "1":
    try:
        socket.getaddrinfo(os.environ["STANDIN_JOB"] + "-" + lead, None)
        break
    except OSError:
        time.sleep(1)
time.sleep(float(os.environ.get("STANDIN_SECONDS", "5")))  # the training
def connect(host, port):
    # as TensorFlow's gRPC channels do, a peer not listening yet (its
    # start-up slower on a loaded node) is tried again, for a minute
    deadline = time.time() + 60
    while True:
        try:
            return socket.create_connection((host, int(port)), timeout=10)
        except ConnectionRefusedError:
            if time.time() > deadline:
                raise
            time.sleep(1)
for addr in cluster["ps"] + (cluster["worker"] if kind == "chief" else []):
    host, port = addr.rsplit(":", 1)
    s = connect(host, port)
    s.sendall(("value %d from %s %d" % (10 * index + 7, kind, index)).encode())
    print(kind, index, "<-", s.recv(100).decode(), flush=True)
    s.close()
if os.environ.get("FAIL_WORKER") == str(index):
    print("worker", index, "fails", flush=True)
    sys.exit(1)
if index == 0:
    os.makedirs(os.environ["TRAIN_DIR"], exist_ok=True)
    with open(os.path.join(os.environ["TRAIN_DIR"], "checkpoint-100"), "w") as f:
        f.write("checkpoint step 100 of %d workers\n" % len(cluster["worker"]))
print("worker", index, "done", flush=True)
`

// standInEnv is env with what the stand-ins need to know of the job's
// form: in a JobSet nothing watches the lead (STANDIN_WATCHED=0), and a
// role's one pod is <name>-<role>-0-0 (STANDIN_POD_SUFFIX).
func (jc *jobCase) standInEnv(env map[string]string) map[string]string {
	if jc.jobset {
		env["STANDIN_WATCHED"] = "0"
		env["STANDIN_POD_SUFFIX"] = "-0-0"
	}
	return env
}

// tfParams: 2 parameter servers and 2 workers of the stand-in, on the
// store, with a short stopGrace.
func (jc *jobCase) tfParams() *generator.Params {
	jc.t.Helper()
	cm, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "standin"},
		"data":     map[string]any{"tf.py": standInTF},
	})
	require.NoError(jc.t, err)
	jc.apply(cm)
	return generator.NewParams("tf-distributed").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("ps.number", 2).Set("worker.number", 2).
		Set("ps.image", jc.s.node.Image).Set("worker.image", jc.s.node.Image).
		Set("imagePullPolicy", "Never").
		Set("stopGrace", 10).
		// 15 s of "training" once the lead resolves: every parameter
		// server's watch must see the workers before they end (a loaded
		// node's DNS let one miss a run of 5 s, and it never stopped)
		Set("env", jc.standInEnv(map[string]string{"STANDIN_JOB": jc.name, "STANDIN_SECONDS": "15"})).
		Set("volumes", []any{map[string]any{"name": "standin", "configMap": map[string]any{"name": "standin"}}}).
		Set("volumeMounts", []any{map[string]any{"name": "standin", "mountPath": "/standin", "readOnly": true}}).
		Set("exec", "exec python3 /standin/tf.py")
}

// preparedLine is a worker's report of what its init container wrote:
// its own index, then the TASKID the init container had.
var preparedLine = regexp.MustCompile(`worker (\d+) found prepared by init of worker (\d+)\n`)

func testTFComplete(t *testing.T, s *suite) {
	jc := s.start(t, "tfdist", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	// the chart's prepare step, as worker.init: it sees the task's own
	// environment and writes into scratchDir (the chart's /mnt), which the worker then reads
	res, err := s.g.Render(jc.ctx, jc.tfParams().Set("worker.init", `echo "prepared by init of $JOBNAME $TASKID" > /mnt/prepared`))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-worker"), "worker Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-ps"), "the parameter servers stop by themselves once the workers are done")
	workers := jc.podsOf("worker")
	require.Len(t, workers, 2)
	for _, w := range workers {
		log := jc.logs(w.name(), "")
		for i := range 2 {
			require.Contains(t, log, "<- ps "+strconv.Itoa(i)+" has value", "%s reached ps %d; its log:\n%s", w.name(), i, log)
		}
		m := preparedLine.FindStringSubmatch(log)
		require.NotNil(t, m, "%s: its init container ran first; its log:\n%s", w.name(), log)
		require.Equal(t, m[1], m[2], "%s: the init container had the worker's own TASKID", w.name())
	}
	ps := jc.podsOf("ps")
	require.Len(t, ps, 2)
	for _, p := range ps {
		log := jc.logs(p.name(), "")
		require.Contains(t, log, "from worker 0", "%s; its log:\n%s", p.name(), log)
		require.Contains(t, log, "from worker 1", "%s; its log:\n%s", p.name(), log)
	}
	jc.requireNothingRunning()

	// eval on the same store reads the checkpoint.
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok)
	evalParams := generator.NewParams("eval").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("image.repository", repo).Set("image.tag", tag).Set("image.pullPolicy", "Never").
		Set("exec", `cat "$TRAIN_DIR/checkpoint-100"`)
	res, err = s.g.Render(jc.ctx, evalParams)
	require.NoError(t, err)
	jc.apply(jc.yaml(res))
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-eval"), "eval's Job")
	evalPods := jc.pods("job-name=" + jc.name + "-eval")
	require.Len(t, evalPods, 1)
	require.Contains(t, jc.logs(evalPods[0].name(), ""), "checkpoint step 100 of 2 workers", "eval read the checkpoint training wrote")
}

func testTFWorkerFails(t *testing.T, s *suite) {
	jc := s.start(t, "tffail", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.tfParams().Set("worker.env", map[string]string{"FAIL_WORKER": "1"}))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Failed", jc.waitJob(jc.name+"-worker"), "a failing worker fails the worker Job")
	require.Equal(t, "Complete", jc.waitJob(jc.name+"-ps"), "the parameter servers stop once the workers are gone")
	jc.requireNothingRunning()
}

func testTFChiefEndsTheJob(t *testing.T, s *suite) {
	jc := s.start(t, "tfchief", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	res, err := s.g.Render(jc.ctx, jc.tfParams().
		Set("chief.number", 1).Set("chief.image", jc.s.node.Image).
		Set("env", map[string]string{"STANDIN_JOB": jc.name, "STANDIN_LEAD": "chief"}).
		Set("stopGrace", 600))
	require.NoError(t, err)
	jc.apply(jc.yaml(res))

	require.Equal(t, "Complete", jc.waitJob(jc.name+"-chief"), "the chief's Job: the job's status")
	jc.requireToldByLead("chief", 2223, "sh", "ps", "worker")
	for _, p := range append(jc.podsOf("ps"), jc.podsOf("worker")...) {
		log := jc.logs(p.name(), "")
		require.Contains(t, log, "from chief 0", "%s served the chief; its log:\n%s", p.name(), log)
	}
	chief := jc.podsOf("chief")
	require.Len(t, chief, 1)
	log := jc.logs(chief[0].name(), "")
	require.Contains(t, log, "trainsonnet: the job is over: port 2223 says so", "its log:\n%s", log)
	require.Contains(t, log, "trainsonnet: 4 of 4 follower(s) read port 2223 within ", "every follower read it, so the chief did not wait out its bound; its log:\n%s", log)
	jc.requireNothingRunning()
}
