package generator_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// TestMemoryVolumesWithinTheLimit: a memory-backed emptyDir larger than its
// pod's memory limit, which the kubelet caps it at, is refused wherever it
// comes from (every prototype's shmSize, a volume of the user's, a
// prototype's own), naming the input; one within the limit, or in a pod
// without a limit, passes.
func TestMemoryVolumesWithinTheLimit(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	n := 0
	for _, name := range g.Names() {
		pr, err := g.Lookup(name)
		require.NoError(t, err)
		if param.Find(pr.Params, "shmSize") == nil || param.Find(pr.Params, "memory") == nil {
			continue
		}
		n++
		_, err = g.Render(context.Background(), generator.NewParams(name).Set("memory", "1Gi").Set("shmSize", "2Gi"))
		var v *generator.ValidationError
		if assert.ErrorAs(t, err, &v, name) {
			assert.Contains(t, v.Error(), `shmSize: invalid value "2Gi": volume trainsonnet-shm is in memory, and the kubelet caps it at the pod's memory limit, 1Gi: a larger size has no effect`, name)
		}
		_, err = g.Render(context.Background(), generator.NewParams(name).Set("memory", "2Gi").Set("shmSize", "1Gi"))
		assert.NoError(t, err, name)
		_, err = g.Render(context.Background(), generator.NewParams(name).Set("shmSize", "64Gi"))
		assert.NoError(t, err, "%s: no memory limit, no cap", name)
	}
	assert.GreaterOrEqual(t, n, 3, "prototypes with shmSize and memory")

	// A volume of the user's.
	_, err = g.Render(context.Background(), generator.NewParams("openmpi").Set("memory", "1Gi").
		Set("volumes", []any{map[string]any{"name": "scratch", "emptyDir": map[string]any{"medium": "Memory", "sizeLimit": "3Gi"}}}).
		Set("volumeMounts", []any{map[string]any{"name": "scratch", "mountPath": "/scratch"}}))
	var v *generator.ValidationError
	if assert.ErrorAs(t, err, &v) {
		assert.Contains(t, v.Error(), "volume scratch is in memory, and the kubelet caps it at the pod's memory limit, 1Gi")
	}

	// The pod's limit as the kubelet counts it: containers and sidecars
	// together, or a larger init container.
	pod := func(extra string) []byte {
		return []byte(`apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: a
    image: busybox:1.37
    resources: {limits: {memory: 1Gi}}
  - name: b
    image: busybox:1.37
    resources: {limits: {memory: 1Gi}}
  volumes:
  - name: shm
    emptyDir: {medium: Memory, sizeLimit: 3Gi}
` + extra)
	}
	require.ErrorContains(t, generator.CheckOutput(pod("")), "pod's memory limit, 2Gi")
	require.NoError(t, generator.CheckOutput(pod(`  initContainers:
  - name: i
    image: busybox:1.37
    resources: {limits: {memory: 4Gi}}
`)))
	require.ErrorContains(t, generator.CheckOutput(pod(`  initContainers:
  - name: s
    image: busybox:1.37
    restartPolicy: Always
    resources: {limits: {memory: 512Mi}}
`)), "pod's memory limit, 2560Mi")
}
