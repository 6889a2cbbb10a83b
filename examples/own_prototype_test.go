package examples

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/internal/goldentest"
)

// TestOwnPrototype renders the worked example of a prototype of one's own
// (own-prototype/pytorch-ddp.jsonnet, on lib/roles.libsonnet) as
// `trainsonnet -J own-prototype gen pytorch-ddp -f own-prototype/params.yaml`
// does, and pins the output. Its declarations get flags, defaults,
// validation and the shared rules without any Go.
func TestOwnPrototype(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"own-prototype"}})
	require.NoError(t, err)

	p, err := g.Lookup("pytorch-ddp")
	require.NoError(t, err)
	var flags []string
	for _, q := range p.Params {
		flags = append(flags, q.Path)
	}
	assert.Subset(t, flags, []string{"gpu", "cpu", "memory", "nodeSelector", "tolerations", "exec", "workers", "backoffLimit"},
		"the role's typed parameters and the Job lifetime come from the library")

	data, err := os.ReadFile(filepath.Join("own-prototype", "params.yaml"))
	require.NoError(t, err)
	res, err := g.Render(context.Background(), generator.NewParams("pytorch-ddp").AddFile("params.yaml", data))
	require.NoError(t, err)
	out, err := res.YAML()
	require.NoError(t, err)
	goldentest.Assert(t, out, filepath.Join("own-prototype", "expected.yaml"))

	// The Job lifetime reaches the Job: the worker role is the lead, so
	// --backoff-limit counts its retries.
	res, err = g.Render(context.Background(), generator.NewParams("pytorch-ddp").
		SetText("backoffLimit", "3", "--backoff-limit").SetText("activeDeadlineSeconds", "2h", "--active-deadline-seconds"))
	require.NoError(t, err)
	var job *generator.Object
	for _, o := range res.Objects {
		if o.Kind == "Job" {
			job = o
		}
	}
	require.NotNil(t, job, "a Job of the workers")
	var got struct {
		Spec struct{ BackoffLimit, ActiveDeadlineSeconds int }
	}
	require.NoError(t, json.Unmarshal(job.JSON(), &got))
	assert.Equal(t, 3, got.Spec.BackoffLimit, "--backoff-limit reaches the Job")
	assert.Equal(t, 7200, got.Spec.ActiveDeadlineSeconds, "--active-deadline-seconds reaches the Job")

	// The shared rules apply: 1,000 workers make host names of 63
	// characters too long for this name.
	_, err = g.Render(context.Background(), generator.NewParams("pytorch-ddp").
		Set("name", "a-rather-long-job-name-for-a-big-distributed-training-run").Set("workers", 1000))
	var verr *generator.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, err.Error(), "pod host names such as a-rather-long-job-name-for-a-big-distributed-training-run-worker-999 must fit in 63")
}
