package generator_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
)

// An operator's object, malformed at any one place, gets a render or one
// line per problem that names the place: never a crash of the from
// function, a trace, or a problem of no place. The objects are the
// operators' own examples (testdata/operator-objects, taken from what
// test/operators recorded) and trainsonnet's richest PyTorchJob; each of
// their members, at any depth, is replaced in turn by null, removed, and
// given a value of each wrong kind.
func TestMalformedOperatorObjects(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	files, err := filepath.Glob("testdata/operator-objects/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	protos := map[string]string{"PyTorchJob": "pytorch", "TFJob": "tf-distributed", "MPIJob": "openmpi"}
	wrong := []any{nil, []any{}, map[string]any{}, "x", 2.5, -1, 0, true, []any{nil}, []any{"x"}, []any{map[string]any{}}}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(data, &obj))
		proto := protos[obj["kind"].(string)]
		require.NotEmpty(t, proto, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			n := 0
			for _, at := range paths(obj, nil) {
				for i, w := range append([]any{removed{}}, wrong...) {
					if testing.Short() && (n+i)%7 != 0 {
						continue
					}
					n++
					mut := mutate(obj, at, w)
					b, err := yaml.Marshal(mut)
					require.NoError(t, err)
					what := strings.Join(at, ".") + " = " + shownMutation(w)
					_, err = g.Render(context.Background(), generator.NewParams(proto).AddFile("job.yaml", b))
					if err == nil {
						continue
					}
					var ve *generator.ValidationError
					if !errors.As(err, &ve) {
						t.Errorf("%s: not a problem of the input: %v", what, err)
						continue
					}
					for _, p := range ve.Problems {
						msg := p.Error()
						if strings.Contains(msg, "\n") || strings.Contains(msg, "RUNTIME ERROR") || strings.Contains(msg, "could not translate") {
							t.Errorf("%s: %q", what, msg)
						}
						if !strings.HasPrefix(msg, "job.yaml") && p.Param == "" {
							t.Errorf("%s: a problem of no place: %q", what, msg)
						}
					}
				}
			}
			// every replica type an operator knows, added beside the
			// object's own (a copy of its first role)
			spec, _ := obj["spec"].(map[string]any)
			for _, key := range []string{"pytorchReplicaSpecs", "tfReplicaSpecs", "mpiReplicaSpecs"} {
				specs, ok := spec[key].(map[string]any)
				if !ok {
					continue
				}
				var first any
				for _, k := range slices.Sorted(maps.Keys(specs)) {
					first = specs[k]
					break
				}
				for _, rt := range []string{"Master", "Chief", "Worker", "PS", "Evaluator", "Launcher", "worker"} {
					if _, has := specs[rt]; has {
						continue
					}
					mut := mutate(obj, []string{"spec", key, rt}, first)
					b, err := yaml.Marshal(mut)
					require.NoError(t, err)
					_, err = g.Render(context.Background(), generator.NewParams(proto).AddFile("job.yaml", b))
					var ve *generator.ValidationError
					if err != nil && (!errors.As(err, &ve) || strings.Contains(err.Error(), "could not translate")) {
						t.Errorf("%s added: %v", rt, err)
					}
					n++
				}
			}
			t.Logf("%d objects", n)
		})
	}
}

type removed struct{}

func shownMutation(w any) string {
	if _, ok := w.(removed); ok {
		return "(removed)"
	}
	b, _ := yaml.Marshal(w)
	return strings.TrimSpace(string(b))
}

// paths lists the path of every member of v, at any depth (list entries
// by index), apiVersion and kind aside.
func paths(v any, at []string) [][]string {
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(at) == 0 && (k == "apiVersion" || k == "kind") {
				continue
			}
			p := append(slices.Clone(at), k)
			out = append(out, p)
			out = append(out, paths(x[k], p)...)
		}
	case []any:
		for i, e := range x {
			p := append(slices.Clone(at), "["+strconv.Itoa(i)+"]")
			out = append(out, p)
			out = append(out, paths(e, p)...)
		}
	}
	return out
}

// mutate returns a copy of v with the member at path replaced by w (or
// removed).
func mutate(v any, path []string, w any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = e
		}
		if len(path) == 1 {
			if _, ok := w.(removed); ok {
				delete(c, path[0])
			} else {
				c[path[0]] = w
			}
			return c
		}
		c[path[0]] = mutate(x[path[0]], path[1:], w)
		return c
	case []any:
		i, _ := strconv.Atoi(strings.Trim(path[0], "[]"))
		c := slices.Clone(x)
		if len(path) == 1 {
			if _, ok := w.(removed); ok {
				return slices.Delete(c, i, i+1)
			}
			c[i] = w
			return c
		}
		c[i] = mutate(x[i], path[1:], w)
		return c
	}
	return v
}
