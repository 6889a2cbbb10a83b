package param

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// The rules of a container's ResourceRequirements, for every object
// parameter that holds one (a core/v1.ResourceRequirements, or the
// resources of a core/v1.Container), whichever prototype declares it: the
// same rules as the typed cpu, memory and gpu parameters, and the API
// server's (ValidateContainerResourceRequirements), checked on the value as
// written so that a problem names the field and the user's own text.
//
//   - every quantity parses and is not negative;
//   - resource names are container resources (cpu, memory,
//     ephemeral-storage, hugepages-<size>, domain/name);
//   - extended resources (GPUs) are whole numbers, memory and storage whole
//     bytes, huge pages whole pages;
//   - a request is at most its limit; extended resources and huge pages
//     are not overcommitted: a request needs a limit, and the two are equal;
//   - huge pages need a cpu or memory request or limit;
//   - no claims: they name the pod's resourceClaims, which no prototype sets.
//
// Once valid, a quantity of an extended resource written as a string with a
// suffix or an exponent ("2000m", "1e1", "1Ki") is passed on as its digits
// ("2", "10", "1024"), so that a prototype can count GPUs without parsing
// quantities (roles.gpus), and a field written as null is left out.

// checkResourcesValue applies the rules above to every ResourceRequirements
// in an object parameter's value of kind, before its typed decode. It
// returns the value with GPU quantities in digits (the caller's own maps
// untouched), or the rules broken, in one line.
func checkResourcesValue(kind string, v any) (any, string) {
	switch kind {
	case "core/v1.ResourceRequirements":
		m, ok := v.(map[string]any)
		if !ok {
			return v, "" // the typed decode names what it is
		}
		out, problems := checkResources(m, "")
		if len(problems) > 0 {
			return nil, strings.Join(problems, "; ")
		}
		if out != nil {
			return out, ""
		}
	case "core/v1.Container":
		items, list := v.([]any)
		if !list {
			items = []any{v}
		}
		var problems []string
		fixed := slices.Clone(items)
		changed := false
		for i, item := range items {
			c, ok := item.(map[string]any)
			if !ok {
				continue
			}
			r, ok := c["resources"].(map[string]any)
			if !ok {
				continue
			}
			prefix := "resources."
			if list {
				name, _ := c["name"].(string)
				prefix = fmt.Sprintf("container %q: resources.", name)
			}
			out, probs := checkResources(r, prefix)
			problems = append(problems, probs...)
			if out != nil {
				c2 := maps.Clone(c)
				c2["resources"] = out
				fixed[i], changed = c2, true
			}
		}
		switch {
		case len(problems) > 0:
			return nil, strings.Join(problems, "; ")
		case !changed:
		case list:
			return fixed, ""
		default:
			return fixed[0], ""
		}
	}
	return v, ""
}

