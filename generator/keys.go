package generator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/kubeflow"
	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/generator/suggest"
)

// What a key that a source writes stands for, and the migrations a
// prototype declares beside its parameters, applied here alike for every
// prototype. A key is, in this order: a declared path (or alias); the
// replaced system's path of a parameter or group (replaces, which
// Param.OldPaths holds: applied, with a warning naming the new one); a
// key the replaced system had that trainsonnet no longer takes (removed:
// ignored, with a warning that says what to do instead); a group of such
// keys that is no group here (the distrib-tensorflow chart's
// clusterConfig); or unknown, with a "did you mean". When any key of the
// replaced chart's values is in use (chart), what the chart's templates
// hard-wired is taken where no input set it, and what differs is said.
// How a value is written is the parameter's business (generator/param:
// its type and its Spellings); params.go, which walks the sources in
// order, asks here what each key means, and what a whole object of the
// replaced system given as a params file means (below: the prototype's
// from function, which the Generator evaluates, migrator).

// mapEntry splits "nodeSelector.cloud.google.com/gpu" into a map parameter
// and one of its keys, when the path starts with a map parameter.
func (pr *Prototype) mapEntry(path string) (*param.Param, string) {
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if p := pr.Param(path[:i]); p != nil && p.Type == param.TypeMap {
			return p, path[i+1:]
		}
	}
	return nil, ""
}

// oldPath returns the parameter (or group) that one of paths, the replaced
// system's, now stands for, or nil.
func (pr *Prototype) oldPath(paths ...string) *param.Param {
	for _, p := range paths {
		if prm := pr.byOldPath[p]; prm != nil {
			return prm
		}
	}
	return nil
}

// keyUsed records how an input named prm, by key: an alias (a flag or key
// of the replaced system's, ks generate openmpi --secret) counts among the
// replaced system's keys (applyChart); an old path gets a warning naming
// the new one.
func (r *resolved) keyUsed(prm *param.Param, key, given string) {
	switch {
	case slices.Contains(prm.Aliases, key):
		r.oldKeys = append(r.oldKeys, key)
	case slices.Contains(prm.OldPaths, key):
		r.renamedKey(given, key, prm)
	}
}

// renamedKey records that given wrote old, the replaced system's path of
// prm: a warning that names the new one, or, where prm declares how its
// meaning differs (ReplacesNote), that difference.
func (r *resolved) renamedKey(given, old string, prm *param.Param) {
	if prm.ReplacesNote != "" && old == prm.Replaces {
		// not a rename: the meaning differs, and the warning says how
		r.warnings = append(r.warnings, given+": taken as "+prm.Path+": "+prm.ReplacesNote)
		r.oldKeys = append(r.oldKeys, old)
		return
	}
	r.warnings = append(r.warnings, given+": now called "+prm.Path+"; "+old+" still works here, but rename it")
	r.oldKeys = append(r.oldKeys, old)
}

// removedKey warns about a key the replaced system had and trainsonnet no
// longer takes, and reports whether path is one.
func (pr *Prototype) removedKey(r *resolved, given, path string) bool {
	msg, ok := pr.Removed[path]
	if ok {
		r.warnings = append(r.warnings, given+": not used: "+msg)
		r.oldKeys = append(r.oldKeys, path)
	}
	return ok
}

