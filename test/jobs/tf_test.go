package jobs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// TestTensorFlowStorage runs the distributed TensorFlow charts' shared
// store on the real node: one PersistentVolumeClaim (on a local volume of
// the node) as storage.claimName, and three pods on it, as one params file
// feeds them in the charts:
//
//  1. a stand-in for training (a Job of the test image) writes a
//     checkpoint into trainDir;
//  2. the eval prototype's Job reads it there and writes its result into
//     evalDir (through eval's own exec parameter: the test image has no
//     TensorFlow, and none is in a reachable registry);
//  3. the tensorboard prototype's Deployment serves logDir, here the whole
//     store (python3's http.server in place of TensorBoard, through
//     tensorboard's own exec parameter, on its targetPort), becomes Ready
//     by its HTTP readiness probe, and answers through its Service from
//     another pod: the checkpoint and the evaluation are both there.
//
// Every pod runs as the prototypes' default non-root user in a namespace
// that enforces Pod Security "restricted".
func TestTensorFlowStorage(t *testing.T) {
	runCases(t, []jobTest{{"storage-eval-tensorboard", testStorageEvalTensorBoard}})
}

const (
	storeClaim = "store"
	storePath  = "/storage" // the storage's default mount path
	checkpoint = "checkpoint step 100"
)

func testStorageEvalTensorBoard(t *testing.T, s *suite) {
	jc := s.start(t, "tfstore", kube.Restricted)
	jc.createLocalClaim(storeClaim)
	repo, tag, ok := strings.Cut(s.node.Image, ":")
	require.True(t, ok, "test image %q has no tag", s.node.Image)

	// 1. Training, stood in for: a checkpoint in trainDir.
	jc.apply(jc.restrictedJob("train",
		`mkdir -p `+storePath+`/train && echo "`+checkpoint+`" > `+storePath+`/train/checkpoint-100 && ls -ln `+storePath+`/train`))
	require.Equal(t, "Complete", jc.waitJob("train"), "the stand-in trainer")

	// 2. eval reads trainDir and writes evalDir.
	evalParams := generator.NewParams("eval").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("image.repository", repo).Set("image.tag", tag).Set("image.pullPolicy", "Never").
		Set("exec", `test -s "$TRAIN_DIR/checkpoint-100" && mkdir -p "$EVAL_DIR" && `+
			`{ cat "$TRAIN_DIR/checkpoint-100"; echo "evaluated by uid $(id -u) from $TRAIN_DIR into $EVAL_DIR"; } > "$EVAL_DIR/result" && cat "$EVAL_DIR/result"`)
	res, err := s.g.Render(jc.ctx, evalParams)
	require.NoError(t, err)
	jc.apply(jc.yaml(res))
	evalJob := jc.name + "-eval"
	require.Equal(t, "Complete", jc.waitJob(evalJob), "eval's Job")
	evalPods := jc.pods("job-name=" + evalJob)
	require.Len(t, evalPods, 1)
	evalLog := jc.logs(evalPods[0].name(), "")
	require.Contains(t, evalLog, checkpoint, "eval read the checkpoint")
	require.Contains(t, evalLog, "from "+storePath+"/train into "+storePath+"/eval", "TRAIN_DIR and EVAL_DIR are the storage's directories")

	// 3. tensorboard serves logDir (the whole store) through its Service.
	tbParams := generator.NewParams("tensorboard").
		Set("name", jc.name).
		Set("storage.claim.name", storeClaim).
		Set("logDir", storePath).
		Set("tensorboardImage", s.node.Image).Set("imagePullPolicy", "Never").
		Set("exec", `exec python3 -m http.server 6006 --directory "$LOG_DIR"`)
	res, err = s.g.Render(jc.ctx, tbParams)
	require.NoError(t, err)
	jc.apply(jc.yaml(res))
	tb := jc.name + "-tensorboard"
	require.NoError(t, s.k.Wait(jc.ctx, jc.ns, "condition=Available", 2*time.Minute, "deployment/"+tb),
		"tensorboard's Deployment becomes Available once its HTTP readiness probe passes")

	// Another pod of the namespace asks the Service (port 80, forwarded to
	// 6006) for what training and evaluation wrote.
	fetch := `import urllib.request as u
for f in ("train/checkpoint-100", "eval/result"):
    print(f, "=>", u.urlopen("http://` + tb + `/" + f, timeout=10).read().decode().strip())`
	jc.apply(jc.restrictedJob("fetch", "python3 -c '"+fetch+"'"))
	require.Equal(t, "Complete", jc.waitJob("fetch"), "a pod reaches tensorboard through its Service")
	fetchPods := jc.pods("job-name=fetch")
	require.Len(t, fetchPods, 1)
	out := jc.logs(fetchPods[0].name(), "")
	t.Logf("through the Service:\n%s", out)
	require.Contains(t, out, "train/checkpoint-100 => "+checkpoint)
	require.Contains(t, out, "eval/result => "+checkpoint)
}

