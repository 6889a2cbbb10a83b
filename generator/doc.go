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
//
// Inside, the facade's files each hold one stage: params.go the sources of
// values in order (files, --set, flags, Go values) and their precedence,
// and the resolved values as the prototype's argument (resolved.tla);
// keys.go what a key of a source means (a renamed, removed or old-group
// key, a replaced chart's default) or a params file that is a whole object
// of a replaced system (a PyTorchJob: checked by internal/kubeflow, then
// translated by the prototype's from function); generator.go a render,
// stage after stage; explain.go the input behind each problem; encode.go
// the outputs; batch.go many jobs (RenderEach renders on every core, each
// worker on one VM that takes the jobs of as few prototypes as it can, and
// hands each result to the caller on the worker that rendered it;
// RenderAll keeps the results; a BatchError names each failed job). No
// file uses what another declares while that one uses it back, but for
// keys.go and params.go (TestNoFileCycles, type-checked).
package generator

//go:generate go test ./internal/eval -run ^TestDeclarationsUpToDate$ -update
