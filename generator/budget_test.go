package generator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// podScriptBudget is, per built-in prototype, the most lines of scripts
// (the ConfigMap entries *.sh and *.py its pods run) its default render
// may carry. Issue 36 asked for an MPI pod's scripts at or under 1,000
// lines, or the reason it cannot be met. They are 1,435 (runtime.sh 743,
// tcp.py 127, mpi.sh 565), for what the runtime measurably does at 5,000
// workers without RBAC and on images without python3 or bash: the bounded
// sweep and its stall watch, the end port served and read with four
// tools, the DNS watchdog, the stop over ssh where no end port opens,
// signals and exit codes, each with its tests; about a third are comments
// that say why. The reason 1,000 is not met: split per role at its best
// (each pod carrying only the functions its role's command reaches, by the
// call graph of runtime.sh and mpi.sh, measured 2026-11-28), the launcher
// would still carry about 1,100 lines (787 in the functions it reaches with
// their comments, the files' headers and settings, tcp.py), the workers
// about 920; under 1,000 for the launcher means dropping a tested fallback
// or the comments. So this is a ratchet: growth fails here and must be
// argued. Argued so far: 1,435 → 1,432 (the tool probes share one loop),
// then 1,448: each pod's start-up line naming the tools its paths took
// (tier_line; docs/runtime.md), which a person debugging a hung job
// reads first; then 1,454: the shape in which the Job controller ends the
// job (mpi.sh indexed, TS_END_BY=job), whose pods take none of the end's
// paths; then 1,545: the static group (runtime.sh run --group), which
// ends a static torchrun's pods once one of them has gone, so that a pod
// cut off for good costs the job about two minutes instead of the
// training's timeout and torchrun's exit barrier (issue 45). The pytorch
// pods carry runtime.sh alone for it, which they did not before; then
// 1,549: a worker of the shape the Job controller ends watches worker 0
// only to learn that it is cut off, by the script's rule (a watch whose
// grace is 0) instead of a day-long grace in its env; then 1,550: a
// signal that lands between start_child's fork and its pid being known is
// passed on once the pid is (it was lost, and the pod hung for its grace);
// then 1,553: `mpi.sh wait`, the launcher's set-up and wait alone, in the
// init container of a launcher whose image's ENTRYPOINT runs unwrapped
// (an MPIJob or TrainJob of args only, issue 47): three lines, where a
// wrapper around the ENTRYPOINT would have been a path of its own.
var podScriptBudget = map[string]int{
	"openmpi":      1553,
	"horovod":      1553,
	"deepspeed":    1553,
	"horovod-dask": 1553 + 259, // dask.sh: the Dask workers beside sshd
	"pytorch":      844,        // runtime.sh: the static group
	"jax":          844,        // runtime.sh: the group, and SIGTERM handed on
	"xgboost":      844,        // runtime.sh: the group, and SIGTERM handed on
}

// jobSetScriptBudget is the same in the JobSet form (jobset; horovod-dask
// with exec, a batch run, as a JobSet holds no long-lived scheduler),
// where the JobSet controller ends the job: no end port, no watch of the
// lead, no group. The pytorch pods carry no script at all; the MPI pods
// carry the same files, of which the lead's end paths go unused (mpi.sh
// TS_END_BY=job, as in the shape the Job controller ends): the ssh
// set-up, the waits and the cut-off watch are what remains, and they are
// most of the files.
var jobSetScriptBudget = map[string]int{
	"openmpi":      1553,
	"horovod":      1553,
	"deepspeed":    1553,
	"horovod-dask": 1553 + 259,
	"pytorch":      0,
	// the runtime stays around their program in a JobSet (the SIGTERM of
	// a pod the controller stops reaches it), without the group
	"jax":     844,
	"xgboost": 844,
}

func TestPodScriptBudget(t *testing.T) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []struct {
		name   string
		budget map[string]int
		set    func(proto string, p *generator.Params)
	}{
		{"Jobs", podScriptBudget, func(string, *generator.Params) {}},
		{"JobSet", jobSetScriptBudget, func(proto string, p *generator.Params) {
			p.Set("jobset", true)
			if proto == "horovod-dask" {
				p.Set("exec", "python train.py")
			}
		}},
	} {
		for proto, budget := range form.budget {
			params := generator.NewParams(proto)
			form.set(proto, params)
			res, err := g.Render(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			lines, files := 0, []string{}
			for _, o := range res.Objects {
				var cm struct {
					Kind string            `json:"kind"`
					Data map[string]string `json:"data"`
				}
				if err := json.Unmarshal(o.JSON(), &cm); err != nil {
					t.Fatal(err)
				}
				if cm.Kind != "ConfigMap" {
					continue
				}
				for k, v := range cm.Data {
					if strings.HasSuffix(k, ".sh") || strings.HasSuffix(k, ".py") {
						lines += strings.Count(v, "\n")
						files = append(files, k)
					}
				}
			}
			if lines > budget {
				t.Errorf("%s (%s): its pods' scripts (%s) are %d lines, over the budget of %d", proto, form.name, strings.Join(files, ", "), lines, budget)
			}
			t.Logf("%s (%s): %d lines of scripts (budget %d)", proto, form.name, lines, budget)
		}
	}
}
