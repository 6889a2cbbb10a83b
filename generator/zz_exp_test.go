package generator

import (
	"context"
	"os"
	"testing"
)

func expGen(b *testing.B) *Generator {
	var paths []string
	if p := os.Getenv("TS_EXP_PATH"); p != "" {
		paths = []string{p}
	}
	g, _ := New(Options{PrototypePaths: paths})
	return g
}

func BenchmarkExpRender(b *testing.B) {
	g := expGen(b)
	params := NewParams("openmpi").Set("workers", 4).Set("ssh.secret", "x")
	for b.Loop() {
		res, err := g.Render(context.Background(), params)
		if err != nil {
			b.Fatal(err)
		}
		res.YAML()
	}
}

func BenchmarkExpEval(b *testing.B) {
	g := expGen(b)
	pr, err := g.Lookup("openmpi")
	if err != nil {
		b.Fatal(err)
	}
	r, _ := pr.resolve(NewParams("openmpi").Set("workers", 4).Set("ssh.secret", "x"))
	node, _ := paramsNode(r.values)
	for b.Loop() {
		if _, _, err := g.evaluate(pr.Source, node, "full"); err != nil {
			b.Fatal(err)
		}
	}
}


