package generator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Prototype describes one prototype: its name, what it is for, and its
// declared parameters. It is read from the prototype's Jsonnet file.
type Prototype struct {
	// Name is the prototype's name, the base name of its file: "openmpi".
	Name string `json:"name"`
	// Summary is one line for list.
	Summary string `json:"summary"`
	// Description is the longer text describe prints.
	Description string `json:"description"`
	// Replaces names the system the prototype replaces, if any.
	Replaces string `json:"replaces,omitempty"`
	// Source is where the prototype was read from: "prototypes/openmpi.jsonnet"
	// for a built-in, the file's path for one found with -J.
	Source string `json:"source"`
	// Builtin is true for the prototypes embedded in trainsonnet.
	Builtin bool `json:"builtin"`
	// Params are the declared parameters, sorted by name; groups nest.
	Params []*param.Param `json:"params"`
	// Removed lists keys of the replaced system's values that trainsonnet
	// no longer takes, each with what to do instead. They are accepted in
	// params files and --set with a warning, and ignored.
	Removed map[string]string `json:"removed,omitempty"`
	// Chart says what a values file of the replaced chart means beyond
	// its keys: the values its templates hard-wired, and what differs on
	// purpose. Nil for a prototype that replaces no chart.
	Chart *Chart `json:"chart,omitempty"`
	// From lists the objects of the replaced system that a params file
	// may be instead of parameters, as "<apiVersion>/<kind>"
	// ("kubeflow.org/v1/PyTorchJob"): a user's whole PyTorchJob, MPIJob
	// or TFJob. The prototype's from function derives the parameters from
	// one, and says what differs (keys.go).
	From []string `json:"from,omitempty"`

	byKey     map[string]*param.Param // path, aliases and old paths -> leaf param
	byOldPath map[string]*param.Param // the replaced system's path -> param or group
	related   []*param.Param          // the parameters with a relation (AtMost, AtLeast, Needs)
	envMaps   []*param.Param          // the maps of environment variables (keys: envName)
	// ownEnv are the variables the job's own machinery reads (a name, or
	// a prefix and *), with why, which no env parameter may set.
	ownEnv map[string]string
}

// spec is the shape of a prototype's declaration as Jsonnet emits it with
// output='spec' (see lib/trainsonnet.libsonnet).
type spec struct {
	Name        string                 `json:"name"`
	Summary     string                 `json:"summary"`
	Description string                 `json:"description"`
	Replaces    string                 `json:"replaces"`
	Params      map[string]*param.Decl `json:"params"`
	Owners      map[string]string      `json:"owners"`
	Removed     map[string]string      `json:"removed"`
	Chart       *Chart                 `json:"chart"`
	OwnEnv      map[string]string      `json:"ownEnv"`
	From        []string               `json:"from"`
}

// Chart is what a prototype declares of the chart it replaces (chart in
// ts.prototype). When an input gives any of Keys (the chart's own spelling
// of a key, a renamed or a removed one, or a group of them), the input is
// that chart's values: each of Defaults that no input sets takes the
// chart's value, and the Differs whose parameter no input sets and the
// Notes are said, each as a warning.
type Chart struct {
	// Name is the chart, as a warning names it: "the eval-tensorflow chart".
	Name string `json:"name"`
	// Keys are dotted keys only the chart's values files have.
	Keys []string `json:"keys"`
	// Defaults are parameters the chart's templates hard-wired, by path.
	Defaults map[string]ChartDefault `json:"defaults,omitempty"`
	// Differs says, by parameter path, how that parameter's default
	// differs from what the chart did, and how to get the chart's.
	Differs map[string]string `json:"differs,omitempty"`
	// Notes are what else differs on purpose.
	Notes []string `json:"notes,omitempty"`
}

// ChartDefault is a value a chart hard-wired, and why.
type ChartDefault struct {
	Value any    `json:"value"`
	Why   string `json:"why"`
}

