// Package dollar keeps the user's $ apart from a prototype's own through a
// render: MarkIn a value an input set before it goes into Jsonnet (each $
// becomes U+FDD0, so that a prototype's own $(VAR) stays Kubernetes'
// expansion), Escape each rendered object ($$ in containers' command, args
// and env values, where the kubelet expands; $ elsewhere), Unmark any text
// shown to the user. It knows nothing else, and imports only the standard
// library.
package dollar

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
// other text (generator's resolved.tla marks it on the way into Jsonnet). After the render
// the mark becomes $$ in the command, args and env values of every
// container (in every pod template, custom resources' included) and $
// everywhere else. One place, for every prototype, a -J one included.

// Mark stands for a $ of the user's text during a render: what a
// prototype sees of it (ts.contains(p.cmd, '$') is false).
const Mark = "\uFDD0"

// Unmark is text with the marks back to $, for messages and warnings.
func Unmark(s string) string {
	if !strings.Contains(s, Mark) {
		return s
	}
	return strings.ReplaceAll(s, Mark, "$")
}

// Escape turns the marks of a rendered object into $$ where the kubelet
// expands (a container's command, args and env values) and into $
// everywhere else.
func Escape(v any) {
	escapeContainers(v)
	restoreDollars(v)
}

// escapeContainers writes the marks of every container's command, args
// and env values, at any depth, as $$.
func escapeContainers(v any) {
	escape := func(s any) any {
		if t, ok := s.(string); ok && strings.Contains(t, Mark) {
			return strings.ReplaceAll(t, Mark, "$$")
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
				x[k] = Unmark(s)
				continue
			}
			restoreDollars(e)
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				x[i] = Unmark(s)
				continue
			}
			restoreDollars(e)
		}
	}
}

// In reports whether a string of v holds a $ or the mark: the values to
// Mark (and to check with Marked).
func In(v any) bool { return holdsText(v, "$"+Mark) }

// Marked reports whether a string of v holds the mark itself, which a
// user's text must not: it would come out as $.
func Marked(v any) bool { return holdsText(v, Mark) }

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

// MarkIn copies v with every $ of its strings (not of map keys, which are
// names) replaced by Mark.
func MarkIn(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "$", Mark)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = strings.ReplaceAll(e, "$", Mark)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = strings.ReplaceAll(e, "$", Mark)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = MarkIn(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MarkIn(e)
		}
		return out
	}
	return v
}
