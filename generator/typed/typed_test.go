package typed_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestEveryPrototypeTakesTheSharedPieces: every built-in has its struct,
// and the shared pieces embedded in it (Common, Batch) and a shared group
// (Storage) reach the render of each prototype that has them.
func TestEveryPrototypeTakesTheSharedPieces(t *testing.T) {
	common := typed.Common{Name: "shared", Labels: map[string]string{"team": "ml"}}
	batch := typed.Batch{BackoffLimit: new(3)}
	storage := typed.Storage{Claim: typed.StorageClaim{Name: "ckpt"}}
	structs := map[string]interface{ Params() *generator.Params }{
		"deepspeed":      typed.DeepSpeed{Common: common, Batch: batch},
		"eval":           typed.Eval{Common: common, Batch: batch, Storage: storage},
		"horovod":        typed.Horovod{Common: common, Batch: batch},
		"horovod-dask":   typed.HorovodDask{Common: common, Batch: batch, Storage: storage},
		"horovod-spark":  typed.HorovodSpark{Common: common, Batch: batch, Storage: storage},
		"jax":            typed.JAX{Common: common, Batch: batch, Storage: storage},
		"openmpi":        typed.OpenMPI{Common: common, Batch: batch},
		"pytorch":        typed.PyTorch{Common: common, Batch: batch, Storage: storage},
		"tensorboard":    typed.TensorBoard{Common: common, Storage: storage},
		"tf-distributed": typed.TFDistributed{Common: common, Batch: batch, Storage: storage},
		"xgboost":        typed.XGBoost{Common: common, Batch: batch, Storage: storage},
	}
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	require.Equal(t, g.Names(), slices.Sorted(maps.Keys(structs)), "a struct per built-in prototype")
	for proto, s := range structs {
		res, err := g.Render(context.Background(), s.Params())
		require.NoError(t, err, proto)
		js, err := res.JSON()
		require.NoError(t, err, proto)
		out := string(js)
		for _, want := range []string{`"name": "shared`, `"team": "ml"`} {
			require.True(t, strings.Contains(out, want), "%s: %s not rendered", proto, want)
		}
		if proto != "tensorboard" { // no Jobs
			require.Regexp(t, `"backoffLimit(PerIndex)?": 3`, out, proto)
		}
		if !slices.Contains([]string{"deepspeed", "horovod", "openmpi"}, proto) { // no storage
			require.True(t, strings.Contains(out, `"claimName": "ckpt"`), "%s: the claim not rendered", proto)
		}
	}
}
