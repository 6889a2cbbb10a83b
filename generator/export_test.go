package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator/internal/check"
	"github.com/trainsonnet/trainsonnet/generator/internal/eval"
	"github.com/trainsonnet/trainsonnet/generator/internal/yamlenc"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// CheckOutput holds a YAML stream that trainsonnet printed to what every
// render is held to: each object strictly decoded into its type, and the
// pod check (generator/internal/check), as the output reads back.
func CheckOutput(y []byte) error {
	var items []any
	for _, doc := range bytes.Split(y, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("reading the output back: %w", err)
		}
		v, err := param.DecodeJSON(j)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	_, problems, err := check.Objects("output", items, nil, false)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", problems[0].String("output"))
	}
	return nil
}

// NewWith is New with the speed tricks that are on (both are in New):
// refs hands prototypes references to large strings, handOver takes the
// value of each render as Go values (generator/internal/eval).
func NewWith(opts Options, refs, handOver bool) (*Generator, error) {
	g, err := New(opts)
	if err == nil {
		g.eval.InlineLarge, g.eval.PrintFull = !refs, !handOver
	}
	return g, err
}

// YAMLByEncoder is r.YAML with every object written by the encoder alone,
// without yamlenc.Document's fast path.
func YAMLByEncoder(r *Result) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range r.Objects {
		y, err := yamlenc.ByEncoder(o.tree, o.yaml11)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// EncodeTree is the object's tree encoded anew, as JSON would without
// the encoding its check kept.
func EncodeTree(o *Object) []byte {
	b, err := json.Marshal(o.tree)
	if err != nil {
		panic(err)
	}
	return b
}

// SetBounds sets g's bounds of an evaluation (eval.Bounds): its time, and
// how much the stacks and the heap may grow, in MB.
func SetBounds(g *Generator, time time.Duration, stackMB, heapMB uint64) {
	g.eval.Bounds = eval.Bounds{Time: time, Stack: stackMB << 20, Heap: heapMB << 20, Every: eval.DefaultBounds.Every}
}

// OwnEnv is what pr declares as the variables of the job's own machinery.
func OwnEnv(pr *Prototype) map[string]string { return pr.ownEnv }

// ValueProblems are the problems of reading p's values by their
// declarations (what a params file can break), before any rule of the
// prototype's own or the pod check.
func ValueProblems(g *Generator, p *Params) ([]*param.Error, error) {
	pr, err := g.lookup(p.Prototype(), nil)
	if err != nil {
		return nil, err
	}
	_, problems := pr.resolve(p, nil)
	return problems, nil
}
