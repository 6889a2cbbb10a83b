package generator

import (
	"maps"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Text a user gives reaches the container byte for byte. The kubelet
// expands $(VAR) in a container's command, args and env values and turns
// $$ into $, so `--exec 'echo $$ > run.$$.pid'` would run as
// `echo $ > run.$.pid`: every $ of the user's text there must be written
// $$. A prototype's own text is not escaped: writing $(VAR) in a
// prototype (its Jsonnet, or a parameter's default) is the one way to ask
// for Kubernetes' expansion (tf-distributed's --task_id=$(TASKID)). Users
// of a prototype reach their variables through the shell instead ($VAR in
// a command run with sh -c).
//
// Which $ is whose survives any Jsonnet: before a render, every $ in the
// values that inputs set is replaced by a mark, U+FDD0 (a Unicode
// noncharacter, kept for a program's internal use), so it travels with
// the user's text wherever the prototype puts it, whole or joined to
// other text. After the render the mark becomes $$ in the command, args
// and env values of every container (in every pod template, custom
// resources' included) and $ everywhere else. One place, for every
// prototype, a -J one included.

// dollarMark stands for a $ of the user's text during a render.
const dollarMark = "\uFDD0"

// markedValues returns the values the prototype gets, with every $ of a
// value an input set replaced by dollarMark, and whether there was any.
// Text that holds the mark itself is refused.
func (r *resolved) markedValues(pr *Prototype) (map[string]any, bool, []*param.Error) {
	var problems []*param.Error
	marked := false
	var group func(values map[string]any, ps []*param.Param) (map[string]any, bool)
	group = func(values map[string]any, ps []*param.Param) (map[string]any, bool) {
		var out map[string]any // a copy, once a member changes
		set := func(k string, v any) {
			if out == nil {
				out = maps.Clone(values)
			}
			out[k] = v
		}
		for _, p := range ps {
			v := values[p.Name]
			switch {
			case p.Type == param.TypeGroup:
				m, _ := v.(map[string]any)
				if g, changed := group(m, p.Params); changed {
					set(p.Name, g)
				}
			case r.given[p.Path] != "" && holdsText(v, "$"+dollarMark):
				if holdsText(v, dollarMark) {
					problems = append(problems, &param.Error{Param: p.Path, Source: r.given[p.Path], Value: param.Show(v),
						Rule: "holds U+FDD0, a Unicode noncharacter that trainsonnet keeps for itself"})
					continue
				}
				set(p.Name, mark(v))
				marked = true
			}
		}
		if out == nil {
			return values, false
		}
		return out, true
	}
	out, _ := group(r.values, pr.Params)
	return out, marked, problems
}

// holdsText reports whether a string in v holds any of the runes of set.
func holdsText(v any, set string) bool {
	switch x := v.(type) {
	case string:
		return strings.ContainsAny(x, set)
	case map[string]string:
		for _, e := range x {
			if strings.ContainsAny(e, set) {
				return true
			}
		}
	case []string:
		for _, e := range x {
			if strings.ContainsAny(e, set) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if holdsText(e, set) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsText(e, set) {
				return true
			}
		}
	}
	return false
}

// mark copies v with every $ of its strings (not of map keys, which are
// names) replaced by dollarMark.
func mark(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "$", dollarMark)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = strings.ReplaceAll(e, "$", dollarMark)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = strings.ReplaceAll(e, "$", dollarMark)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = mark(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mark(e)
		}
		return out
	}
	return v
}

// unmark is text with the marks back to $, for messages and warnings.
func unmark(s string) string {
	if !strings.Contains(s, dollarMark) {
		return s
	}
	return strings.ReplaceAll(s, dollarMark, "$")
}

// unmarkDollars turns the marks of a rendered object into $$ where the
// kubelet expands (a container's command, args and env values) and into
// $ everywhere else.
func unmarkDollars(v any) {
	escapeContainers(v)
	restoreDollars(v)
}

// escapeContainers writes the marks of every container's command, args
// and env values, at any depth, as $$.
func escapeContainers(v any) {
	escape := func(s any) any {
		if t, ok := s.(string); ok && strings.Contains(t, dollarMark) {
			return strings.ReplaceAll(t, dollarMark, "$$")
		}
		return s
	}
	switch x := v.(type) {
	case map[string]any:
		for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
			cs, _ := x[list].([]any)
			for _, c := range cs {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
				for _, k := range []string{"command", "args"} {
					items, _ := cm[k].([]any)
					for i, e := range items {
						items[i] = escape(e)
					}
				}
				env, _ := cm["env"].([]any)
				for _, e := range env {
					if em, ok := e.(map[string]any); ok {
						if val, has := em["value"]; has {
							em["value"] = escape(val)
						}
					}
				}
			}
		}
		for _, e := range x {
			escapeContainers(e)
		}
	case []any:
		for _, e := range x {
			escapeContainers(e)
		}
	}
}

// restoreDollars writes every mark left as $.
func restoreDollars(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok {
				x[k] = unmark(s)
				continue
			}
			restoreDollars(e)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				x[i] = unmark(s)
				continue
			}
			restoreDollars(e)
		}
	}
}
