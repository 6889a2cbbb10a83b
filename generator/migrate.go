package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/eval"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// A params file may be, instead of parameters, a whole object of the system
// a prototype replaces: a user's PyTorchJob for pytorch, an MPIJob for
// openmpi, a TFJob for tf-distributed. The prototype declares the kinds it
// takes (from: {'kubeflow.org/v1/PyTorchJob': function(o) ...} in
// ts.prototype) and derives, in Jsonnet, its parameters from one: the
// workers from the replica specs, the image, command, GPUs, requests, env
// and volumes from the pod template, the retries from the run policy. What
// it cannot carry, or carries with another meaning, it says in warnings;
// what it cannot derive at all is a problem of the file, unless another
// input sets the parameter it names (a container that only has args, whose
// image's ENTRYPOINT trainsonnet cannot read, needs exec). The parameters
// derived are then applied as a params file's are, in the file's place
// among the inputs: a later -f, --set or flag still overrides them.

// migration is what a prototype's from function returns for one object.
type migration struct {
	Params   map[string]any `json:"params"`
	Warnings []string       `json:"warnings"`
	// Errors: what the object holds that cannot be taken (Field, its
	// path in the object) or a parameter it does not give (Param, or
	// several as "a|b": the problem stands unless another input sets it).
	Errors []migrationError `json:"errors"`
}

type migrationError struct {
	Field string `json:"field"`
	Param string `json:"param"`
	Rule  string `json:"rule"`
}

// migrate derives parameters from obj, an object of a kind the
// prototype takes (its from function, evaluated on a VM of g).
type migrateFunc func(kind string, obj map[string]any) (*migration, error)

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

// objectKind is the "<apiVersion>/<kind>" of a params file that is an
// object (it has apiVersion or kind), or "".
func objectKind(m map[string]any) (string, bool) {
	av, hasAV := m["apiVersion"]
	k, hasK := m["kind"]
	if !hasAV && !hasK {
		return "", false
	}
	as, _ := av.(string)
	ks, _ := k.(string)
	return as + "/" + ks, true
}

// applyObject applies a params file that is an object: one of the kinds
// pr takes, through its from function, or a problem that says which it
// takes.
func (pr *Prototype) applyObject(r *resolved, it input, m map[string]any, kind string, add func(*param.Error)) {
	shown := strings.TrimPrefix(kind, "/")
	if !slices.Contains(pr.From, kind) {
		rule := "a params file holds " + pr.Name + "'s parameters"
		if len(pr.From) > 0 {
			rule += ", or a whole " + strings.Join(pr.From, " or ")
		}
		rule += "; this is an object of another kind"
		add(&param.Error{Source: it.given, Value: param.Show(shown), Rule: rule})
		return
	}
	short := kind[strings.LastIndex(kind, "/")+1:]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains([]string{"apiVersion", "kind", "metadata", "spec", "status"}, k) {
			add(&param.Error{Source: it.given + ": " + k, Rule: "a " + short + " has apiVersion, kind, metadata and spec: give parameters in a file of their own (-f), with --set or flags"})
		}
	}
	if r.migrate == nil {
		add(&param.Error{Source: it.given, Value: param.Show(shown), Rule: "this way of rendering takes parameters only"})
		return
	}
	mg, err := r.migrate(kind, m)
	if err != nil {
		r.err = err
		return
	}
	for _, e := range mg.Errors {
		pe := &param.Error{Source: it.given, Rule: e.Rule}
		if e.Field != "" {
			pe.Source += ": " + e.Field
		}
		if e.Param != "" {
			// the file does not give it: a problem unless an input does
			r.needs = append(r.needs, need{prm: e.Param, err: pe})
			continue
		}
		add(pe)
	}
	for _, w := range mg.Warnings {
		r.warnings = append(r.warnings, it.given+": "+w)
	}
	pr.applyMembers(r, nil, mg.Params, "", func(k string) string { return it.given + " (" + short + " → " + k + ")" }, add)
}

// need is a parameter that an object given as a params file could not
// give: its problem, unless another input sets the parameter (or one of
// them: "exec|worker.exec").
type need struct {
	prm string
	err *param.Error
}

// met reports whether an input set the parameter n needs.
func (n need) met(r *resolved) bool {
	for _, p := range strings.Split(n.prm, "|") {
		if r.given[p] != "" {
			return true
		}
	}
	return false
}
