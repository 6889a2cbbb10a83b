package generator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// The benchmarks of the MPI prototypes at 4 and 5,000 workers (their most). Targets on
// a 2-core machine: a render (Render: check the parameters, evaluate the
// prototype, strictly decode every object) at most 2 ms at 4 workers and
// at most 3 µs per extra worker. The hostfile is the only part that grows
// with the job, and it is built in Go.
var benchWorkers = []int{4, 5000}

func BenchmarkRenderOpenMPI(b *testing.B) { benchRender(b, "openmpi") }

// BenchmarkRenderHorovod: the chart-shaped prototype, its workers counted
// by worker.number.
func BenchmarkRenderHorovod(b *testing.B) { benchRender(b, "horovod") }

// BenchmarkRenderTensorBoard and BenchmarkRenderEval: one pod each, on
// the shared storage (a claim). Target as above: at most 2 ms.
func BenchmarkRenderTensorBoard(b *testing.B) { benchRender1(b, "tensorboard") }

// BenchmarkRenderTFDistributed: parameter servers and workers at 4 and
// 1,000 workers (its most is 2,000); the host lists are built in Go.
func BenchmarkRenderTFDistributed(b *testing.B) {
	benchSizes(b, "tf-distributed", []int{4, 1000}, false)
}
func BenchmarkRenderEval(b *testing.B) { benchRender1(b, "eval") }

// BenchmarkRenderHorovodSpark: a master, workers and a driver, at 4 and
// 1,000 workers (its most).
func BenchmarkRenderHorovodSpark(b *testing.B) {
	benchSizes(b, "horovod-spark", []int{4, 1000}, false)
}

// BenchmarkRenderHorovodDask: the scheduler pod and the ring, at 4 and
// 5,000 workers (its most), with an ssh key pair generated as by default.
func BenchmarkRenderHorovodDask(b *testing.B) {
	benchSizes(b, "horovod-dask", []int{4, 5000}, false)
}

// BenchmarkRenderPyTorch: one Indexed Job of torchrun pods, at 4 and 1,000
// workers (its most); nothing in it grows with the job but numbers.
func BenchmarkRenderPyTorch(b *testing.B) {
	benchSizes(b, "pytorch", []int{4, 1000}, false)
}

