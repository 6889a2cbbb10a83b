package generator

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/trainsonnet/trainsonnet/generator/internal/kubeflow"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Job is one job of a batch: a name for messages and outputs (its file's,
// usually) and its parameters.
type Job struct {
	Name   string
	Params *Params
}

// jobParams reads one job of a batch from its params file: the file's
// prototype key names the prototype, and the rest are its parameters, as
// in `gen <prototype> -f file`.
func jobParams(file string, data []byte) (*Params, error) {
	v, problems := param.ReadFile(file, data)
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	m, _ := v.(map[string]any)
	name, ok := m[PrototypeKey].(string)
	if !ok || name == "" {
		rule := "names no prototype: add a top-level key " + PrototypeKey + ": <name> (see trainsonnet list)"
		if v != nil && m == nil {
			rule = "must be a map of parameter names to values, with " + PrototypeKey + ": <name>"
		}
		return nil, &ValidationError{Problems: []*param.Error{{Source: file, Rule: rule}}}
	}
	return NewParams(name).AddFile(file, data), nil
}

// JobParams reads one job of a batch from its params file: the file's
// prototype key names the prototype, and the rest are its parameters, as
// in `gen <prototype> -f file`. A file without a prototype key that is a
// whole object of a system a prototype of g replaces (a PyTorchJob, an
// MPIJob, a TFJob) is the job of the prototype that takes its kind
// (Prototype.From), so that a directory of an operator's jobs is a batch
// as it is.
//
// A TrainJob is the job of the prototype its runtime's framework names
// (torch-distributed: pytorch), its runtime one of the Trainer's stock
// ones or one of runtimes: the files of the batch that are runtimes
// (RuntimeFile), given to each job before its own file.
func (g *Generator) JobParams(file string, data []byte, runtimes ...File) (*Params, error) {
	p, err := jobParams(file, data)
	if err == nil {
		return withRuntimes(p, runtimes, file, data), nil
	}
	v, _ := param.ReadFile(file, data)
	m, _ := v.(map[string]any)
	kind, isObject := objectKind(m)
	if !isObject || m[PrototypeKey] != nil {
		return nil, err
	}
	if kind == kubeflow.TrainJobKind {
		return trainJobParams(file, m, data, runtimes)
	}
	byKind := map[string][]string{} // a kind's short name -> the prototypes that take it
	for _, name := range g.Names() {
		pr, lerr := g.Lookup(name)
		if lerr != nil {
			return nil, lerr
		}
		if slices.Contains(pr.From, kind) {
			return NewParams(name).AddFile(file, data), nil
		}
		for _, k := range pr.From {
			short := k[strings.LastIndex(k, "/")+1:]
			byKind[short] = append(byKind[short], name)
		}
	}
	var takes []string
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		by := strings.Join(byKind[k], ", ")
		if k == "TrainJob" {
			by += ": by its runtime"
		}
		takes = append(takes, k+" ("+by+")")
	}
	return nil, &ValidationError{Problems: []*param.Error{{Source: file, Value: param.Show(strings.TrimPrefix(kind, "/")),
		Rule: "no prototype takes this kind of object (they take " + strings.Join(takes, ", ") + "); a params file names its prototype with " + PrototypeKey + ": <name>"}}}
}

// RuntimeFile reports whether a batch's file is a Kubeflow Trainer
// runtime (a ClusterTrainingRuntime or TrainingRuntime), which is no job
// but the runtime of the batch's TrainJobs that name it (JobParams).
func RuntimeFile(file string, data []byte) bool {
	v, problems := param.ReadFile(file, data)
	m, _ := v.(map[string]any)
	kind, _ := objectKind(m)
	return len(problems) == 0 && kubeflow.RuntimeKind(kind)
}

// withRuntimes is p with the runtimes first, when the job's file is a
// TrainJob; else p.
func withRuntimes(p *Params, runtimes []File, file string, data []byte) *Params {
	if len(runtimes) == 0 {
		return p
	}
	v, _ := param.ReadFile(file, data)
	m, _ := v.(map[string]any)
	if kind, _ := objectKind(m); kind != kubeflow.TrainJobKind {
		return p
	}
	q := NewParams(p.prototype)
	for _, rt := range runtimes {
		q.AddFile(rt.Name, rt.Data)
	}
	q.inputs = append(q.inputs, p.inputs...)
	return q
}

