package generator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/internal/kubeflow"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// JSONSchema returns a JSON Schema (draft 2020-12) of the prototype's params
// file: every declared parameter, its type, bounds, allowed values and
// default; unknown keys are not allowed, as in trainsonnet itself. The keys
// of the replaced system that trainsonnet still takes with a warning
// (renamed or removed) are there too, marked deprecated, so that an editor
// flags them the same way instead of calling them errors.
func (pr *Prototype) JSONSchema() ([]byte, error) {
	if pr == nil {
		return nil, usage("nil Prototype: take one from Lookup")
	}
	root := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://trainsonnet.dev/schemas/" + pr.Name + ".json",
		"title":       "trainsonnet " + pr.Name + " parameters",
		"description": pr.Summary,
	}
	for k, v := range param.GroupSchema(pr.Params) {
		root[k] = v
	}
	addOldKeys(root, pr)
	// A job's file of a batch names its prototype (PrototypeKey); gen
	// takes the same file.
	root["properties"].(map[string]any)[PrototypeKey] = map[string]any{
		"const":       pr.Name,
		"description": "The prototype this file is for: required in the files of trainsonnet batch, checked by gen.",
	}
	if len(pr.From) > 0 {
		// or a whole object of the replaced system (keys.go): its
		// apiVersion and kind; the rest is its operator's schema's
		params := map[string]any{}
		for _, k := range []string{"type", "properties", "additionalProperties", "patternProperties", "required"} {
			if v, ok := root[k]; ok {
				params[k] = v
				delete(root, k)
			}
		}
		alts := []any{params}
		kinds := pr.From
		if slices.Contains(kinds, kubeflow.TrainJobKind) {
			// the runtime a TrainJob after it names (keys.go)
			kinds = append(slices.Clone(kinds), kubeflow.TrainerVersion+"/ClusterTrainingRuntime", kubeflow.TrainerVersion+"/TrainingRuntime")
		}
		for _, kind := range kinds {
			i := strings.LastIndex(kind, "/")
			what := "the parameters are derived from it."
			if kubeflow.RuntimeKind(kind) {
				what = "the runtime of the TrainJobs given after it."
			}
			alts = append(alts, map[string]any{
				"type":        "object",
				"description": "A whole " + kind[i+1:] + " (" + kind[:i] + "): " + what,
				"required":    []string{"apiVersion", "kind"},
				"properties": map[string]any{
					"apiVersion": map[string]any{"const": kind[:i]},
					"kind":       map[string]any{"const": kind[i+1:]},
				},
			})
		}
		root["oneOf"] = alts
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the schema of %s: %w", pr.Name, err)
	}
	return append(b, '\n'), nil
}

// addOldKeys adds a renamed parameter's old key (with the new one's schema)
// and each removed key (any value) where a params file may hold them: at
// the top or in a current group. A key inside an old group (master.image)
// comes with that group's copy.
func addOldKeys(root map[string]any, pr *Prototype) {
	groups := map[string]map[string]any{"": root["properties"].(map[string]any)}
	var all []*param.Param
	var walk func(node map[string]any, ps []*param.Param)
	walk = func(node map[string]any, ps []*param.Param) {
		for _, p := range ps {
			all = append(all, p)
			if p.Type == param.TypeGroup {
				sub := node[p.Name].(map[string]any)["properties"].(map[string]any)
				groups[p.Path] = sub
				walk(sub, p.Params)
			}
		}
	}
	walk(groups[""], pr.Params)
	split := func(key string) (parent, name string) {
		if i := strings.LastIndex(key, "."); i >= 0 {
			return key[:i], key[i+1:]
		}
		return "", key
	}
	// group returns the properties of the group at path, making a
	// deprecated old group (the chart's clusterConfig) where a key of the
	// replaced system sits in a group that is no longer there.
	var group func(path string) map[string]any
	group = func(path string) map[string]any {
		if props, ok := groups[path]; ok {
			return props
		}
		parent, name := split(path)
		up := group(parent)
		if _, copied := up[name]; up == nil || copied {
			return nil // an old group copied whole, keys and all (master)
		}
		props := map[string]any{}
		up[name] = map[string]any{
			"type": "object", "deprecated": true, "properties": props, "additionalProperties": false,
			"description": "Of the replaced system: its keys are read as their descriptions say.",
		}
		groups[path] = props
		return props
	}
	for _, p := range all {
		for _, old := range p.OldPaths {
			parent, name := split(old)
			if props := group(parent); props != nil {
				s := p.Schema()
				s["deprecated"] = true
				s["description"] = "Now called " + p.Path + ". " + s["description"].(string)
				props[name] = s
			}
		}
	}
	for key, why := range pr.Removed {
		parent, name := split(key)
		if props := group(parent); props != nil {
			props[name] = map[string]any{"deprecated": true, "description": "Not used: " + why + "."}
		}
	}
}
