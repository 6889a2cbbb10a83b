package generator

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
// order, asks here what each key means.

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
