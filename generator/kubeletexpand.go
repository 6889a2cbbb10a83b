package generator

import "strings"

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
// other text (resolved.tla, params.go, marks it on the way into Jsonnet). After the render
// the mark becomes $$ in the command, args and env values of every
// container (in every pod template, custom resources' included) and $
// everywhere else. One place, for every prototype, a -J one included.

// dollarMark stands for a $ of the user's text during a render.
const dollarMark = "\uFDD0"

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
