// Package check holds what a prototype emitted to the API's rules, before
// anything is written.
//
// Objects decodes each object strictly into its k8s.io/api type (a custom
// resource: its metadata, and the pod specs found in it), checks names,
// labels, annotations and sizes as the API server and etcd would, and
// every pod (podcheck.go: volumes, mounts, ports, images, exec probes,
// memory-backed volumes, annotation sizes), then orders the objects in one
// kind order (objectLess). It returns the problems it found (Problem: the
// object, the field, the rule and the rendered values it is about) for the
// facade to name the user's input each comes from; a problem no input
// explains is a bug of the prototype's.
//
// On the way it escapes the user's $ (generator/internal/dollar), resolves
// references to large strings through the Resolver the facade hands it
// (so it knows nothing of Jsonnet) and prepares each object for the YAML
// encoder (generator/internal/yamlenc.Prepare).
//
// It may import generator/param, generator/format and its two leaf
// siblings, never go-jsonnet: depguard holds it.
package check
