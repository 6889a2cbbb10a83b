// Package yamlenc writes the objects a prototype emitted, decoded into Go
// values, as YAML documents: exactly as go.yaml.in/yaml/v2 writes them,
// with the strings YAML 1.1 readers would misread double-quoted, and long
// texts (a ConfigMap's scripts) written as literal blocks without the
// encoder's per-character cost.
//
//	quoted := yamlenc.Prepare(tree) // once per decoded tree
//	doc, err := yamlenc.Document(tree, quoted)
//
// ByEncoder is the same document by the encoder alone, which the tests
// hold Document to. It knows nothing of prototypes or Kubernetes.
package yamlenc

import yamlv2 "go.yaml.in/yaml/v2"

// ByEncoder is Document(tree, quoted) without its fast path: the encoder
// writes every scalar.
func ByEncoder(tree any, quoted bool) ([]byte, error) {
	y, err := yamlv2.Marshal(tree)
	if err == nil && quoted {
		y, err = unquoteYAML11(y)
	}
	return y, err
}
