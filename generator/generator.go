package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/trainsonnet/trainsonnet/generator/internal/check"
	"github.com/trainsonnet/trainsonnet/generator/internal/dollar"
	"github.com/trainsonnet/trainsonnet/generator/internal/eval"
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
// pool so that imported libraries are parsed once. An evaluation that
// passes its bounds (2 minutes, 128 MB more stack, 4 GB more heap: a
// prototype of one's own that does not end) is an error, and since
// go-jsonnet cannot be stopped, the Generator renders no more after it:
// render prototypes you do not trust in a process of your own.
type Generator struct {
	eval    *eval.Engine
	sources map[string]source // prototype name -> where it lives

	mu     sync.Mutex
	loaded map[string]*Prototype
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
	given := make([]string, 0, len(opts.PrototypePaths))
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
		given = append(given, d)
	}
	g := &Generator{
		eval:    eval.New(embedded, dirs, given),
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
	if g == nil || g.eval == nil {
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
func (g *Generator) lookup(name string, w *eval.Session) (*Prototype, error) {
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
	out, err := g.eval.Declaration(w, name, src.path, src.builtin)
	if err != nil {
		return nil, eval.Error(name, "reading prototype "+name, err)
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
func (g *Generator) render(ctx context.Context, params *Params, w *eval.Session) (*Result, error) {
	if params == nil {
		return nil, usage("no parameters: make them with NewParams(prototype), or a typed struct's Params()")
	}
	pr, err := g.lookup(params.Prototype(), w)
	if err != nil {
		return nil, err
	}
	r, problems := pr.resolve(params, g.migrator(w, pr))
	if r.err != nil {
		return nil, r.err
	}
	if len(problems) > 0 {
		// Every problem at once: the prototype's own rules too, on the
		// values the inputs gave that are valid (the others keep their
		// defaults), for the parameters an input set and no problem names.
		if out, err := g.run(w, pr, r, false); err == nil {
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
	out, err := g.run(w, pr, r, true)
	if err != nil {
		return nil, err
	}
	if len(out.problems) > 0 {
		return nil, &ValidationError{Prototype: pr.Name, Problems: out.problems}
	}
	checked, found, err := check.Objects(pr.Name, out.objects, g.eval.ResolveRefs, out.dollars)
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
	objs := make([]*Object, len(checked))
	for i, c := range checked {
		objs[i] = objectOf(c)
	}
	res := &Result{Prototype: pr.Name, Objects: objs, Warnings: r.warnings}
	for _, w := range out.warnings {
		if s, ok := w.(string); ok {
			res.Warnings = append(res.Warnings, dollar.Unmark(s))
		}
	}
	return res, nil
}

// run is one evaluation of the prototype on resolved values: the
// problems its own rules report, or its objects and warnings. explain
// says what a failed evaluation lacks (evalFailed, a second evaluation
// with the library's checks); a caller that drops the error does not ask.
type run struct {
	problems []*param.Error
	warnings []any
	objects  []any
	dollars  bool // the user's text holds $ (generator/internal/dollar)
}

func (g *Generator) run(w *eval.Session, pr *Prototype, r *resolved, explain bool) (*run, error) {
	tla, dollars, problems, err := r.tla(pr)
	if err != nil {
		return nil, fmt.Errorf("passing the parameters to %s: %w", pr.Name, err)
	}
	if len(problems) > 0 {
		return &run{problems: problems}, nil
	}
	full, err := g.eval.Full(w, pr.Source, tla)
	if err != nil {
		if !explain {
			return nil, err
		}
		return nil, g.eval.Failed(pr.Name, pr.Source, tla, err)
	}
	top, _ := full.(map[string]any)
	reported, okErrors := top["errors"].([]any)
	warnings, okWarnings := top["warnings"].([]any)
	objects, okObjects := top["objects"].([]any)
	if !okObjects || !okErrors || !okWarnings {
		return nil, fmt.Errorf("prototype %s: its output 'full' is not {errors, warnings, objects}; is it built with ts.prototype?", pr.Name)
	}
	res := &run{warnings: warnings, objects: objects, dollars: dollars}
	seen := map[string]bool{}
	report := func(path, rule string) {
		pe := &param.Error{Param: path, Rule: dollar.Unmark(rule)}
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
		path, okPath := m["param"].(string)
		rule, okRule := m["rule"].(string)
		if !okPath || !okRule || rule == "" {
			what, _ := json.Marshal(e)
			msg := fmt.Sprintf("validate(p) must return lists of problems made with ts.check(ok, param, rule), {param: <name>, rule: <text>}; one is %s", what)
			if !pr.Builtin {
				msg = g.eval.Place(pr.Source, msg) + ": " + msg
			}
			return nil, fmt.Errorf("prototype %s: %s", pr.Name, msg)
		}
		report(path, rule)
	}
	// The relations its declarations state (params.atMost, atLeast, needs),
	// checked here, beside its own rules.
	for _, e := range param.Related(pr.related, r.get) {
		report(e.Param, e.Rule)
	}
	return res, nil
}

// migrator returns the migrateFunc of pr on the VM w (a pooled one when
// w is nil).
func (g *Generator) migrator(w *eval.Session, pr *Prototype) migrateFunc {
	return func(kind string, obj map[string]any) (*migration, error) {
		// The file's values as JSON values: its numbers as numbers.
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		v, err := param.DecodeJSON(b)
		if err != nil {
			return nil, err
		}
		args, err := eval.Literal(map[string]any{"kind": kind, "object": v})
		if err != nil {
			return nil, err
		}
		out, err := g.eval.Evaluate(w, pr.Source, args, "from")
		if err != nil {
			return nil, eval.Error(pr.Name, "deriving the parameters of "+pr.Name+" from a "+kind, err)
		}
		var m migration
		dec := json.NewDecoder(bytes.NewReader([]byte(out)))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("prototype %s: its from function for %s must return {params, warnings, errors}: %w", pr.Name, kind, err)
		}
		return &m, nil
	}
}
