package generator_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// The benchmarks of the openmpi prototype at 4 and 10,000 workers. Targets
// on a 2-core machine: a render (Render: check the parameters, evaluate
// the prototype, strictly decode every object) at most 2 ms at 4 workers
// and at most 3 µs per extra worker. The hostfile is the only part that
// grows with the job, and it is built in Go.
func BenchmarkRenderOpenMPI(b *testing.B) {
	for _, workers := range []int{4, 10000} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := openmpi(b, workers)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Render(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeYAMLOpenMPI is the other half of `trainsonnet gen`:
// encoding a rendered job as a YAML stream.
func BenchmarkEncodeYAMLOpenMPI(b *testing.B) {
	for _, workers := range []int{4, 10000} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := openmpi(b, workers)
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

// BenchmarkGenOpenMPI is what `trainsonnet gen openmpi` does after start-up:
// render, then encode as YAML.
func BenchmarkGenOpenMPI(b *testing.B) {
	for _, workers := range []int{4, 10000} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			g, params := openmpi(b, workers)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := g.Render(ctx, params)
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

// openmpi returns a generator and the default parameters of a job of the
// given size (with a generated ssh key, as by default).
func openmpi(b *testing.B, workers int) (*generator.Generator, *generator.Params) {
	b.Helper()
	g, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return g, generator.NewParams("openmpi").Set("name", "bench").Set("workers", workers)
}
