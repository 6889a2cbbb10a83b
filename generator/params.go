package generator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/dollar"
	"github.com/trainsonnet/trainsonnet/generator/internal/eval"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// PrototypeKey is the top-level key of a params file that names the
// prototype it is for: required in the files of a batch (JobParams), and
// checked, then ignored, by a render of that prototype.
const PrototypeKey = "prototype"

// Params collects the parameter values for one prototype from any number of
// sources, in order: a later source replaces what an earlier one set for the
// same parameter. Nothing is checked until Render (or Resolve), which
// reports every problem at once.
//
// The CLI adds params files (-f), then --set values, then typed flags; a Go
// program usually fills a typed struct such as OpenMPI and calls its Params
// method.
type Params struct {
	prototype string
	inputs    []input
}

type inputKind int

const (
	inputValue inputKind = iota // a Go or decoded value
	inputText                   // text from a flag or --set, parsed by type
	inputFile                   // a YAML/JSON params file
	inputTexts                  // several texts of one repeated flag
)

type input struct {
	kind  inputKind
	path  string // the key (value, text)
	given string // the caller's label of the input, for messages
	value any
	text  string
	texts []string
	data  []byte
}

// NewParams starts an empty set of parameters for the named prototype.
func NewParams(prototype string) *Params { return &Params{prototype: prototype} }

// Prototype returns the name of the prototype the parameters are for.
// (Every method of Params takes a nil *Params as no parameters: it
// records nothing, and Render refuses nil.)
func (p *Params) Prototype() string {
	if p == nil {
		return ""
	}
	return p.prototype
}

// Set sets a parameter from a Go value: a string, an integer, a bool, a
// resource.Quantity, a time.Duration (whole seconds), map[string]string,
// []string, or a k8s.io/api value for object parameters. path is the
// declared dotted path, such as "ssh.port".
func (p *Params) Set(path string, value any) *Params {
	if p == nil {
		return nil
	}
	p.inputs = append(p.inputs, input{kind: inputValue, path: path, given: path, value: value})
	return p
}

// SetText sets a parameter from text as typed on a command line; the text
// is parsed by the parameter's declared type. key is the declared path
// ("ssh.port"), an alias, or the path the replaced system used; a key
// that starts with a map parameter's path sets one entry of the map
// ("nodeSelector.pool"). source labels the input in problems and
// warnings ("--workers", "--set workers"); "" labels it by key.
func (p *Params) SetText(key, text, source string) *Params {
	if p == nil {
		return nil
	}
	p.inputs = append(p.inputs, input{kind: inputText, path: key, given: or(source, key), text: text})
	return p
}