// benchRender1 renders a prototype whose size does not grow.
func benchRender1(b *testing.B, proto string) {
	g, params := job(b, proto, 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Render(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeYAMLOpenMPI is the other half of `trainsonnet gen`:
// encoding a rendered job as a YAML stream.
func BenchmarkEncodeYAMLOpenMPI(b *testing.B) {
	for _, workers := range benchWorkers {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := job(b, "openmpi", workers)
			res, err := g.Render(context.Background(), params)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := res.YAML(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeJSONOpenMPI: the same job as `gen -o json`, a v1 List;
// the objects without references reuse the JSON their check made.
func BenchmarkEncodeJSONOpenMPI(b *testing.B) {
	for _, workers := range benchWorkers {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := job(b, "openmpi", workers)
			res, err := g.Render(context.Background(), params)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := res.JSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The speed tricks of a render each live behind one seam, and each is
// measured here against the render without it (generator.NewWith turns
// it off; TestTricksKeepTheOutput holds the output to be the same).

// BenchmarkRenderRefs: openmpi with references to its scripts and
// hostfile (refs, generator/internal/eval/refs.go), and with their text passed through Jsonnet,
// the hand-over and the strict decode (inline).
func BenchmarkRenderRefs(b *testing.B) {
	benchTrick(b, "refs", "inline", func(on bool) (*generator.Generator, error) {
		return generator.NewWith(generator.Options{}, on, true)
	})
}

// BenchmarkRenderHandOver: openmpi with the value of the render taken as
// Go values (handOver, generator/internal/eval/engine.go), and printed as JSON and parsed
// (printed).
func BenchmarkRenderHandOver(b *testing.B) {
	benchTrick(b, "handOver", "printed", func(on bool) (*generator.Generator, error) {
		return generator.NewWith(generator.Options{}, true, on)
	})
}

// benchTrick renders openmpi at 4 and 5,000 workers with a trick on and
// off.
func benchTrick(b *testing.B, on, off string, newGen func(on bool) (*generator.Generator, error)) {
	for _, workers := range benchWorkers {
		for _, trick := range []bool{true, false} {
			name := map[bool]string{true: on, false: off}[trick]
			b.Run("workers="+strconv.Itoa(workers)+"/"+name, func(b *testing.B) {
				g, err := newGen(trick)
				if err != nil {
					b.Fatal(err)
				}
				params := benchParams(b, g, "openmpi", workers)
				warm(b, g, params)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := g.Render(context.Background(), params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncodeYAMLBlocks: openmpi's YAML stream with the fast path of
// the YAML encoding for long texts (blocks, generator/internal/yamlenc), and by
// the encoder alone (encoder).
func BenchmarkEncodeYAMLBlocks(b *testing.B) {
	for _, workers := range benchWorkers {
		g, params := job(b, "openmpi", workers)
		res, err := g.Render(context.Background(), params)
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range []struct {
			name   string
			encode func() ([]byte, error)
		}{{"blocks", res.YAML}, {"encoder", func() ([]byte, error) { return generator.YAMLByEncoder(res) }}} {
			b.Run("workers="+strconv.Itoa(workers)+"/"+path.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := path.encode(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGenOpenMPI and BenchmarkGenHorovod are what `trainsonnet gen`
// does after start-up: render, then encode as YAML.
func BenchmarkGenOpenMPI(b *testing.B) { benchGen(b, "openmpi") }
func BenchmarkGenHorovod(b *testing.B) { benchGen(b, "horovod") }

func benchRender(b *testing.B, proto string) { benchSizes(b, proto, benchWorkers, false) }
func benchGen(b *testing.B, proto string)    { benchSizes(b, proto, benchWorkers, true) }

// benchSizes renders (and with encode, encodes as YAML) a job of each size.
func benchSizes(b *testing.B, proto string, sizes []int, encode bool) {
	for _, workers := range sizes {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := job(b, proto, workers)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := g.Render(ctx, params)
				if err != nil {
					b.Fatal(err)
				}
				if encode {
					if _, err := res.YAML(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// job returns a generator, warm, and the job every render benchmark of
// proto renders at the given size (benchParams).
func job(b *testing.B, proto string, workers int) (*generator.Generator, *generator.Params) {
	b.Helper()
	g, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	params := benchParams(b, g, proto, workers)
	warm(b, g, params)
	return g, params
}

// benchParams is the job the render benchmarks of proto render: named
// bench, with the given number of workers where it has workers (and with
// a generated ssh key, as by default), a command as a user's job has where
// it takes one (the checks of a command's text are on the render path too:
// a scan of it in Jsonnet once made a render of 2 ms take 40), and its
// checkpoints on a claim where it has the shared storage.
func benchParams(b testing.TB, g *generator.Generator, proto string, workers int) *generator.Params {
	b.Helper()
	params := withWorkers(b, g, generator.NewParams(proto).Set("name", "bench"), workers)
	pr, err := g.Lookup(proto)
	if err != nil {
		b.Fatal(err)
	}
	if pr.Param("exec") != nil {
		params.Set("exec", "mpirun -np 8 python /opt/train.py --epochs 90 --batch-size 256 --data /data/imagenet && echo done")
	}
	if pr.Param("storage.claim.name") != nil {
		params.Set("storage.claim.name", "checkpoints")
	}
	return params
}

// warm renders once, so that the Generator's VM has parsed the prototype
// and its libraries: the benchmarks measure renders after the first
// (BenchmarkColdGen measures the first). A lookup of a built-in parses
// nothing (its declaration is read from generator/internal/eval/declarations/).
func warm(b testing.TB, g *generator.Generator, params *generator.Params) {
	b.Helper()
	if _, err := g.Render(context.Background(), params); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRenderBatch: a batch of 100 jobs of every built-in prototype in
// turn (issue 15: at most 3 ms per job after the first), each with its
// defaults, 4 workers where it has workers, and encoded as YAML, as
// `trainsonnet batch` does. The Generator is warm (the first job of each
// prototype has parsed it), as it is after the first jobs of a run;
// each job is encoded on its worker, as the CLI does (RenderEach); ns/job
// is the figure to hold to the target.
func BenchmarkRenderBatch(b *testing.B) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	names := g.Names()
	jobs := make([]generator.Job, 100)
	for i := range jobs {
		p := withWorkers(b, g, generator.NewParams(names[i%len(names)]).Set("name", "job-"+strconv.Itoa(i)), 4)
		jobs[i] = generator.Job{Name: "job-" + strconv.Itoa(i), Params: p}
	}
	ctx := context.Background()
	if _, err := g.RenderAll(ctx, jobs); err != nil { // warm: every prototype parsed
		b.Fatal(err)
	}
	b.ReportAllocs()
	docs := make([][]byte, len(jobs))
	for b.Loop() {
		err := g.RenderEach(ctx, jobs, func(i int, res *generator.Result) (err error) {
			docs[i], err = res.YAML()
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(jobs)), "ns/job")
}

// BenchmarkColdGen is a `trainsonnet gen` after package init: a fresh
// Generator (nothing parsed), the declaration looked up, one render and
// its YAML, per prototype at 4 workers. The part of a cold process that
// is trainsonnet's own work (issue 15); the rest is the Go runtime and
// package init, which `make bench-cli` measures with the whole process.
func BenchmarkColdGen(b *testing.B) {
	g0, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range g0.Names() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, err := generator.New(generator.Options{})
				if err != nil {
					b.Fatal(err)
				}
				p := withWorkers(b, g, generator.NewParams(name), 4)
				res, err := g.Render(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := res.YAML(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// withWorkers sets the number of workers of a job to n, by whichever
// parameter its prototype counts them with, if it has workers.
func withWorkers(b testing.TB, g *generator.Generator, params *generator.Params, n int) *generator.Params {
	b.Helper()
	pr, err := g.Lookup(params.Prototype())
	if err != nil {
		b.Fatal(err)
	}
	for _, count := range []string{"workers", "worker.number"} {
		if pr.Param(count) != nil {
			return params.Set(count, n)
		}
	}
	return params
}

// BenchmarkRenderFloor is what a render of each built-in prototype (the
// job of BenchmarkRender* at 4 workers, benchParams) would cost if its Jsonnet did no work but
// hand over its objects: a prototype of one's own (-J) whose render is the
// same objects written out as a literal, through the same Render (typed
// parameters, evaluation, the hand-over, strict decode and checks). Text of more than 512 bytes (the scripts and host lists, which
// a render passes by reference, generator/internal/eval/refs.go) is cut to 40. The difference
// to BenchmarkRender* is the prototype's own Jsonnet work; this is the
// part of a render that no prototype can shed under go-jsonnet.
func BenchmarkRenderFloor(b *testing.B) {
	g0, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range g0.Names() {
		b.Run(name, func(b *testing.B) {
			res, err := g0.Render(context.Background(), benchParams(b, g0, name, 4))
			if err != nil {
				b.Fatal(err)
			}
			items := make([]any, len(res.Objects))
			for i, o := range res.Objects {
				if err := json.Unmarshal(o.JSON(), &items[i]); err != nil {
					b.Fatal(err)
				}
				items[i] = cutLongText(items[i])
			}
			literal, err := json.Marshal(items)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			// The same parameters: the built-in's declaration as evaluated
			// at build time (declarations.go).
			decl, err := os.ReadFile(filepath.Join("declarations", name+".json"))
			if err != nil {
				b.Fatal(err)
			}
			src := "local ts = import 'trainsonnet.libsonnet';\n" +
				"ts.prototype({ name: 'floor', summary: 'Objects as a literal.', params: (" + string(decl) + ").params,\n" +
				"render(p):: " + string(literal) + " })\n"
			if err := os.WriteFile(filepath.Join(dir, "floor.jsonnet"), []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
			if err != nil {
				b.Fatal(err)
			}
			floor := benchParams(b, g, "floor", 4)
			warm(b, g, floor)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Render(context.Background(), floor); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cutLongText replaces every string of more than 512 bytes in v by 40
// bytes of text.
func cutLongText(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = cutLongText(x)
		}
	case []any:
		for i, x := range t {
			t[i] = cutLongText(x)
		}
	case string:
		if len(t) > 512 {
			return strings.Repeat("x", 40)
		}
	}
	return v
}
