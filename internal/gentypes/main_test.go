package main

import (
	"testing"

	"github.com/trainsonnet/trainsonnet/internal/goldentest"
)

// TestGeneratedParamsUpToDate fails when a prototype's declaration changed
// and generator/typed/zz_generated_params.go was not regenerated: the typed Go
// parameters must never drift from the declarations. Fix with
// `go generate ./generator/...` or `go test ./... -update`.
func TestGeneratedParamsUpToDate(t *testing.T) {
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Assert(t, src, "../../generator/typed/zz_generated_params.go")
}