// checkResources checks one ResourceRequirements as written; out is its
// normalized copy when a quantity was rewritten (nil when none was).
func checkResources(rr map[string]any, prefix string) (out map[string]any, problems []string) {
	quantities := map[string]map[string]resource.Quantity{}
	rewritten := map[string]map[string]any{}
	for _, field := range []string{"limits", "requests"} {
		m, ok := rr[field].(map[string]any)
		if !ok {
			continue // absent, or not a map: the typed decode names it
		}
		quantities[field] = map[string]resource.Quantity{}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			where := prefix + field + "." + name
			if rule := format.Get("resourceName").Check(name); rule != "" {
				problems = append(problems, fmt.Sprintf("%s %q: %s", prefix+field, name, rule))
				continue
			}
			text, q, rule := quantityOf(m[name])
			switch {
			case rule != "":
			case q.Sign() < 0:
				rule = "must not be negative"
			default:
				// the one magnitude rule of every quantity (format/quantity.go)
				s, _ := quantityText(m[name])
				if rule = format.QuantityTooLarge(s); rule == "" {
					rule = format.CheckResourceValue(name, q)
				}
			}
			if rule != "" {
				problems = append(problems, where+" "+text+": "+rule)
				continue
			}
			quantities[field][name] = q
			if digits, ok := gpuDigits(name, m[name], q); ok {
				if rewritten[field] == nil {
					rewritten[field] = maps.Clone(m)
				}
				rewritten[field][name] = digits
			}
		}
	}
	limits, requests := quantities["limits"], quantities["requests"]
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		req := requests[name]
		lim, hasLimit := limits[name]
		noOvercommit := !overcommitAllowed(name)
		where := prefix + "requests." + name + " " + req.String()
		switch {
		case noOvercommit && !hasLimit:
			problems = append(problems, where+": needs an equal limit ("+prefix+"limits."+name+"): Kubernetes does not overcommit "+overcommitWhat(name))
		case noOvercommit && req.Cmp(lim) != 0:
			problems = append(problems, where+": must equal "+prefix+"limits."+name+" ("+lim.String()+"): Kubernetes does not overcommit "+overcommitWhat(name))
		case hasLimit && req.Cmp(lim) > 0:
			problems = append(problems, where+": must be at most "+prefix+"limits."+name+" ("+lim.String()+")")
		}
	}
	hugePages, cpuOrMemory := false, false
	for _, m := range quantities {
		for name := range m {
			hugePages = hugePages || strings.HasPrefix(name, "hugepages-")
			cpuOrMemory = cpuOrMemory || name == "cpu" || name == "memory"
		}
	}
	if hugePages && !cpuOrMemory {
		problems = append(problems, prefix+"limits: hugepages need a cpu or memory limit or request too")
	}
	if claims, ok := rr["claims"].([]any); ok && len(claims) > 0 {
		problems = append(problems, prefix+"claims: not supported: claims name the pod's resourceClaims, which trainsonnet does not set (leave claims out)")
	}
	nulls := false
	for _, v := range rr {
		nulls = nulls || v == nil
	}
	if len(problems) > 0 || len(rewritten) == 0 && !nulls {
		return nil, problems
	}
	out = maps.Clone(rr)
	for field, m := range rewritten {
		out[field] = m
	}
	// A field written as null ("limits:" with nothing after it) is
	// absent to the API server; so it is to the prototype.
	maps.DeleteFunc(out, func(_ string, v any) bool { return v == nil })
	return out, nil
}

// quantityOf parses one quantity as written in a params file (a string or
// a number); text is how it shows in a problem.
func quantityOf(v any) (text string, q resource.Quantity, rule string) {
	s, ok := quantityText(v)
	if !ok {
		b, _ := json.Marshal(v)
		return string(b), q, "must be a Kubernetes quantity such as 500m, 2 or 4Gi"
	}
	text = s
	if x, isText := v.(string); isText {
		text = fmt.Sprintf("%q", x)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return text, q, "must be a Kubernetes quantity such as 500m, 2 or 4Gi"
	}
	return text, q, ""
}

// overcommitAllowed is the API server's IsOvercommitAllowed: native
// resources (no domain, or kubernetes.io) but huge pages.
func overcommitAllowed(name string) bool {
	native := !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
	return native && !strings.HasPrefix(name, "hugepages-")
}

func overcommitWhat(name string) string {
	if strings.HasPrefix(name, "hugepages-") {
		return "huge pages"
	}
	return "extended resources such as GPUs"
}

// gpuDigits returns the digits of a whole quantity of an extended resource
// written as text other than digits ("2000m", "1e1", "1Ki").
func gpuDigits(name string, raw any, q resource.Quantity) (string, bool) {
	if overcommitAllowed(name) || strings.HasPrefix(name, "hugepages-") {
		return "", false
	}
	s, ok := raw.(string)
	if !ok || s != "" && strings.Trim(s, "0123456789") == "" {
		return "", false // a number, or digits already
	}
	d := q.AsDec()
	n := new(big.Int).Set(d.UnscaledBig())
	if scale := int64(d.Scale()); scale > 0 {
		n.Quo(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(scale), nil))
	} else if scale < 0 {
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(-scale), nil))
	}
	return n.String(), true
}
