package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"

	"github.com/trainsonnet/trainsonnet/generator/suggest"
	"github.com/trainsonnet/trainsonnet/lib"
	"github.com/trainsonnet/trainsonnet/prototypes"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Options configure a Generator. The zero value uses the built-in
// prototypes only.
type Options struct {
	// PrototypePaths are directories holding prototypes of your own
	// (<name>.jsonnet) and Jsonnet libraries. They are searched before the
	// built-in ones, so a file there shadows a built-in of the same name.
	PrototypePaths []string
}

// Generator lists, describes and renders prototypes. It is safe for
// concurrent use: every render gets a Jsonnet VM of its own, taken from a
// pool so that imported libraries are parsed once.
type Generator struct {
	im      *importer
	files   *fileBlobs
	sources map[string]source // prototype name -> where it lives

	mu     sync.Mutex
	loaded map[string]*Prototype
	// idle VMs, kept for reuse: a VM caches the parsed and evaluated
	// libraries it imported (a sync.Pool would drop them at every GC).
	idle []*pooledVM
}

type source struct {
	path    string // importer name of the file
	builtin bool
}

// OpPrototypePath is the Op of the *fs.PathError (inside a *UsageError)
// that New returns for a PrototypePaths entry it cannot use, so that a
// caller can name the entry its own way (the CLI: --prototype-path).
const OpPrototypePath = "prototype path"

var errNotDir = errors.New("not a directory")

// New makes a Generator. It finds the prototypes but reads their
// declarations only when they are first used.
func New(opts Options) (*Generator, error) {
	embedded := map[string]fs.FS{"prototypes": prototypes.FS, "lib": lib.FS}
	dirs := make([]string, 0, len(opts.PrototypePaths))
	for _, d := range opts.PrototypePaths {
		if d == "" {
			return nil, &UsageError{&fs.PathError{Op: OpPrototypePath, Path: d, Err: errors.New("empty: name a directory")}}
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, &UsageError{&fs.PathError{Op: OpPrototypePath, Path: d, Err: err}}
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, &UsageError{&fs.PathError{Op: OpPrototypePath, Path: d, Err: errNotDir}}
		}
		dirs = append(dirs, abs)
	}
	im := newImporter(embedded, dirs)
	g := &Generator{
		im:      im,
		files:   newFileBlobs(im),
		sources: map[string]source{},
		loaded:  map[string]*Prototype{},
	}
	builtins, err := fs.Glob(prototypes.FS, "*.jsonnet")
	if err != nil {
		return nil, err
	}
	for _, f := range builtins {
		g.sources[strings.TrimSuffix(f, ".jsonnet")] = source{path: "prototypes/" + f, builtin: true}
	}
	// Later directories are searched after earlier ones: walk them in
	// reverse so the first one wins.
	for i := len(dirs) - 1; i >= 0; i-- {
		matches, err := filepath.Glob(filepath.Join(dirs[i], "*.jsonnet"))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			g.sources[strings.TrimSuffix(filepath.Base(m), ".jsonnet")] = source{path: m}
		}
	}
	return g, nil
}

// ready: g was made with New.
func (g *Generator) ready() error {
	if g == nil || g.im == nil {
		return errNotMade
	}
	return nil
}

// Names returns the names of every prototype, sorted, without reading them.
func (g *Generator) Names() []string {
	if g.ready() != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(g.sources))
}

