package suggest

import (
	"testing"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

func TestClosest(t *testing.T) {
	names := []string{"workers", "nodeSelector", "node-selector", "initTimeout", "openmpi"}
	for _, c := range []struct{ in, want string }{
		{"workerz", "workers"},
		{"nodeSelecter", "nodeSelector"},
		{"NodeSelector", "nodeSelector"}, // case does not count
		{"opnempi", "openmpi"},
		{"gpu", ""}, // too far from anything
		{"x", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Closest("a", nil); got != "" {
		t.Errorf("no candidates: %q", got)
	}
}