// SetTexts sets a parameter from a flag given several times, each text
// parsed by the declared type: list items and map entries add up, a
// scalar keeps the last. (A list declared without a separator takes each
// text as one item, so items may hold commas.) key and source are as for
// SetText.
func (p *Params) SetTexts(key string, texts []string, source string) *Params {
	if p == nil {
		return nil
	}
	p.inputs = append(p.inputs, input{kind: inputTexts, path: key, given: or(source, key), texts: texts})
	return p
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// AddFile adds a params file (YAML or JSON, keyed by the declared
// camelCase names, groups as nested maps). name is used in messages.
func (p *Params) AddFile(name string, data []byte) *Params {
	if p == nil {
		return nil
	}
	p.inputs = append(p.inputs, input{kind: inputFile, given: name, data: data})
	return p
}

// resolved is the outcome of applying Params to a prototype's declaration.
type resolved struct {
	values   map[string]any    // full tree, defaults filled in; nil leaves are unset
	given    map[string]string // param path -> how it was last given
	warnings []string          // renamed and removed keys that were used
	oldKeys  []string          // those keys, as written
	// source holds, while one params file or Go value is applied, the
	// key that set each parameter, to refuse a parameter it sets twice
	// under two names (an old one and the declared one).
	source *oneSource
	// migrate derives parameters from an object given as a params file
	// (keys.go); needs are the parameters such an object could not
	// give; err is a prototype's failure in doing so.
	migrate migrateFunc
	needs   []need
	err     error
	// runtimes are the Trainer runtimes given as files, for the
	// TrainJobs given after them (kubeflow.RuntimeKey: kind and name).
	runtimes map[string]map[string]any
}

type oneSource struct {
	name string            // the file, as given
	keys map[string]string // param path -> the key that set it
}

// resolve applies every input in order and checks each value, collecting
// all problems. This file is about the sources and their precedence:
// what a key means is keys.go's, how a value is read generator/param's.
func (pr *Prototype) resolve(in *Params, migrate migrateFunc) (*resolved, []*param.Error) {
	r := &resolved{values: param.Defaults(pr.Params), given: map[string]string{}, migrate: migrate}
	var problems []*param.Error
	add := func(e *param.Error) { problems = append(problems, e) }
	setKeys := map[string]string{} // param path -> the key --set gave it by
	for _, it := range in.inputs {
		switch it.kind {
		case inputFile:
			r.source = &oneSource{name: it.given, keys: map[string]string{}}
			pr.applyFile(r, it, add)
			r.source = nil
		case inputText:
			prm := pr.byKey[it.path] // a declared path, an alias or an old path
			if prm == nil {
				if mp, key := pr.mapEntry(it.path); mp != nil {
					// --set nodeSelector.pool=gpu sets one entry of a map.
					pr.setMapEntry(r, mp, key, it, add)
					continue
				}
				if pr.removedKey(r, it.given, it.path) {
					continue
				}
				add(pr.unknown(it.given, it.path))
				continue
			}
			if prev, ok := setKeys[prm.Path]; ok && prev != it.path && strings.HasPrefix(it.given, "--set ") {
				// --set logDir=a --set logdir=b: which was meant is a guess,
				// as in a file or with two flags.
				add(&param.Error{Param: prm.Path, Source: it.given,
					Rule: fmt.Sprintf("--set %s and --set %s both set %s; give it once, as %s", prev, it.path, prm.Path, prm.Path)})
				continue
			}
			if strings.HasPrefix(it.given, "--set ") {
				setKeys[prm.Path] = it.path
			}
			r.keyUsed(prm, it.path, it.given)
			rd, rule := prm.ReadText(it.text)
			if rule != "" {
				add(&param.Error{Param: prm.Path, Source: it.given, Value: param.Show(it.text), Rule: rule})
				continue
			}
			r.take(prm, rd, it.given)
		case inputTexts:
			prm := pr.byKey[it.path] // a declared path, an alias or an old path
			if prm == nil {
				add(pr.unknown(it.given, it.path))
				continue
			}
			r.keyUsed(prm, it.path, it.given)
			rd, text, rule := prm.ReadTexts(it.texts)
			if rule != "" {
				add(&param.Error{Param: prm.Path, Source: it.given, Value: param.Show(text), Rule: rule})
				continue
			}
			r.take(prm, rd, it.given)
		case inputValue:
			prm := pr.byKey[it.path] // a declared path, an alias or an old path
			if prm == nil {
				add(pr.unknown(it.given, it.path))
				continue
			}
			r.source = &oneSource{name: it.given, keys: map[string]string{}}
			pr.applyValue(r, prm, param.GoValue(it.value), it.given, it.path, add)
			r.source = nil
		}
	}
	for _, n := range r.needs {
		if !n.met(r) {
			add(n.err)
		}
	}
	pr.applyChart(r)
	// The variables the job's own machinery reads: a value of the user's
	// would break it (ownEnv).
	for _, prm := range pr.envMaps {
		m, _ := r.get(prm.Path).(map[string]string)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if why := pr.ownEnvWhy(k); why != "" {
				v := m[k]
				add(&param.Error{Param: prm.Path, Source: r.givenAs(prm), Value: param.Show(k + "=" + v),
					Rule: "variable " + k + " is the job's own: " + why})
			}
		}
	}
	return r, problems
}

// applyValue sets one parameter (or, for a group, its members) from a
// decoded value. written is the key's dotted path as the user wrote it,
// which may be the replaced system's.
func (pr *Prototype) applyValue(r *resolved, prm *param.Param, v any, given, written string, add func(*param.Error)) {
	if v == nil && prm.Type == param.TypeGroup {
		for _, kid := range prm.Params {
			pr.applyValue(r, kid, nil, given+"."+kid.Name, written+"."+kid.Name, add)
		}
		return
	}
	if prm.Type != param.TypeGroup && !r.once(prm, written, add) {
		return
	}
	if v == nil {
		r.set(prm, nil, given) // null means "back to the default"
		return
	}
	if prm.Type == param.TypeGroup {
		m, ok := v.(map[string]any)
		if !ok {
			add(&param.Error{Param: prm.Path, Source: given, Value: param.Show(v),
				Rule: "must be a map of " + prm.Path + "'s parameters"})
			return
		}
		pr.applyMembers(r, prm, m, written, func(k string) string { return given + "." + k }, add)
		return
	}
	rd, rule := prm.Read(v)
	if rule != "" {
		add(&param.Error{Param: prm.Path, Source: given, Value: param.Show(v), Rule: rule})
		return
	}
	r.take(prm, rd, given)
}

