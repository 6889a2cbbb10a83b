// Package generator renders Kubernetes manifests for distributed training
// jobs from trainsonnet's Jsonnet prototypes. It is the library behind the
// trainsonnet CLI, and the place to start for a Go program that wants the
// same manifests.
//
// A prototype declares typed parameters once, in Jsonnet (see
// lib/params.libsonnet); the generator checks values against those
// declarations (every problem at once, as a *ValidationError), evaluates the
// prototype with go-jsonnet, strictly decodes every object it emits into
// its k8s.io/api type (objects of other API groups, such as a Kubeflow
// MPIJob, pass through with their metadata checked), and returns them in
// one deterministic order, ready to encode as a YAML stream, a v1 List or a
// kustomize base.
//
//	g, err := generator.New(generator.Options{})
//	...
//	res, err := g.Render(ctx, typed.OpenMPI{Common: typed.Common{Name: "bench"}, Workers: ptr.To(4)}.Params())
//	...
//	yaml, err := res.YAML()
//
// Each built-in prototype has a typed struct (package generator/typed:
// typed.OpenMPI, ...), generated from its declaration; Params also takes
// values by path (Set), as text (SetText) and from params files (AddFile),
// as the CLI does. The evaluation of Jsonnet, the check of what a prototype
// emits and the YAML encoding are this package's data path, under
// generator/internal. The declarations
// (Prototype.Params), how values of each type are read and checked, and the
// problems reported (param.Error) are package generator/param's.
package generator

//go:generate go test ./internal/eval -run ^TestDeclarationsUpToDate$ -update
