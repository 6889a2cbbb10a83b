package generator

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// CheckOutput holds a YAML stream that trainsonnet printed to what every
// render is held to: each object strictly decoded into its type, and the
// pod check (podcheck.go), as the output reads back.
func CheckOutput(y []byte) error {
	var items []any
	for _, doc := range bytes.Split(y, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("reading the output back: %w", err)
		}
		v, err := param.DecodeJSON(j)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	_, problems, err := checkObjects("output", items, &blobSet{}, false)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", problems[0].String("output"))
	}
	return nil
}