// restrictedJob is a Job of the test image that runs script with sh -c as
// user 1000 (the prototypes' default), with the store mounted at
// storePath, as Pod Security "restricted" allows.
func (jc *jobCase) restrictedJob(name, script string) []byte {
	jc.t.Helper()
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template": map[string]any{
				"spec": map[string]any{
					"restartPolicy": "Never",
					"securityContext": map[string]any{
						"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "runAsNonRoot": true,
						"seccompProfile": map[string]any{"type": "RuntimeDefault"},
					},
					"containers": []any{map[string]any{
						"name":            name,
						"image":           jc.s.node.Image,
						"imagePullPolicy": "Never",
						"command":         []string{"sh", "-c", script},
						"securityContext": map[string]any{
							"allowPrivilegeEscalation": false,
							"capabilities":             map[string]any{"drop": []string{"ALL"}},
						},
						"volumeMounts": []any{map[string]any{"name": "store", "mountPath": storePath}},
					}},
					"volumes": []any{map[string]any{"name": "store", "persistentVolumeClaim": map[string]any{"claimName": storeClaim}}},
				},
			},
		},
	}
	out, err := json.Marshal(job)
	require.NoError(jc.t, err)
	return out
}

// createLocalClaim creates a PersistentVolumeClaim bound to a local
// PersistentVolume of the node (a directory on this host, which is the
// node), as a cluster's storage admin would provide one, and returns that
// directory. The volume and its directory go when the test ends.
func (jc *jobCase) createLocalClaim(claim string) string {
	jc.t.Helper()
	dir, err := os.MkdirTemp("", "trainsonnet-pv-")
	require.NoError(jc.t, err)
	require.NoError(jc.t, os.Chmod(dir, 0o777)) // the pods' user writes there
	pv := jc.ns + "-" + claim
	class := "trainsonnet-local-" + jc.ns
	objects := []map[string]any{{
		"apiVersion": "v1",
		"kind":       "PersistentVolume",
		"metadata":   map[string]any{"name": pv},
		"spec": map[string]any{
			"capacity":                      map[string]any{"storage": "1Gi"},
			"accessModes":                   []string{"ReadWriteOnce"},
			"persistentVolumeReclaimPolicy": "Retain",
			"storageClassName":              class,
			"local":                         map[string]any{"path": dir},
			"nodeAffinity": map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{map[string]any{
				"matchExpressions": []any{map[string]any{"key": "kubernetes.io/hostname", "operator": "In", "values": []string{jc.s.node.NodeName}}},
			}}}},
		},
	}, {
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata":   map[string]any{"name": claim, "namespace": jc.ns},
		"spec": map[string]any{
			"accessModes":      []string{"ReadWriteOnce"},
			"storageClassName": class,
			"volumeName":       pv,
			"resources":        map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		},
	}}
	for _, o := range objects {
		doc, err := json.Marshal(o)
		require.NoError(jc.t, err)
		_, err = jc.s.k.Run(jc.ctx, doc, "create", "-f", "-")
		require.NoError(jc.t, err)
	}
	jc.t.Cleanup(func() {
		// after the namespace (cleanups run last first): the claim is gone
		_, _ = jc.s.k.Run(jc.t.Context(), nil, "delete", "persistentvolume", pv, "--wait=false")
		_ = os.RemoveAll(filepath.Clean(dir))
	})
	jc.claimDir = dir
	return dir
}