func parsePrototype(name, source string, builtin bool, specJSON string) (*Prototype, error) {
	var s spec
	dec := json.NewDecoder(strings.NewReader(specJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: reading its declaration: %w", source, err)
	}
	if s.Name != name {
		return nil, fmt.Errorf("%s: declares name %q; a prototype's name must match its file name %q", source, s.Name, name)
	}
	if strings.TrimSpace(s.Summary) == "" {
		return nil, fmt.Errorf("%s: summary is empty", source)
	}
	params, err := param.Build(s.Params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var own func(ps []*param.Param, owner string)
	own = func(ps []*param.Param, owner string) {
		for _, p := range ps {
			p.Owner = cmp.Or(owner, s.Owners[p.Name])
			own(p.Params, p.Owner)
		}
	}
	own(params, "")
	pr := &Prototype{
		Name: name, Summary: strings.TrimSpace(s.Summary), Description: strings.TrimSpace(s.Description),
		Replaces: s.Replaces, Source: source, Builtin: builtin, Params: params, Removed: s.Removed,
		Chart: s.Chart, ownEnv: s.OwnEnv, From: s.From,
		byKey: map[string]*param.Param{}, byOldPath: map[string]*param.Param{},
	}
	if param.Find(params, "name") == nil {
		return nil, fmt.Errorf("%s: every prototype needs a %q parameter (use the common parameters of lib/common.libsonnet)", source, "name")
	}
	var index func([]*param.Param)
	index = func(ps []*param.Param) {
		for _, p := range ps {
			for _, old := range p.OldPaths {
				pr.byOldPath[old] = p
			}
			index(p.Params)
		}
	}
	index(params)
	for _, p := range param.Leaves(params) {
		if p.AtMost != nil || p.AtLeast != nil || p.Needs != nil {
			pr.related = append(pr.related, p)
		}
		if p.Type == param.TypeMap && p.Format == "envName" {
			pr.envMaps = append(pr.envMaps, p)
			p.OwnKeys = slices.Sorted(maps.Keys(s.OwnEnv)) // the schema refuses them too
		}
		for _, k := range append(append([]string{p.Path}, p.Aliases...), p.OldPaths...) {
			if other := pr.byKey[k]; other != nil && other != p {
				return nil, fmt.Errorf("%s: %q would mean both %q and %q", source, k, other.Path, p.Path)
			}
			pr.byKey[k] = p
		}
	}
	if err := pr.checkChart(); err != nil {
		return nil, fmt.Errorf("%s: chart: %w", source, err)
	}
	return pr, nil
}

// checkChart checks the chart declaration against the parameters.
func (pr *Prototype) checkChart() error {
	c := pr.Chart
	if c == nil {
		return nil
	}
	if c.Name == "" || len(c.Keys) == 0 {
		return fmt.Errorf("needs a name and keys")
	}
	for path, d := range c.Defaults {
		prm := pr.Param(path)
		if prm == nil || prm.Type == param.TypeGroup {
			return fmt.Errorf("defaults: %q is no parameter", path)
		}
		nv, rule := prm.Normalize(param.GoValue(d.Value))
		if rule != "" {
			return fmt.Errorf("defaults: %s: %v %s", path, d.Value, rule)
		}
		d.Value = nv
		c.Defaults[path] = d
	}
	for path := range c.Differs {
		if prm := pr.Param(path); prm == nil || prm.Type == param.TypeGroup {
			return fmt.Errorf("differs: %q is no parameter", path)
		}
	}
	return nil
}

// Param returns the parameter with the given dotted path, or nil.
func (pr *Prototype) Param(path string) *param.Param {
	if pr == nil {
		return nil
	}
	return param.Lookup(pr.Params, path)
}

// Defaults returns the default value of every parameter as the tree a
// params file would hold; unset parameters are nil.
func (pr *Prototype) Defaults() map[string]any {
	if pr == nil {
		return nil
	}
	return param.Defaults(pr.Params)
}

// ownEnvWhy says why the variable name is the job's own (ownEnv), or "".
func (pr *Prototype) ownEnvWhy(name string) string {
	if why, ok := pr.ownEnv[name]; ok {
		return why
	}
	for k, why := range pr.ownEnv {
		if prefix, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, prefix) {
			return why
		}
	}
	return ""
}
