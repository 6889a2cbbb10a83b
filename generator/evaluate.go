package generator

import (
	"errors"
	"fmt"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// evaluate runs a prototype file with the given params and output mode on
// the VM w, or on a pooled one when w is nil, and returns the JSON it
// printed.
func (g *Generator) evaluate(w *pooledVM, file string, params ast.Node, output string) (string, error) {
	if w == nil {
		w = g.getVM()
		defer g.putVM(w)
	}
	w.handed, w.wasHanded = nil, false
	w.errs.entry = file
	w.vm.TLAReset()
	w.vm.TLANode("params", params)
	w.vm.TLAVar("output", output)
	if g.runaway.Load() {
		return "", errRunaway
	}
	out, abandoned, err := watched(g.bounds, func() (string, error) { return w.vm.EvaluateFile(file) })
	if abandoned {
		w.abandoned = true // still evaluating: never to be reused
		g.runaway.Store(true)
		return "", fmt.Errorf("%s: %w", g.im.show(file), err)
	}
	return out, err
}

// errRunaway: an evaluation of g passed a bound and runs on, unstoppable
// (bounds.go); the bounds of the next could not be told from it.
var errRunaway = errors.New("an earlier evaluation passed its bounds and runs on, out of reach (go-jsonnet cannot be stopped): this Generator renders no more; end the process")

// full is the value of a render (output 'full': {errors, warnings,
// objects}) as Go values, the objects among them: what the prototype
// evaluated to. That value comes one way, and this is its seam:
// ts.prototype gives it to std.native('handOver'), which takes it as Go
// values, since printing it as JSON text for Go to parse it again costs
// a render a fifth more time, an eighth more allocations and a quarter
// more bytes (BenchmarkRenderHandOver);
// a prototype that does not (a wrapper of one's own, or with printFull)
// has its printed output parsed instead.
func (g *Generator) full(w *pooledVM, file string, params ast.Node) (any, error) {
	if w == nil {
		w = g.getVM()
		defer g.putVM(w)
	}
	out, err := g.evaluate(w, file, params, "full")
	handed, ok := w.handed, w.wasHanded
	w.handed = nil
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return param.DecodeJSON([]byte(out))
	case out != "null\n": // what handOver returned, as the whole output
		return nil, errors.New("its output is not the value it handed over (std.native('handOver') is ts.prototype's)")
	}
	return handed, nil
}

// pooledVM is a Jsonnet VM with the natives registered (natives), and
// the one thing a native keeps of the evaluation under way: the value
// handed over.
type pooledVM struct {
	vm        *jsonnet.VM
	errs      *errFormatter // formats the errors of the file evaluated
	abandoned bool          // an evaluation passed a bound and runs on (bounds.go)
	handed    any
	wasHanded bool
}

// handOver is the native handOver(value): it keeps the value for full.
func (w *pooledVM) handOver(args []any) (any, error) {
	if w.wasHanded {
		return nil, fmt.Errorf("handOver(value) is called once per evaluation, by ts.prototype")
	}
	w.handed, w.wasHanded = args[0], true
	return nil, nil
}

func (g *Generator) getVM() *pooledVM {
	g.mu.Lock()
	if n := len(g.idle); n > 0 {
		w := g.idle[n-1]
		g.idle = g.idle[:n-1]
		g.mu.Unlock()
		return w
	}
	g.mu.Unlock()
	return g.newVM(false)
}

// newVM is a VM with the importer and the natives. checks: the library
// checks what its pieces read of the parameters (ts.checks), which a
// render skips: only a failed render is evaluated again with them
// (evalFailed).
func (g *Generator) newVM(checks bool) *pooledVM {
	w := &pooledVM{vm: jsonnet.MakeVM()}
	w.vm.Importer(g.im)
	for _, f := range g.natives(w, checks) {
		w.vm.NativeFunction(f)
	}
	w.vm.ErrorFormatter.SetMaxStackTraceSize(12)
	w.errs = &errFormatter{ErrorFormatter: w.vm.ErrorFormatter, im: g.im}
	w.vm.ErrorFormatter = w.errs
	return w
}

func (g *Generator) putVM(w *pooledVM) {
	if w.abandoned {
		return
	}
	w.handed, w.wasHanded = nil, false
	g.mu.Lock()
	if len(g.idle) < maxIdleVMs {
		g.idle = append(g.idle, w)
	}
	g.mu.Unlock()
}

// maxIdleVMs bounds the VMs kept between renders.
const maxIdleVMs = 8