func (pr *Prototype) applyFile(r *resolved, it input, add func(*param.Error)) {
	v, problems := param.ReadFile(it.given, it.data)
	for _, e := range problems {
		add(e)
	}
	if v == nil {
		return // an empty file sets nothing
	}
	m, ok := v.(map[string]any)
	if !ok {
		add(&param.Error{Source: it.given, Rule: "must be a map of parameter names to values"})
		return
	}
	if named, ok := m[PrototypeKey]; ok {
		// A job's file of a batch names its prototype (JobParams); the
		// same file works with gen of that prototype.
		if named != pr.Name {
			add(&param.Error{Source: it.given + ": " + PrototypeKey, Value: param.Show(named),
				Rule: "this file is for the prototype it names, not " + pr.Name})
			return // its keys are another prototype's
		}
		m = maps.Clone(m)
		delete(m, PrototypeKey)
	}
	if kind, ok := objectKind(m); ok {
		pr.applyObject(r, it, m, kind, add)
		return
	}
	pr.applyMembers(r, nil, m, "", func(k string) string { return it.given + ": " + k }, add)
}

// applyMembers applies the members of one mapping of a source, each
// key to the parameter or group it names: a params file's top level
// (group nil, written ""), a group's value, or a map that the replaced
// system had under a key that is no group here (group nil, written that
// key). written is the mapping's dotted path as the user wrote it, and
// label gives a member's label in problems and warnings. A key may be a
// member's declared name, the replaced system's name of one (applied,
// with a warning), a key trainsonnet no longer takes (a warning), or a
// group of the replaced system's keys (at the top of a file).
func (pr *Prototype) applyMembers(r *resolved, group *param.Param, m map[string]any, written string, label func(string) string, add func(*param.Error)) {
	var scope []*param.Param
	switch {
	case group != nil:
		scope = group.Params
	case written == "":
		scope = pr.Params
	}
	seen := map[*param.Param]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w, given := dotted(written, k), label(k)
		prm := param.Find(scope, k)
		if prm == nil {
			// The replaced system's name: the Helm chart's master, the
			// charts' storage.sharename for storage.azure.shareName.
			paths := []string{w}
			if group != nil {
				paths = append(paths, group.Path+"."+k)
			}
			if prm = pr.oldPath(paths...); prm == nil {
				if !slices.ContainsFunc(paths, func(p string) bool { return pr.removedKey(r, given, p) }) &&
					(group != nil || !pr.applyOldGroup(r, m[k], w, given, add)) {
					add(pr.unknownIn(given, group, written, k))
				}
				continue
			}
			if r.onceIn(seen, prm, w, add) {
				r.renamedKey(given, w, prm)
				pr.applyValue(r, prm, m[k], given, w, add)
			}
			continue
		}
		if r.onceIn(seen, prm, w, add) {
			pr.applyValue(r, prm, m[k], given, w, add)
		}
	}
}

