// Package typed holds a Go struct for each built-in prototype's
// parameters, generated from its declaration by internal/gentypes:
//
//	p := typed.OpenMPI{
//		Common:  typed.Common{Name: "bench"},
//		Workers: ptr.To(4),
//	}
//	res, err := g.Render(ctx, p.Params())
//
// What the library's pieces declare alike in every prototype is one type:
// Common (lib/common.libsonnet's parameters) and Batch (the Jobs' lifetime)
// are embedded in each prototype's struct, so their fields read as the
// prototype's own (p.Name); a group a piece declares in one shape everywhere
// is one type too (Storage, SSH). A field left at its zero value (nil, "") takes
// the prototype's default. Params returns a *generator.Params, which takes
// more by path (Set) as any other.
package typed

//go:generate go run ../../internal/gentypes -o zz_generated_params.go
