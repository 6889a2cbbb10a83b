package generator_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/typed"
)

// A Go program renders openmpi with typed parameters and gets the objects,
// checked against their k8s.io/api types, in their one order.
func Example() {
	g, err := generator.New(generator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	job := typed.OpenMPI{
		Common:       typed.Common{Name: "bench"},
		Workers:      ptr.To(4),
		GPU:          ptr.To(2),
		Memory:       ptr.To(resource.MustParse("64Gi")),
		NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
		Exec:         "mpirun -np 8 python /opt/train.py",
		SSH:          typed.SSH{Secret: "bench-ssh"}, // an existing Secret: no key in the output
	}
	res, err := g.Render(context.Background(), job.Params())
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range res.Objects {
		fmt.Println(o.Kind, o.Name)
	}
	out, err := res.YAML()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "bench-worker-") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// NetworkPolicy bench
	// ConfigMap bench-config
	// Service bench
	// Service bench-launcher
	// Job bench-launcher
	// Job bench-worker
	// bench-worker-0.bench slots=2
	// bench-worker-1.bench slots=2
	// bench-worker-2.bench slots=2
	// bench-worker-3.bench slots=2
}

// Invalid parameters come back as one ValidationError that lists every
// problem, each naming the parameter as it was given, the value and the rule.
func ExampleValidationError() {
	g, err := generator.New(generator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	params := generator.NewParams("openmpi").
		AddFile("params.yaml", []byte("workers: 0\nmemory: lots\n")).
		SetText("ssh.port", "22", "--ssh-port").
		SetText("useHostNetwork", "true", "--use-host-network")
	_, err = g.Render(context.Background(), params)
	var verr *generator.ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// params.yaml: memory: invalid value "lots": must be a Kubernetes quantity such as 500m, 2 or 4Gi
	// params.yaml: workers: invalid value "0": must be an integer from 1 to 5000
}

// Params can also be set by path, from text as a command line would give
// it, and from params files; later sources win.
func ExampleParams() {
	g, err := generator.New(generator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	params := generator.NewParams("openmpi").
		AddFile("team.yaml", []byte("namespace: ml\nworkers: 2\nssh: {secret: team-ssh}\n")).
		SetText("workers", "3", "--workers").
		Set("name", "nightly")
	res, err := g.Render(context.Background(), params)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range res.Objects {
		fmt.Println(o.ID())
	}
	// Output:
	// NetworkPolicy ml/nightly
	// ConfigMap ml/nightly-config
	// Service ml/nightly
	// Service ml/nightly-launcher
	// Job ml/nightly-launcher
	// Job ml/nightly-worker
}
