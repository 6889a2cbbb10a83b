package generator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/check"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Which input a problem of a rendered object comes from. A prototype's own
// objects hold no text of the user's but through parameters, so a problem
// about a value that a parameter set by an input holds (its value, an item
// of its list, an entry of its map, a field of its object) is that input's:
// a mount path that two volumes share is the one a user's volumeMounts or
// --storage-mount-path gave; an image that does not parse is the --image
// given. Failing an equal value, a parameter whose text is part of the
// value (a name that prefixes an object's name) is named. A problem no
// input explains is a bug in the prototype.

// givens lists, for each parameter an input set, the values in it.
type givens []given

type given struct {
	prm    *param.Param
	source string // how the input gave it ("--scratch-dir", "values.yaml: volumes")
	value  any    // the parameter's whole value
	leaves []any  // the strings, numbers and maps in it
}

// givenParams collects the parameters the inputs set, in declared order.
func (r *resolved) givenParams(pr *Prototype) givens {
	var out givens
	for _, prm := range param.Leaves(pr.Params) {
		src := r.given[prm.Path]
		if src == "" {
			continue
		}
		v := r.get(prm.Path)
		if v == nil {
			continue
		}
		g := given{prm: prm, source: src, value: v}
		collectLeaves(v, &g.leaves)
		out = append(out, g)
	}
	return out
}

// collectLeaves gathers the values a problem may be about: strings,
// numbers, the keys and values of a map parameter and the map itself.
// The keys of objects are field names, not values, and are left out.
func collectLeaves(v any, out *[]any) {
	switch x := v.(type) {
	case string, int64, json.Number:
		*out = append(*out, x)
	case map[string]string:
		*out = append(*out, x)
		for k, e := range x {
			*out = append(*out, k, e)
		}
	case []string:
		for _, e := range x {
			*out = append(*out, e)
		}
	case []int64:
		for _, e := range x {
			*out = append(*out, e)
		}
	case map[string]any:
		for _, e := range x {
			collectLeaves(e, out)
		}
	case []any:
		for _, e := range x {
			collectLeaves(e, out)
		}
	}
}

// numberText is the decimal text of a number, or "".
func numberText(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// same reports whether the leaf of a parameter is the rendered value t.
func same(leaf, t any) bool {
	switch x := t.(type) {
	case string:
		s, ok := leaf.(string)
		return ok && s == x
	case map[string]string:
		m, ok := leaf.(map[string]string)
		if !ok || len(m) == 0 {
			return false
		}
		for k, v := range m {
			if tv, has := x[k]; !has || tv != v {
				return false
			}
		}
		return true
	}
	if n := numberText(t); n != "" {
		return numberText(leaf) == n
	}
	return false
}

// explain returns the input a problem comes from, as a problem with that
// parameter, or nil when no input explains it.
func (gs givens) explain(pb check.Problem) *param.Error {
	found := func(g *given, leaf any) *param.Error {
		shown := leaf
		switch g.value.(type) {
		case string, int64, json.Number, map[string]string:
			shown = g.value
		}
		return &param.Error{Param: g.prm.Path, Source: g.source, Value: param.Show(shown), Rule: pb.Rule}
	}
	for _, t := range pb.At {
		for i := range gs {
			for _, leaf := range gs[i].leaves {
				if same(leaf, t) {
					return found(&gs[i], leaf)
				}
			}
		}
	}
	// Part of a rendered text: the longest text of an input in it.
	var best *given
	var bestLeaf string
	for _, t := range pb.At {
		text, ok := t.(string)
		if !ok {
			continue
		}
		for i := range gs {
			for _, leaf := range gs[i].leaves {
				s, ok := leaf.(string)
				if ok && len(s) >= 2 && len(s) > len(bestLeaf) && strings.Contains(text, s) {
					best, bestLeaf = &gs[i], s
				}
			}
		}
	}
	if best != nil {
		return found(best, bestLeaf)
	}
	return nil
}

// explainAll turns the problems of a render into the user's problems, one
// per parameter and value (a mistake shows in every pod it reaches), and
// an error naming the prototype when any is left that no input explains.
func (r *resolved) explainAll(pr *Prototype, problems []check.Problem) ([]*param.Error, error) {
	gs := r.givenParams(pr)
	var out []*param.Error
	var bugs []string
	seen := map[string]bool{}
	for _, pb := range problems {
		e := gs.explain(pb)
		if e == nil {
			bugs = append(bugs, pb.String(pr.Name))
			continue
		}
		key := e.Param + "\x00" + e.Value
		if !seen[key] {
			seen[key] = true
			out = append(out, e)
		}
	}
	if len(bugs) > 0 {
		return out, fmt.Errorf("prototype bug: %s", strings.Join(bugs, "\n"))
	}
	return out, nil
}
