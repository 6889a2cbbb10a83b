package kubeflow

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/trainsonnet/trainsonnet/generator/suggest"
)

// A TrainJob says what runs only with its runtime: a ClusterTrainingRuntime
// (the default kind) or a TrainingRuntime of its namespace, which the
// cluster holds. A render knows the Trainer's stock ones
// (stock_runtimes.json) and those the user gives as files before the
// TrainJob (-f runtime.yaml -f trainjob.yaml, or beside it in a batch).

//go:embed stock_runtimes.json
var stockJSON []byte

var stock = sync.OnceValue(func() map[string]map[string]any {
	var s struct {
		Runtimes []map[string]any `json:"runtimes"`
	}
	if err := json.Unmarshal(stockJSON, &s); err != nil {
		panic("kubeflow: stock_runtimes.json: " + err.Error()) // a build defect, caught by every test
	}
	out := map[string]map[string]any{}
	for _, rt := range s.Runtimes {
		norm, problems, _ := Check(TrainerVersion+"/ClusterTrainingRuntime", rt)
		if len(problems) > 0 {
			panic("kubeflow: stock_runtimes.json: " + problems[0].Path + ": " + problems[0].Rule)
		}
		out[str(norm["metadata"].(map[string]any)["name"])] = norm
	}
	return out
})

// StockRuntimes names the Trainer's stock runtimes a render knows.
func StockRuntimes() []string {
	names := make([]string, 0, len(stock()))
	for n := range stock() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RuntimeKind reports whether kind ("<apiVersion>/<kind>") is a runtime a
// TrainJob may name.
func RuntimeKind(kind string) bool {
	return kind == TrainerVersion+"/ClusterTrainingRuntime" || kind == TrainerVersion+"/TrainingRuntime"
}

// RuntimeKey is how given runtimes are kept: their kind and name.
func RuntimeKey(kind, name string) string { return kind + " " + name }

// Runtime is the runtime tj (a checked TrainJob) names: one of given
// (checked runtimes, by RuntimeKey of their kind, ClusterTrainingRuntime
// or TrainingRuntime, and name) or a stock one; else a problem of
// spec.runtimeRef.
func Runtime(tj map[string]any, given map[string]map[string]any) (map[string]any, *Problem) {
	spec, _ := tj["spec"].(map[string]any)
	ref, _ := spec["runtimeRef"].(map[string]any)
	name, kind := str(ref["name"]), str(ref["kind"])
	if kind == "" {
		kind = "ClusterTrainingRuntime"
	}
	if rt, ok := given[RuntimeKey(kind, name)]; ok {
		return rt, nil
	}
	if rt, ok := stock()[name]; ok && kind == "ClusterTrainingRuntime" {
		return rt, nil
	}
	known := StockRuntimes()
	for k := range given {
		if gk, gn, _ := strings.Cut(k, " "); gk == kind {
			known = append(known, gn)
		}
	}
	rule := "names no " + kind + " trainsonnet knows: it knows the Trainer's own (" + strings.Join(StockRuntimes(), ", ") +
		") and those given as files before the TrainJob (-f runtime.yaml -f trainjob.yaml; in a batch, beside it)"
	if s := suggest.Closest(name, known); s != "" {
		rule += " (did you mean " + s + "?)"
	}
	return nil, &Problem{Path: "spec.runtimeRef.name", Value: name, Rule: rule}
}

// stockPrototypes: the prototype of each stock runtime.
var stockPrototypes = map[string]string{
	"torch-distributed":     "pytorch",
	"deepspeed-distributed": "deepspeed",
	"mlx-distributed":       "openmpi",
	"jax-distributed":       "jax",
	"xgboost-distributed":   "xgboost",
}

// Prototype names the prototype that runs a TrainJob on rt (a checked
// runtime): a stock runtime's own, else by its policy's framework (mpi:
// deepspeed where the runtime says its framework is, else openmpi); or
// "" and why none does.
func Prototype(rt map[string]any) (string, string) {
	md, _ := rt["metadata"].(map[string]any)
	if p, ok := stockPrototypes[str(md["name"])]; ok && rt["kind"] == "ClusterTrainingRuntime" && isStock(rt) {
		return p, ""
	}
	spec, _ := rt["spec"].(map[string]any)
	pol, _ := spec["mlPolicy"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	switch {
	case pol["torch"] != nil:
		return "pytorch", ""
	case pol["mpi"] != nil && labels["trainer.kubeflow.org/framework"] == "deepspeed":
		return "deepspeed", ""
	case pol["mpi"] != nil:
		return "openmpi", ""
	case pol["jax"] != nil:
		return "jax", ""
	case pol["xgboost"] != nil:
		return "xgboost", ""
	case pol["flux"] != nil:
		return "", "its mlPolicy is flux (the Flux framework's own scheduler in the pods), which no prototype runs"
	}
	return "", "its mlPolicy names no framework (torch, mpi, jax or xgboost): the Trainer runs such a runtime's command as it is in each pod, which no prototype does; render the job with the prototype of its framework and its parameters"
}

// JobPrototype names the prototype that runs the TrainJob tj (checked) on
// rt: Prototype's, except that a DeepSpeed runtime whose trainer has no
// command runs the image's ENTRYPOINT in its launcher under Open MPI's
// settings, as the Trainer runs it, which openmpi renders (deepspeed runs
// DeepSpeed's own runner over a script); entrypoint says so.
func JobPrototype(rt, tj map[string]any) (proto, why string, entrypoint bool) {
	proto, why = Prototype(rt)
	if proto == "deepspeed" && !trainerCommand(rt, tj) {
		return "openmpi", "", true
	}
	return proto, why, false
}

// trainerCommand: whether the trainer of tj on rt runs a command: the
// TrainJob's, or the one its runtime gives the trainer's container. The
// trainer's container is found as lib/trainer.libsonnet finds it: in the
// replicated Job of the trainer step (else the one named node), the
// container named node (else the first).
func trainerCommand(rt, tj map[string]any) bool {
	if tr, _ := dig(tj, "spec", "trainer").(map[string]any); tr["command"] != nil {
		return true
	}
	jobs, _ := dig(rt, "spec", "template", "spec", "replicatedJobs").([]any)
	var job any
	for _, j := range jobs {
		if dig(j, "template", "metadata", "labels", "trainer.kubeflow.org/trainjob-ancestor-step") == "trainer" {
			job = j
			break
		}
	}
	for _, j := range jobs {
		if job == nil && dig(j, "name") == "node" {
			job = j
		}
	}
	cs, _ := dig(job, "template", "spec", "template", "spec", "containers").([]any)
	var c any
	for _, x := range cs {
		if dig(x, "name") == "node" {
			c = x
			break
		}
	}
	if c == nil && len(cs) > 0 {
		c = cs[0]
	}
	return dig(c, "command") != nil
}

// dig: the value at path in nested maps, or nil.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// isStock: rt is the stock runtime of its name, not a file of the user's
// with that name.
func isStock(rt map[string]any) bool {
	md, _ := rt["metadata"].(map[string]any)
	s, ok := stock()[str(md["name"])]
	if !ok {
		return false
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(rt)
	return string(a) == string(b)
}

func str(v any) string { s, _ := v.(string); return s }
