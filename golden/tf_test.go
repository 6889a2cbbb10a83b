package golden

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
)

// tfPrototypes share one params file (lib/tf.libsonnet); tf-distributed
// joins them when it exists.
var tfPrototypes = []string{"eval", "tensorboard", "tf-distributed"}

// TestOneParamsFileForTheTFPrototypes renders every TensorFlow prototype
// with the full defaults of each of the others as its params file: a key
// one of them declares must never be refused by another (lib/tf.libsonnet
// must list it), and a key they share must mean the same type in both.
func TestOneParamsFileForTheTFPrototypes(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	var protos []*generator.Prototype
	for _, name := range tfPrototypes {
		if pr, err := g.Lookup(name); err == nil {
			protos = append(protos, pr)
		}
	}
	require.GreaterOrEqual(t, len(protos), 2)
	for _, from := range protos {
		file, err := yaml.Marshal(withoutUnset(from.Defaults()))
		require.NoError(t, err)
		for _, to := range protos {
			if to == from {
				continue
			}
			_, err := g.Render(context.Background(), generator.NewParams(to.Name).AddFile(from.Name+"-defaults.yaml", file))
			require.NoErrorf(t, err, "%s refuses the parameters of %s:\n%s", to.Name, from.Name, file)
		}
	}
}

// withoutUnset drops unset parameters (and groups left empty): a params
// file holds what the user sets.
func withoutUnset(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = withoutUnset(sub)
			if len(v.(map[string]any)) == 0 {
				continue
			}
		}
		if v != nil {
			out[k] = v
		}
	}
	return out
}
