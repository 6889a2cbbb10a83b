package generator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// TestOwnEnvRefused: every env parameter of every prototype (a map keyed
// by variable names), the example of one's own too, refuses each variable
// the job's own machinery reads (its ownEnv: the runtime's TS_*, the Job
// controller's JOB_COMPLETION_INDEX, torchrun's PET_NNODES and the like,
// Open MPI's
// OMPI_MCA_*), naming the parameter, the value and why; other names pass.
func TestOwnEnvRefused(t *testing.T) {
	g, err := generator.New(generator.Options{PrototypePaths: []string{"../examples/own-prototype"}})
	require.NoError(t, err)
	for _, name := range g.Names() {
		pr, err := g.Lookup(name)
		require.NoError(t, err)
		own := generator.OwnEnv(pr)
		for _, must := range []string{"TS_*", "TRAINSONNET_*", "JOB_COMPLETION_INDEX"} {
			assert.Contains(t, own, must, "%s: the library's own variables", name)
		}
		var envMaps []*param.Param
		for _, p := range param.Leaves(pr.Params) {
			if p.Type == param.TypeMap && p.Format == "envName" {
				envMaps = append(envMaps, p)
			}
		}
		require.NotEmpty(t, envMaps, "%s has env parameters", name)
		for _, prm := range envMaps {
			// launcher.* is the launcher pod's, which a launcher as worker
			// 0 does not have
			params := func() *generator.Params {
				p := generator.NewParams(name)
				if strings.HasPrefix(prm.Path, "launcher.") && pr.Param("launcherAsWorker") != nil {
					p.Set("launcherAsWorker", false)
				}
				return p
			}
			for k, why := range own {
				variable := strings.TrimSuffix(k, "*")
				if variable != k {
					variable += "X"
				}
				_, err := g.Render(context.Background(), params().Set(prm.Path, map[string]string{variable: "1"}))
				var v *generator.ValidationError
				if assert.ErrorAs(t, err, &v, "%s %s=%s", name, prm.Path, variable) {
					assert.Contains(t, v.Error(), prm.Path+`: invalid value "`+variable+`=1": variable `+variable+" is the job's own: "+why)
				}
			}
			_, err := g.Render(context.Background(), params().Set(prm.Path, map[string]string{"MY_SETTING": "1"}))
			assert.NoError(t, err, "%s %s: a variable of the user's", name, prm.Path)
		}
	}
	// torchrun's variables of the flags trainsonnet gives it, not the
	// others (PET_TEE, PET_REDIRECTS: the user's)
	pr, err := g.Lookup("pytorch")
	require.NoError(t, err)
	assert.Contains(t, generator.OwnEnv(pr), "PET_NNODES")
	assert.NotContains(t, generator.OwnEnv(pr), "PET_*")
	_, err = g.Render(context.Background(), generator.NewParams("pytorch").Set("env", map[string]string{"PET_TEE": "1", "PET_REDIRECTS": "1"}))
	assert.NoError(t, err)
	for _, mpi := range []string{"openmpi", "horovod", "horovod-dask"} {
		pr, err := g.Lookup(mpi)
		require.NoError(t, err)
		assert.Contains(t, generator.OwnEnv(pr), "OMPI_MCA_*")
	}
}
