package generator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
)

func TestJobParamsReadTheirPrototype(t *testing.T) {
	p, err := newGenerator(t).JobParams("a.yaml", []byte("prototype: horovod\nname: a\nworker:\n  number: 2\n"))
	require.NoError(t, err)
	assert.Equal(t, "horovod", p.Prototype())

	for data, want := range map[string]string{
		"name: a\n":           "a.yaml: names no prototype: add a top-level key prototype: <name> (see trainsonnet list)",
		"prototype: 3\n":      "a.yaml: names no prototype: add a top-level key prototype: <name> (see trainsonnet list)",
		"- prototype: eval\n": "a.yaml: must be a map of parameter names to values, with prototype: <name>",
	} {
		_, err := newGenerator(t).JobParams("a.yaml", []byte(data))
		assert.True(t, generator.IsValidation(err), "%q: %v", data, err)
		assert.EqualError(t, err, want, "%q", data)
	}
}

// A batch renders every job in its order, or fails as a whole, listing
// every failed job by name.
func TestRenderAll(t *testing.T) {
	g := newGenerator(t)
	ctx := context.Background()
	var jobs []generator.Job
	for _, proto := range []string{"openmpi", "eval", "horovod-dask", "tensorboard", "openmpi"} {
		name := proto + "-" + string(rune('a'+len(jobs)))
		jobs = append(jobs, generator.Job{Name: name, Params: generator.NewParams(proto).Set("name", name)})
	}
	results, err := g.RenderAll(ctx, jobs)
	require.NoError(t, err)
	require.Len(t, results, len(jobs))
	for i, res := range results {
		assert.Equal(t, jobs[i].Params.Prototype(), res.Prototype)
		assert.Contains(t, string(res.Objects[0].JSON()), `"app.kubernetes.io/instance":"`+jobs[i].Name+`"`)
	}

	jobs[1].Params.Set("backoffLimit", -1)
	jobs[3] = generator.Job{Name: "nope", Params: generator.NewParams("tensorbored")}
	_, err = g.RenderAll(ctx, jobs)
	var be *generator.BatchError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.True(t, generator.IsValidation(err))
	require.Len(t, be.Failed, 2)
	assert.Equal(t, "eval-b", be.Failed[0].Job)
	assert.Equal(t, "nope", be.Failed[1].Job)
	assert.Equal(t, "eval-b: backoffLimit: invalid value \"-1\": must be an integer from 0 to 100\n"+
		"nope: unknown prototype \"tensorbored\" (did you mean \"tensorboard\"?)", err.Error())
}

// TestRenderEach: each job's result goes to use once, and an error use
// returns for a job is that job's failure in the BatchError.
func TestRenderEach(t *testing.T) {
	g := newGenerator(t)
	var jobs []generator.Job
	for i, proto := range []string{"eval", "tensorboard", "eval", "openmpi"} {
		name := fmt.Sprintf("%s-%d", proto, i)
		jobs = append(jobs, generator.Job{Name: name, Params: generator.NewParams(proto).Set("name", name)})
	}
	var mu sync.Mutex
	seen := map[int]string{}
	err := g.RenderEach(context.Background(), jobs, func(i int, res *generator.Result) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i] = res.Prototype
		if i == 2 {
			return errors.New("disk full")
		}
		return nil
	})
	var be *generator.BatchError
	require.True(t, errors.As(err, &be), "%v", err)
	require.Len(t, be.Failed, 1)
	assert.Equal(t, "eval-2: disk full", err.Error())
	assert.Equal(t, map[int]string{0: "eval", 1: "tensorboard", 2: "eval", 3: "openmpi"}, seen)
}
