package generator

import (
	"encoding/json"
	"fmt"

	"github.com/trainsonnet/trainsonnet/generator/internal/check"
	"github.com/trainsonnet/trainsonnet/generator/internal/yamlenc"
)

// Object is one rendered Kubernetes object.
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// tree is the object as the prototype made it, decoded (maps, lists,
	// strings, numbers as int64 or float64), with the text of each large
	// string in place of its reference: what every output encodes.
	tree any
	// custom marks a kind of an API group trainsonnet has no types for
	// (a custom resource): passed through with its metadata checked.
	custom bool
	// yaml11 says that tree holds strings YAML 1.1 readers would misread
	// (generator/internal/yamlenc).
	yaml11 bool
	// raw is tree as JSON, from its check, when no reference was replaced
	// after it (nil otherwise): JSON need not encode the object again.
	raw []byte
}

// JSON returns the object as compact JSON with sorted keys.
func (o *Object) JSON() []byte {
	if o == nil {
		return nil
	}
	if o.raw != nil {
		return o.raw
	}
	out, err := json.Marshal(o.tree)
	if err != nil { // maps, lists, strings and finite numbers always encode
		panic(fmt.Sprintf("encoding %s: %v", o.ID(), err))
	}
	return out
}

// yaml encodes the object as one YAML document.
func (o *Object) yaml() ([]byte, error) { return yamlenc.Document(o.tree, o.yaml11) }

// ID is "Kind/name", or "Kind namespace/name" when the object is namespaced.
func (o *Object) ID() string {
	if o == nil {
		return ""
	}
	return (&check.Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}).ID()
}

// objectOf is the public Object of a checked one.
func objectOf(c *check.Object) *Object {
	return &Object{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name,
		tree: c.Tree, custom: c.Custom, yaml11: c.YAML11, raw: c.Raw}
}
