package generator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// TestMountPathSpellings: a volumeMount's path means the directory the
// kubelet mounts, however it is spelled, in every prototype that takes
// volumeMounts: /dev/shm/ replaces the job's own /dev/shm as /dev/shm
// does, and a directory under /data/ is under /data. Each spelling must
// render what the clean path renders, or be refused as it is.
func TestMountPathSpellings(t *testing.T) {
	g := newGenerator(t)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	tried := 0
	for _, pr := range protos {
		if !slices.ContainsFunc(pr.Params, func(p *param.Param) bool { return p.Path == "volumeMounts" }) {
			continue
		}
		tried++
		t.Run(pr.Name, func(t *testing.T) {
			for _, clean := range []string{"/dev/shm", "/data", "/etc/trainsonnet", "/kolotoc/generated"} {
				want := mountRender(t, g, pr.Name, clean)
				for _, spelled := range []string{clean + "/", strings.Replace(clean, "/", "//", 2), clean + "/.", clean + "/x/.."} {
					assert.Equal(t, want, mountRender(t, g, pr.Name, spelled), "%s: a mount at %s renders as one at %s", pr.Name, spelled, clean)
				}
			}
		})
	}
	assert.GreaterOrEqual(t, tried, 7, "prototypes that take volumeMounts")
}

// mountRender renders the prototype with an emptyDir of the user's at
// path (with the same keys and tokens every time) and returns its objects
// by "Kind/name", or its problems.
func mountRender(t *testing.T, g *generator.Generator, proto, path string) any {
	t.Helper()
	params := generator.NewParams(proto).
		Set("volumes", []any{map[string]any{"name": "mine", "emptyDir": map[string]any{}}}).
		Set("volumeMounts", []any{map[string]any{"name": "mine", "mountPath": path}})
	cryptotest.SetGlobalRandom(t, 1)
	if _, err := g.Render(context.Background(), params); err != nil {
		return validationProblems(t, err)
	}
	cryptotest.SetGlobalRandom(t, 1)
	return render(t, g, params)
}
