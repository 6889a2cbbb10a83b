package generator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest"
)

// TestLookupWithPrototypePaths: with a prototype path (which may shadow
// the libraries, so the built-ins' declarations are evaluated, not taken
// from the build: generator/internal/eval), a built-in has the same
// parameters as without, and renders.
func TestLookupWithPrototypePaths(t *testing.T) {
	g, err := New(Options{PrototypePaths: []string{t.TempDir()}})
	require.NoError(t, err)
	pr, err := g.Lookup("openmpi")
	require.NoError(t, err)
	g0, err := New(Options{})
	require.NoError(t, err)
	pr0, err := g0.Lookup("openmpi")
	require.NoError(t, err)
	require.Equal(t, len(pr0.Params), len(pr.Params))
	require.Equal(t, pr0.Summary, pr.Summary)
	_, err = g.Render(context.Background(), NewParams("openmpi"))
	require.NoError(t, err)
}
