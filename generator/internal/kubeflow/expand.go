package kubeflow

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// An operator's object was written for the kubelet, which expands $(VAR)
// in a container's command, args and env values from the container's
// environment and turns $$ into $ (a $(VAR) of no variable stays as it
// is). A prototype's from function reads the command as the words the
// process got; expand gives it those words:
//
//   - $(VAR) of an env entry with a value is that value (as the kubelet's
//     expansion had it, an env value sees the entries before it);
//   - $(VAR) of a variable that trainsonnet's pods define with the
//     operator's meaning (a PyTorchJob's RANK, WORLD_SIZE, MASTER_ADDR and
//     MASTER_PORT, a TFJob's TF_CONFIG) becomes a Ref token in command
//     and args, which the from function's shell quoting writes as "${VAR}"
//     (the pods run the command with sh -c);
//   - $$ is $;
//   - any other $(VAR) (an env entry from valueFrom, a variable of the
//     operator's that trainsonnet's pods lack) stays as written, said in a
//     warning.

// RefStart and RefEnd enclose a variable's name that the pod's shell
// expands: Unicode noncharacters, which no user's text holds
// (generator/internal/dollar uses U+FDD0).
const (
	RefStart = "\uFDD1"
	RefEnd   = "\uFDD2"
)

// podEnv: the variables the pods of trainsonnet's prototype for a kind
// define with the meaning the operator gave them.
var podEnv = map[string][]string{
	"kubeflow.org/v1/PyTorchJob": {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"},
	"kubeflow.org/v1/TFJob":      {"TF_CONFIG"},
	// the torch policy's (trainsonnet's pods of a TrainJob run its
	// command as given, with these)
	TrainJobKind: {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"},
}

// expandAll rewrites, in a checked object, every container's command,
// args and env values as the kubelet would have run them; warnings say
// what stayed as written.
func expandAll(kind string, v any, at string, warnings *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e := x[k]
			if k == "trainer" && kind == TrainJobKind && at == "spec" {
				// a TrainJob's trainer is its trainer container's command,
				// args and env
				if cm, ok := e.(map[string]any); ok {
					expandContainer(kind, cm, child(at, k), warnings)
				}
				continue
			}
			if k == "containers" || k == "initContainers" {
				if l, ok := e.([]any); ok {
					for i, c := range l {
						if cm, ok := c.(map[string]any); ok {
							expandContainer(kind, cm, child(at, k)+"["+strconv.Itoa(i)+"]", warnings)
						}
					}
				}
				continue
			}
			expandAll(kind, e, child(at, k), warnings)
		}
	case []any:
		for i, e := range x {
			expandAll(kind, e, at+"["+strconv.Itoa(i)+"]", warnings)
		}
	}
}

func expandContainer(kind string, c map[string]any, at string, warnings *[]string) {
	static := map[string]string{}
	var fromElsewhere []string // env entries without a value: valueFrom
	env, _ := c["env"].([]any)
	for i, e := range env {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		val, has := m["value"].(string)
		if !has {
			fromElsewhere = append(fromElsewhere, name)
			continue
		}
		if strings.Contains(val, "$") {
			var kept []string
			val = expand(val, func(n string) (string, bool) {
				v, ok := static[n]
				if !ok {
					kept = append(kept, n)
				}
				return v, ok
			})
			m["value"] = val
			for _, n := range kept {
				why := whyKept(kind, n, fromElsewhere)
				if later(env[i+1:], n) {
					why = "its env entry comes after this one, and the kubelet expands only the entries before"
				}
				*warnings = append(*warnings, at+".env["+strconv.Itoa(i)+"].value: $("+n+") stays as written: "+why)
			}
		}
		static[name] = val
	}
	for _, field := range []string{"command", "args"} {
		words, _ := c[field].([]any)
		for i, w := range words {
			s, ok := w.(string)
			if !ok || !strings.Contains(s, "$") {
				continue
			}
			var kept []string
			words[i] = expand(s, func(n string) (string, bool) {
				if v, ok := static[n]; ok {
					return v, true
				}
				if slices.Contains(podEnv[kind], n) && !slices.Contains(fromElsewhere, n) {
					return RefStart + n + RefEnd, true
				}
				kept = append(kept, n)
				return "", false
			})
			for _, n := range kept {
				*warnings = append(*warnings, at+"."+field+"["+strconv.Itoa(i)+"]: $("+n+") stays as written: "+whyKept(kind, n, fromElsewhere))
			}
		}
	}
}

// later reports whether env holds an entry named name.
func later(env []any, name string) bool {
	for _, e := range env {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return true
		}
	}
	return false
}

// whyKept says why a $(VAR) was not expanded.
func whyKept(kind, name string, fromElsewhere []string) string {
	switch {
	case slices.Contains(fromElsewhere, name):
		return "its env entry takes its value from elsewhere (valueFrom), which is not carried: the kubelet would have put the value there; write the value, or read the variable in the program"
	case strings.HasPrefix(name, "PET_") && kind == "kubeflow.org/v1/PyTorchJob":
		return "the operator set " + name + " for torchrun; here trainsonnet gives torchrun its options, and the pods have no " + name
	}
	return "the container has no such variable (the kubelet leaves it so)"
}

// expand is the kubelet's expansion of s: $(NAME) by lookup (as written
// when lookup has none), $$ as $, any other $ as it is.
func expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
