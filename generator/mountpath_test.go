package generator_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

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
// path and returns its objects but the Secrets (whose keys are new on
// every render), or its problems.
func mountRender(t *testing.T, g *generator.Generator, proto, path string) string {
	t.Helper()
	res, err := g.Render(context.Background(), generator.NewParams(proto).
		Set("volumes", []any{map[string]any{"name": "mine", "emptyDir": map[string]any{}}}).
		Set("volumeMounts", []any{map[string]any{"name": "mine", "mountPath": path}}))
	var verr *generator.ValidationError
	if errors.As(err, &verr) {
		var out []string
		for _, p := range verr.Problems {
			out = append(out, p.Param+": "+p.Rule)
		}
		return "refused: " + strings.Join(out, "; ")
	}
	require.NoError(t, err)
	objs := map[string]string{}
	for _, o := range res.Objects {
		if o.Kind != "Secret" {
			objs[o.Kind+"/"+o.Name] = string(o.JSON())
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(objs)) {
		b.WriteString(k + " " + objs[k] + "\n")
	}
	return b.String()
}
