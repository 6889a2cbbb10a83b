// Package eval is everything of trainsonnet that touches go-jsonnet.
//
// An Engine (New, over the embedded library and prototypes and the -J
// directories) evaluates a prototype's file with its argument (a Value:
// Literal or Object) on a pooled VM, or on a caller's Session that keeps
// one VM for a batch (engine.go: Evaluate, Full, and the hand-over of the
// result as Go values rather than JSON text). Every evaluation runs within
// Bounds (bounds.go): a prototype of one's own that recurses or grows
// without end is an error, not a dead process.
//
// Imports are confined (importer.go): the embedded trees, then the -J
// directories, nothing else of the file system. The natives are one
// registry (natives.go), each with a Jsonnet fallback so that the stock
// jsonnet binary evaluates the same files; large strings such as a
// hostfile of 5,000 lines are held by reference (refs.go) and resolved
// into the checked objects by ResolveRefs; the bash scan of exec strings
// is bashsyntax.go.
//
// A prototype's failure is one line (fail.go): ts.fail's message, at the
// author's file and line for a -J file, never a Jsonnet stack trace; and
// Engine.Failed evaluates a failed render once more with the library's
// contract checks on, to name the broken contract.
//
// The built-ins' declarations are evaluated at build time
// (declarations/<name>.json, with declarations/sources.txt the digest of
// the embedded sources they came from): declarations.go takes them only
// when that digest is the binary's and no -J directory may shadow a
// library file, so a start reads JSON instead of evaluating Jsonnet.
//
// It may import generator/param and generator/internal/dollar, never the
// facade (generator) or check: depguard holds it.
package eval
