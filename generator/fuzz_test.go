package generator_test

import (
	"context"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
)

// FuzzParams feeds arbitrary params files and --set text to the resolver and
// the prototype: the outcome must be a render or a ValidationError, never a
// panic and never a "prototype bug". `go test` runs the seeds; explore with
// go test ./generator -run '^$' -fuzz FuzzParams -fuzztime 1m.
func FuzzParams(f *testing.F) {
	for _, seed := range []struct{ file, key, value string }{
		{"workers: 2\n", "gpu", "1"},
		{"ssh: null\n", "ssh.port", "2300"},
		{"nodeSelector: {a: 1}\n", "nodeSelector.b", "x"},
		{"volumes: [{name: a, emptyDir: {}}]\nvolumeMounts: [{name: a, mountPath: /a}]\n", "env", "A=1,B"},
		{"s3: {downloadFrom: s3://b/x, downloadTo: /trainsonnet/data/x}\n", "s3.endpoint", "http://m"},
		{"customResources: {hugepages-2Mi: 4Mi}\nmemory: 1Gi\n", "mca", "btl=tcp"},
		{"[1, 2]", "name", "x"},
		{"initTimeout: 1h\nuseHostNetwork: true\n", "ssh.port", "22"},
		{"tolerations: [{key: a, operator: Exists}]\n", "launcher.tolerations", "[{}]"},
	} {
		f.Add(seed.file, seed.key, seed.value)
	}
	g, err := generator.New(generator.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file, key, value string) {
		params := generator.NewParams("openmpi").Set("ssh.secret", "fuzz").
			AddFile("fuzz.yaml", []byte(file)).SetText(key, value, "--set "+key)
		_, err := g.Render(context.Background(), params)
		if err != nil && !generator.IsValidation(err) {
			t.Fatalf("file %q, --set %s=%q: not a validation error: %v", file, key, value, err)
		}
	})
}