// applyOldGroup applies a map that the replaced system had under a key
// that is no parameter or group here (the distrib-tensorflow chart's
// clusterConfig), member by member: each is the old path of a parameter,
// a removed key, or another such group. It reports whether written is such
// a group; what else is in it is unknown.
func (pr *Prototype) applyOldGroup(r *resolved, v any, written, given string, add func(*param.Error)) bool {
	prefix := written + "."
	var inside []string // the old keys under written
	for _, k := range append(slices.Collect(maps.Keys(pr.byOldPath)), slices.Collect(maps.Keys(pr.Removed))...) {
		if strings.HasPrefix(k, prefix) {
			inside = append(inside, k)
		}
	}
	if len(inside) == 0 {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok {
		add(&param.Error{Source: given, Value: param.Show(v), Rule: "must be a map of keys such as " + slices.Min(inside)})
		return true
	}
	pr.applyMembers(r, nil, m, written, func(k string) string { return given + "." + k }, add)
	return true
}

// applyChart: when the inputs gave a key of the replaced chart's values
// (Prototype.Chart), what the chart's templates hard-wired is taken where
// no input set it, and what differs on purpose is said.
func (pr *Prototype) applyChart(r *resolved) {
	c := pr.Chart
	if c == nil || !slices.ContainsFunc(r.oldKeys, func(k string) bool {
		return slices.ContainsFunc(c.Keys, func(ck string) bool { return k == ck || strings.HasPrefix(k, ck+".") })
	}) {
		return
	}
	for _, path := range slices.Sorted(maps.Keys(c.Defaults)) {
		prm := pr.Param(path)
		if r.given[prm.Path] != "" {
			continue
		}
		d := c.Defaults[path]
		r.set(prm, d.Value, "")
		r.warnings = append(r.warnings, fmt.Sprintf("%s: %s, as %s had it (%s), since its values are in use; set %s to change it",
			path, shown(d.Value), c.Name, d.Why, path))
	}
	for _, path := range slices.Sorted(maps.Keys(c.Differs)) {
		if r.given[path] == "" {
			r.warnings = append(r.warnings, path+": "+c.Differs[path])
		}
	}
	for _, n := range c.Notes {
		r.warnings = append(r.warnings, c.Name+": "+n)
	}
}

// shown is a value as a user would write it: a scalar as is, anything
// else as JSON.
func shown(v any) string {
	switch v.(type) {
	case string, bool, int64, int:
		return fmt.Sprint(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func (pr *Prototype) unknown(given, key string) *param.Error {
	rule := fmt.Sprintf("unknown parameter %q for %s", key, pr.Name)
	if s := suggest.Closest(key, pr.allKeys()); s != "" {
		rule += fmt.Sprintf(" (did you mean %q?)", s)
	}
	if given == key {
		return &param.Error{Param: key, Source: key, Rule: rule}
	}
	return &param.Error{Param: key, Source: given, Rule: rule}
}

// unknownIn reports an unknown key in a params file or a group value, and
// suggests a declared name, or the declared name an alias stands for.
func (pr *Prototype) unknownIn(given string, group *param.Param, written, key string) *param.Error {
	if group == nil && written != "" { // in a group of the replaced system's keys
		return &param.Error{Source: given, Rule: fmt.Sprintf("unknown parameter %q for %s", written+"."+key, pr.Name)}
	}
	scope := pr.Params
	where := pr.Name
	if group != nil {
		scope = group.Params
		where = group.Path
	}
	rule := fmt.Sprintf("unknown parameter %q for %s", key, where)
	if p := pr.byKey[key]; p != nil && group == nil {
		rule += fmt.Sprintf(" (params files use the declared names: write %q)", p.Path)
	} else if p := pr.byOldPath[key]; p != nil {
		rule += fmt.Sprintf(" (did you mean %q?)", p.Path)
	} else {
		names := make([]string, len(scope))
		for i, p := range scope {
			names[i] = p.Name
		}
		if s := suggest.Closest(key, names); s != "" {
			rule += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return &param.Error{Param: key, Source: given, Rule: rule}
}

func (pr *Prototype) allKeys() []string { return slices.Sorted(maps.Keys(pr.byKey)) }

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

// A TrainJob (the Kubeflow Trainer v2's) says what runs only with the
// runtime it names: the Trainer's stock ones are known, and a runtime of
// the cluster's own is given as a file before it (-f runtime.yaml -f
// trainjob.yaml). The prototype's from function reads the TrainJob with
// its runtime under the key runtime; the runtime's framework names the
// prototype that runs it (kubeflow.Prototype), which must be this one.

// applyRuntime keeps a runtime given as a file for the TrainJobs after it.
func (pr *Prototype) applyRuntime(r *resolved, it input, m map[string]any, kind string, add func(*param.Error)) {
	norm, problems, _ := kubeflow.Check(kind, m)
	for _, p := range problems {
		pe := &param.Error{Source: it.given, Value: p.Value, Rule: p.Rule}
		if p.Path != "" {
			pe.Source += ": " + p.Path
		}
		add(pe)
	}
	if len(problems) > 0 {
		return
	}
	md, _ := norm["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if r.runtimes == nil {
		r.runtimes = map[string]map[string]any{}
	}
	r.runtimes[kubeflow.RuntimeKey(kind[strings.LastIndex(kind, "/")+1:], name)] = norm
}

// trainJobRuntime puts the runtime of a checked TrainJob under its key
// runtime, or says why it cannot: a runtime it does not know, or one
// another prototype runs.
func (pr *Prototype) trainJobRuntime(r *resolved, it input, norm map[string]any, add func(*param.Error)) bool {
	rt, p := kubeflow.Runtime(norm, r.runtimes)
	if p != nil {
		add(&param.Error{Source: it.given + ": " + p.Path, Value: p.Value, Rule: p.Rule})
		return false
	}
	proto, why, entrypoint := kubeflow.JobPrototype(rt, norm)
	md, _ := rt["metadata"].(map[string]any)
	shown := param.Show(md["name"])
	switch {
	case proto == "":
		add(&param.Error{Source: it.given + ": spec.runtimeRef.name", Value: shown, Rule: "no prototype runs this runtime: " + why})
		return false
	case proto != pr.Name && entrypoint:
		rule := "the image's ENTRYPOINT runs in the launcher of the DeepSpeed runtime " + shown + " under Open MPI's settings, as the Trainer runs it, which " + proto + " renders"
		if pr.Name == "deepspeed" {
			rule += " (deepspeed runs DeepSpeed's own runner over a command)"
		}
		add(&param.Error{Source: it.given + ": spec.trainer.command", Value: "none", Rule: rule + ": trainsonnet gen " + proto + " -f " + it.given})
		return false
	case proto != pr.Name:
		add(&param.Error{Source: it.given + ": spec.runtimeRef.name", Value: shown,
			Rule: "is a runtime of " + proto + ", not " + pr.Name + ": trainsonnet gen " + proto + " -f " + it.given})
		return false
	}
	norm["runtime"] = rt
	return true
}

// migration is what a prototype's from function returns for one object.
type migration struct {
	Params   map[string]any `json:"params"`
	Warnings []string       `json:"warnings"`
	// Errors: what the object holds that cannot be taken (Field, its
	// path in the object) or a parameter it does not give (Param, or
	// several as "a|b": the problem stands unless another input sets it).
	Errors []migrationError `json:"errors"`
	// Fields: the object's field each parameter came from, by the
	// parameter's top-level key, so that a problem names what the user
	// wrote.
	Fields map[string]string `json:"fields"`
}

type migrationError struct {
	Field string `json:"field"`
	Param string `json:"param"`
	Rule  string `json:"rule"`
}

// migrate derives parameters from obj, an object of a kind the
// prototype takes (its from function, evaluated on a VM of g).
type migrateFunc func(kind string, obj map[string]any) (*migration, error)

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
	if kubeflow.RuntimeKind(kind) && slices.Contains(pr.From, kubeflow.TrainJobKind) {
		pr.applyRuntime(r, it, m, kind, add)
		return
	}
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
	// its shape and its operator's rules, before any Jsonnet reads it
	// (the keys above are said already)
	top := make(map[string]any, 5)
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
		if v, ok := m[k]; ok {
			top[k] = v
		}
	}
	norm, problems, warnings := kubeflow.Check(kind, top)
	for _, w := range warnings {
		r.warnings = append(r.warnings, it.given+": "+w)
	}
	for _, p := range problems {
		pe := &param.Error{Source: it.given, Value: p.Value, Rule: p.Rule}
		if p.Path != "" {
			pe.Source += ": " + p.Path
		}
		add(pe)
	}
	if len(problems) > 0 {
		return
	}
	if kind == kubeflow.TrainJobKind && !pr.trainJobRuntime(r, it, norm, add) {
		return
	}
	mg, err := r.migrate(kind, norm)
	if err != nil && !strings.Contains(err.Error(), "RUNTIME ERROR: ") {
		r.err = err // a bound passed, a cancelled context
		return
	}
	if err != nil {
		// a from function that fails on an object the checks passed is
		// trainsonnet's fault; still one line, naming the file
		add(&param.Error{Source: it.given, Value: param.Show(shown),
			Rule: "trainsonnet could not translate it (please report this, with the file): " + firstLine(err.Error())})
		return
	}
	if md, _ := norm["metadata"].(map[string]any); md["name"] == nil {
		// the API server refuses an object without a name; the jobs here
		// are named after it
		r.needs = append(r.needs, need{prm: "name", err: &param.Error{Source: it.given + ": metadata.name",
			Rule: "required: a " + short + " has a name, which names its jobs here: give it, or set name"}})
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
	pr.applyMembers(r, nil, mg.Params, "", func(k string) string {
		if f := mg.Fields[k]; f != "" {
			return it.given + ": " + f + " → " + k
		}
		return it.given + " (" + short + " → " + k + ")"
	}, add)
}

// firstLine is the first line of a message that has several, with the
// Jsonnet's "RUNTIME ERROR: " cut.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return strings.TrimPrefix(l, "RUNTIME ERROR: ")
		}
	}
	return s
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
