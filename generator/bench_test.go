package generator_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// BenchmarkRenderOpenMPI renders openmpi and encodes it as YAML, as `gen`
// does, at 4 and 10,000 workers. Targets on a 2-core machine: at most 2 ms
// at 4 workers and at most 3 µs per extra worker (the hostfile is the only
// part that grows, built in Go).
func BenchmarkRenderOpenMPI(b *testing.B) {
	for _, workers := range []int{4, 10000} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			benchmarkRender(b, generator.NewParams("openmpi").Set("workers", workers).Set("name", "bench"))
		})
	}
}

func benchmarkRender(b *testing.B, params *generator.Params) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		b.Fatal(err)
	}
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
}