// dotted appends key to a dotted path.
func dotted(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// onceIn records that key, of one mapping of the source, sets prm (a
// parameter or a group), and reports whether it is the first key of the
// mapping that does; a second one (the old name of a parameter beside its
// declared one, such as the Helm chart's master beside driver) is a
// conflict: which one was meant would be a guess.
func (r *resolved) onceIn(seen map[*param.Param]string, prm *param.Param, key string, add func(*param.Error)) bool {
	if prev, dup := seen[prm]; dup {
		add(r.twice(prm, prev, key))
		return false
	}
	seen[prm] = key
	return true
}

// once records that written (a dotted path as the user wrote it) sets the
// parameter prm in the current source, and reports whether no other path
// of the source did: one source giving a parameter twice, at different
// depths (storage.sharename and storage.azure.shareName), is a conflict.
func (r *resolved) once(prm *param.Param, written string, add func(*param.Error)) bool {
	if r.source == nil {
		return true
	}
	if prev, dup := r.source.keys[prm.Path]; dup && prev != written {
		add(r.twice(prm, prev, written))
		return false
	}
	r.source.keys[prm.Path] = written
	return true
}

func (r *resolved) twice(prm *param.Param, a, b string) *param.Error {
	var old []string
	for _, k := range []string{a, b} {
		if k != prm.Path {
			old = append(old, k)
		}
	}
	why := "one is its old name"
	if len(old) == 1 {
		why = old[0] + " is its old name"
	}
	name := ""
	if r.source != nil {
		name = r.source.name
	}
	return &param.Error{Param: prm.Path, Source: name,
		Rule: fmt.Sprintf("%s and %s both set %s (%s); give it once, as %s", a, b, prm.Path, why, prm.Path)}
}

// setMapEntry adds or replaces one entry of a map parameter's current value.
func (pr *Prototype) setMapEntry(r *resolved, prm *param.Param, key string, it input, add func(*param.Error)) {
	merged := map[string]any{}
	if cur, ok := r.get(prm.Path).(map[string]string); ok {
		for k, v := range cur {
			merged[k] = v
		}
	}
	merged[key] = it.text
	v, rule := prm.Normalize(merged)
	if rule != "" {
		add(&param.Error{Param: prm.Path, Source: it.given, Value: param.Show(it.text), Rule: rule})
		return
	}
	r.set(prm, v, it.given)
}

// take stores what a source gave a parameter (given labels it): a value,
// or the default when the source's spelling means "left out"; a note of
// how it was spelled becomes a warning.
func (r *resolved) take(prm *param.Param, rd param.Reading, given string) {
	if rd.Note != "" {
		r.warnings = append(r.warnings, given+": "+rd.Note)
	}
	r.set(prm, rd.Value, given)
	if rd.Unset {
		delete(r.given, prm.Path) // as if left out: a chart's default applies
	}
}

// set stores a normalized value at the parameter's path.
func (r *resolved) set(prm *param.Param, v any, given string) {
	parts := strings.Split(prm.Path, ".")
	m := r.values
	for _, part := range parts[:len(parts)-1] {
		m = m[part].(map[string]any)
	}
	if v == nil {
		v = prm.Default
	}
	m[parts[len(parts)-1]] = v
	r.given[prm.Path] = given
}

// get returns the value at a dotted path, or nil.
func (r *resolved) get(path string) any {
	var cur any = r.values
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// givenAs returns how the user wrote a parameter, or "" if no input set it.
func (r *resolved) givenAs(prm *param.Param) string { return r.given[prm.Path] }

// tla is the prototype's params argument: the resolved values of every
// parameter as a Jsonnet value of literals (eval.Value). Every $ of a
// value an input set is written as dollar.Mark on the way
// (generator/internal/dollar), so that it travels with the user's text
// through any Jsonnet; dollars reports whether there was any. Text that
// holds the mark itself is refused (problems).
func (r *resolved) tla(pr *Prototype) (args eval.Value, dollars bool, problems []*param.Error, err error) {
	var group func(values map[string]any, ps []*param.Param) (eval.Value, error)
	group = func(values map[string]any, ps []*param.Param) (eval.Value, error) {
		names := make([]string, 0, len(ps))
		bodies := make([]eval.Value, 0, len(ps))
		for _, p := range ps { // sorted by name, as eval.Literal sorts keys
			v := values[p.Name]
			var body eval.Value
			var err error
			switch {
			case p.Type == param.TypeGroup:
				m, _ := v.(map[string]any)
				body, err = group(m, p.Params)
			case r.given[p.Path] != "" && dollar.In(v):
				if dollar.Marked(v) {
					problems = append(problems, &param.Error{Param: p.Path, Source: r.given[p.Path], Value: param.Show(v),
						Rule: "holds U+FDD0, a Unicode noncharacter that trainsonnet keeps for itself"})
					continue
				}
				dollars = true
				body, err = eval.Literal(dollar.MarkIn(v))
			default:
				body, err = eval.Literal(v)
			}
			if err != nil {
				return eval.Value{}, fmt.Errorf("%s: %w", p.Name, err)
			}
			names, bodies = append(names, p.Name), append(bodies, body)
		}
		return eval.Object(names, bodies), nil
	}
	args, err = group(r.values, pr.Params)
	if len(problems) > 0 {
		return eval.Value{}, false, problems, nil
	}
	return args, dollars, nil, err
}