// trainJobParams: a TrainJob's job, of the prototype its runtime names.
func trainJobParams(file string, m map[string]any, data []byte, runtimes []File) (*Params, error) {
	given := map[string]map[string]any{}
	for _, rt := range runtimes {
		v, _ := param.ReadFile(rt.Name, rt.Data)
		rm, _ := v.(map[string]any)
		kind, _ := objectKind(rm)
		norm, problems, _ := kubeflow.Check(kind, rm)
		if len(problems) > 0 {
			continue // said when the job applies it
		}
		md, _ := norm["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		given[kubeflow.RuntimeKey(kind[strings.LastIndex(kind, "/")+1:], name)] = norm
	}
	norm, problems, _ := kubeflow.Check(kubeflow.TrainJobKind, m)
	if len(problems) > 0 {
		p := problems[0]
		return nil, &ValidationError{Problems: []*param.Error{{Source: file + ": " + p.Path, Value: p.Value, Rule: p.Rule}}}
	}
	rt, p := kubeflow.Runtime(norm, given)
	if p != nil {
		return nil, &ValidationError{Problems: []*param.Error{{Source: file + ": " + p.Path, Value: p.Value, Rule: p.Rule}}}
	}
	proto, why, _ := kubeflow.JobPrototype(rt, norm)
	if proto == "" {
		md, _ := rt["metadata"].(map[string]any)
		return nil, &ValidationError{Problems: []*param.Error{{Source: file + ": spec.runtimeRef.name", Value: param.Show(md["name"]), Rule: "no prototype runs this runtime: " + why}}}
	}
	params := NewParams(proto)
	for _, r := range runtimes {
		params.AddFile(r.Name, r.Data)
	}
	return params.AddFile(file, data), nil
}

// BatchError lists the jobs of a batch that failed, in their order.
type BatchError struct {
	Failed []JobError
}

// JobError is why one job of a batch failed.
type JobError struct {
	Job string
	Err error
}

// Error has one line per problem, each starting with its job's name
// unless it already does (a problem in a job's params file names it).
func (e *BatchError) Error() string {
	if e == nil {
		return "batch failed"
	}
	var b strings.Builder
	for _, j := range e.Failed {
		for _, line := range strings.Split(strings.TrimRight(j.Err.Error(), "\n"), "\n") {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			if !strings.HasPrefix(line, j.Job+":") {
				b.WriteString(j.Job + ": ")
			}
			b.WriteString(line)
		}
	}
	return b.String()
}

// Unwrap gives every job's error, so that IsValidation sees through a
// batch.
func (e *BatchError) Unwrap() []error {
	if e == nil {
		return nil
	}
	errs := make([]error, len(e.Failed))
	for i, j := range e.Failed {
		errs[i] = j.Err
	}
	return errs
}

// RenderAll renders the jobs of a batch, as many at once as there are
// CPUs, and returns their results in the jobs' order (RenderEach). When
// any job fails, the error is a *BatchError that lists every failure, and
// there are no results. A caller that only encodes the results should use
// RenderEach: RenderAll holds every job's objects at once.
func (g *Generator) RenderAll(ctx context.Context, jobs []Job) ([]*Result, error) {
	results := make([]*Result, len(jobs))
	err := g.RenderEach(ctx, jobs, func(i int, res *Result) error {
		results[i] = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// RenderEach renders the jobs of a batch, as many at once as there are
// CPUs, and calls use(i, result) for each job i that rendered, on the
// goroutine that rendered it, as soon as it has (so in no set order, and
// concurrently): a caller keeps what it needs, such as the encoded
// output, and the objects are dropped as the batch goes. A render is cheap
// once a VM has parsed the prototype and its libraries (the first job of
// each prototype on each VM pays for that), so each worker keeps one VM and
// takes the jobs of as few prototypes as it can (jobQueue); a batch of
// hundreds of jobs costs little more per job than a render. When any job
// fails to render, or use returns an error for it, the error is a
// *BatchError that lists every failure in the jobs' order.
func (g *Generator) RenderEach(ctx context.Context, jobs []Job, use func(i int, res *Result) error) error {
	if err := g.ready(); err != nil {
		return err
	}
	if use == nil {
		return usage("RenderEach needs a function to use each result")
	}
	if ctx == nil {
		return usage("nil context")
	}
	errs := make([]error, len(jobs))
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	q := newJobQueue(jobs, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := g.eval.Session()
			defer g.eval.Release(w)
			for i, ok := q.take(k); ok; i, ok = q.take(k) {
				res, err := g.render(ctx, jobs[i].Params, w)
				if err == nil {
					err = use(i, res)
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	var failed []JobError
	for i, err := range errs {
		if err != nil {
			failed = append(failed, JobError{Job: jobs[i].Name, Err: err})
		}
	}
	if failed != nil {
		return &BatchError{Failed: failed}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	return nil
}

// jobQueue hands out the jobs of a batch so that each worker's VM parses
// few prototypes: the jobs, ordered by prototype, are cut into one run per
// worker; a worker takes its own run from the front and, when it is done,
// takes from the back of the longest run left. Two workers meet once, in
// the middle, instead of each parsing every prototype.
type jobQueue struct {
	mu    sync.Mutex
	order []int    // job indexes, by prototype (stable)
	runs  [][2]int // per worker, [next, end) in order
}

func newJobQueue(jobs []Job, workers int) *jobQueue {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return strings.Compare(jobs[a].Params.Prototype(), jobs[b].Params.Prototype())
	})
	q := &jobQueue{order: order, runs: make([][2]int, workers)}
	for k := range workers {
		q.runs[k] = [2]int{k * len(jobs) / workers, (k + 1) * len(jobs) / workers}
	}
	return q
}

// take returns the next job of worker k, and false when none is left.
func (q *jobQueue) take(k int) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r := &q.runs[k]; r[0] < r[1] {
		r[0]++
		return q.order[r[0]-1], true
	}
	longest := -1
	for j, r := range q.runs {
		if r[1]-r[0] > 0 && (longest < 0 || r[1]-r[0] > q.runs[longest][1]-q.runs[longest][0]) {
			longest = j
		}
	}
	if longest < 0 {
		return 0, false
	}
	q.runs[longest][1]--
	return q.order[q.runs[longest][1]], true
}