// Prototypes reads and returns every prototype, sorted by name.
func (g *Generator) Prototypes() ([]*Prototype, error) {
	if err := g.ready(); err != nil {
		return nil, err
	}
	var out []*Prototype
	for _, n := range g.Names() {
		p, err := g.Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Lookup returns the named prototype with its declared parameters.
func (g *Generator) Lookup(name string) (*Prototype, error) {
	if err := g.ready(); err != nil {
		return nil, err
	}
	return g.lookup(name, nil)
}

// lookup is Lookup on the VM w, or on a pooled one when w is nil: a
// render looks up on its own VM, which parses the prototype's files once
// for both.
func (g *Generator) lookup(name string, w *pooledVM) (*Prototype, error) {
	g.mu.Lock()
	p, ok := g.loaded[name]
	g.mu.Unlock()
	if ok {
		return p, nil
	}
	src, ok := g.sources[name]
	if !ok {
		msg := fmt.Sprintf("unknown prototype %q (known: %s)", name, strings.Join(g.Names(), ", "))
		if s := suggest.Closest(name, g.Names()); s != "" {
			msg = fmt.Sprintf("unknown prototype %q (did you mean %q?)", name, s)
		}
		return nil, &UsageError{fmt.Errorf("%s", msg)}
	}
	out, err := g.declaration(w, name, src)
	if err != nil {
		return nil, evalError(name, "reading prototype "+name, err)
	}
	p, err = parsePrototype(name, src.path, src.builtin, out)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.loaded[name] = p
	g.mu.Unlock()
	return p, nil
}

// declaration is the JSON of the prototype's declaration: for a built-in,
// the one evaluated at build time (declarations.go) unless prototype paths
// may shadow the libraries it imports; otherwise evaluated on the VM w
// (or a pooled one).
func (g *Generator) declaration(w *pooledVM, name string, src source) (string, error) {
	if src.builtin && len(g.im.userDirs) == 0 {
		if out := builtinDeclaration(name); out != "" {
			return out, nil
		}
	}
	out, _, _, err := g.evaluate(w, src.path, &ast.DesugaredObject{}, "spec")
	return out, err
}

// Render checks the parameters and renders the prototype they are for.
// Problems with the parameters come back as a *ValidationError listing all
// of them; any other error is a bug in the prototype. Every object returned
// of an API group trainsonnet knows has been strictly decoded into its
// k8s.io/api type; the others (custom resources) have had their apiVersion,
// kind and metadata checked.
func (g *Generator) Render(ctx context.Context, params *Params) (*Result, error) {
	if err := g.ready(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, usage("nil context")
	}
	return g.render(ctx, params, nil)
}

// render is Render on the VM w, or on a pooled one when w is nil.
func (g *Generator) render(ctx context.Context, params *Params, w *pooledVM) (*Result, error) {
	if params == nil {
		return nil, usage("no parameters: make them with NewParams(prototype), or a typed struct's Params()")
	}
	pr, err := g.lookup(params.Prototype(), w)
	if err != nil {
		return nil, err
	}
	r, problems := pr.resolve(params)
	if len(problems) > 0 {
		// Every problem at once: the prototype's own rules too, on the
		// values the inputs gave that are valid (the others keep their
		// defaults), for the parameters an input set and no problem names.
		if out, err := g.run(w, pr, r); err == nil {
			named := map[string]bool{}
			for _, pb := range problems {
				named[pb.Param] = true
			}
			// (not a rule that names one of the invalid parameters: with
			// its default it may be broken only because of them)
			mentions := func(rule string) bool {
				for p := range named {
					if p != "" && strings.Contains(rule, p) {
						return true
					}
				}
				return false
			}
			for _, pb := range out.problems {
				if pb.Source != "" && !named[pb.Param] && !mentions(pb.Rule) {
					problems = append(problems, pb)
				}
			}
		}
		return nil, &ValidationError{Prototype: pr.Name, Problems: problems}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := g.run(w, pr, r)
	if err != nil {
		return nil, err
	}
	if len(out.problems) > 0 {
		return nil, &ValidationError{Prototype: pr.Name, Problems: out.problems}
	}
	objs, found, err := checkObjects(pr.Name, out.emitted, out.blobs, out.dollars)
	if err != nil {
		return nil, err
	}
	if len(found) > 0 {
		// The user's problems when an input explains them (explain.go);
		// any other is the prototype's.
		problems, err := r.explainAll(pr, found)
		if err != nil {
			return nil, err
		}
		return nil, &ValidationError{Prototype: pr.Name, Problems: problems}
	}
	res := &Result{Prototype: pr.Name, Objects: objs, Warnings: r.warnings}
	for _, w := range out.warnings {
		if s, ok := w.(string); ok {
			res.Warnings = append(res.Warnings, unmark(s))
		}
	}
	return res, nil
}

// run is one evaluation of the prototype on resolved values: the
// problems its own rules report, or its objects and warnings.
type run struct {
	problems []*param.Error
	warnings []any
	emitted  []any
	blobs    *blobSet
	dollars  bool // the user's text holds $ (kubeletexpand.go)
}

func (g *Generator) run(w *pooledVM, pr *Prototype, r *resolved) (*run, error) {
	tla, dollars, problems, err := r.tla(pr)
	if err != nil {
		return nil, fmt.Errorf("passing the parameters to %s: %w", pr.Name, err)
	}
	if len(problems) > 0 {
		return &run{problems: problems}, nil
	}
	out, emitted, blobs, err := g.evaluate(w, pr.Source, tla, "full")
	if err != nil {
		return nil, g.evalFailed(pr, tla, err)
	}
	full, err := param.DecodeJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("prototype %s: its output is not JSON: %w", pr.Name, err)
	}
	// The objects come one way only: as Go values through the native emit,
	// with their count in the output (ts.prototype does that).
	top, _ := full.(map[string]any)
	reported, okErrors := top["errors"].([]any)
	warnings, okWarnings := top["warnings"].([]any)
	count, okCount := top["objects"].(json.Number)
	okObjects := okCount && count.String() == strconv.Itoa(len(emitted)) || len(reported) > 0
	if !okObjects || !okErrors || !okWarnings {
		return nil, fmt.Errorf("prototype %s: its output is not {errors, warnings, objects} with the objects emitted; is it built with ts.prototype?", pr.Name)
	}
	res := &run{warnings: warnings, emitted: emitted, blobs: blobs, dollars: dollars}
	seen := map[string]bool{}
	report := func(path, rule string) {
		pe := &param.Error{Param: path, Rule: unmark(rule)}
		if prm := pr.Param(path); prm != nil {
			pe.Source = r.givenAs(prm) // "" when no input set it
			if v := r.get(path); v != nil {
				pe.Value = param.Show(v)
			}
		}
		if !seen[pe.Error()] { // a rule checked per item may fire twice
			seen[pe.Error()] = true
			res.problems = append(res.problems, pe)
		}
	}
	for _, e := range reported {
		m, _ := e.(map[string]any)
		path, _ := m["param"].(string)
		rule, _ := m["rule"].(string)
		report(path, rule)
	}
	// The relations its declarations state (params.atMost, atLeast),
	// checked here, beside its own rules.
	for _, e := range param.Related(pr.related, r.get) {
		report(e.Param, e.Rule)
	}
	return res, nil
}

// evaluate runs a prototype file with the given params and output mode on
// the VM w, or on a pooled one when w is nil. It returns the JSON the
// prototype evaluated to, the objects it handed over through
// std.native('emit') if it did, and the large strings its references
// stand for (assets.go).
func (g *Generator) evaluate(w *pooledVM, file string, params ast.Node, output string) (string, []any, *blobSet, error) {
	if w == nil {
		w = g.getVM()
		defer g.putVM(w)
	}
	w.emitted, w.blobs = nil, &blobSet{}
	w.vm.TLAReset()
	w.vm.TLANode("params", params)
	w.vm.TLAVar("output", output)
	out, err := w.vm.EvaluateFile(file)
	return out, w.emitted, w.blobs, err
}

// pooledVM is a Jsonnet VM with the per-render state of its natives.
type pooledVM struct {
	vm      *jsonnet.VM
	emitted []any    // what the prototype passed to std.native('emit')
	blobs   *blobSet // the large strings of this render
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
	for _, f := range nativeFunctions() {
		w.vm.NativeFunction(f)
	}
	for _, f := range g.renderNatives(w) {
		w.vm.NativeFunction(f)
	}
	if !checks {
		w.vm.NativeFunction(skipChecks)
	}
	w.vm.ErrorFormatter.SetMaxStackTraceSize(12)
	w.vm.ErrorFormatter = failFormatter{w.vm.ErrorFormatter} // ts.fail: its message alone
	return w
}

// assetArg is the file named by the path argument of the asset natives.
func (g *Generator) assetArg(native string, args []any) (*blob, error) {
	path, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("%s(path) wants a string", native)
	}
	return g.files.get(path)
}

// renderNatives are the natives that keep state for the render under way
// on w.
func (g *Generator) renderNatives(w *pooledVM) []*jsonnet.NativeFunction {
	// held: a native that builds a large string, handed to Jsonnet as a
	// reference to it (assets.go).
	held := func(build func([]any) (any, error)) func([]any) (any, error) {
		return func(args []any) (any, error) {
			text, err := build(args)
			if err != nil {
				return nil, err
			}
			return w.blobs.value(text.(string)), nil
		}
	}
	return []*jsonnet.NativeFunction{
		{
			// emit(objects) hands the rendered objects to Go as Go values:
			// they skip being printed as JSON text and parsed again.
			Name:   "emit",
			Params: ast.Identifiers{"objects"},
			Func: func(args []any) (any, error) {
				objs, ok := args[0].([]any)
				if !ok {
					return nil, fmt.Errorf("emit(objects) wants an array")
				}
				w.emitted = objs
				return float64(len(objs)), nil
			},
		},
		{
			// asset(path) stands for a file the pods need (assets.go).
			Name:   "asset",
			Params: ast.Identifiers{"path"},
			Func: func(args []any) (any, error) {
				b, err := g.assetArg("asset", args)
				if err != nil {
					return nil, err
				}
				return w.blobs.add(b), nil
			},
		},
		{
			// assetBytes(path) is the size in bytes of the asset at path,
			// without handing its text to Jsonnet: std.length of a long
			// string costs a rune conversion of the whole text per render.
			Name:   "assetBytes",
			Params: ast.Identifiers{"path"},
			Func: func(args []any) (any, error) {
				b, err := g.assetArg("assetBytes", args)
				if err != nil {
					return nil, err
				}
				return float64(len(b.content)), nil
			},
		},
		{
			// indexedLines(head, prefix, suffix, from, to) stands for head,
			// then the text prefix+i+suffix+"\n" for every i in [from, to):
			// one line per worker, built in Go because per-worker string
			// work in Jsonnet costs microseconds per line (see
			// research/perf-anchors.md).
			Name:   "indexedLines",
			Params: ast.Identifiers{"head", "prefix", "suffix", "from", "to"},
			Func:   held(indexedLines),
		},
		{
			// indexedList(prefix, suffix, sep, from, to) stands for the
			// items prefix+i+suffix for every i in [from, to), joined by
			// sep: a list of hosts, built in Go like indexedLines.
			Name:   "indexedList",
			Params: ast.Identifiers{"prefix", "suffix", "sep", "from", "to"},
			Func:   held(indexedList),
		},
	}
}

func (g *Generator) putVM(w *pooledVM) {
	w.emitted, w.blobs = nil, nil
	g.mu.Lock()
	if len(g.idle) < maxIdleVMs {
		g.idle = append(g.idle, w)
	}
	g.mu.Unlock()
}

// maxIdleVMs bounds the VMs kept between renders.
const maxIdleVMs = 8
