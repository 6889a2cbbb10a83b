package param

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestResourcesValue pins the rules of a ResourceRequirements parameter
// (resources.go) against the API server's, one case each, and that a GPU
// quantity reaches the prototype as digits without the caller's own value
// changing.
func TestResourcesValue(t *testing.T) {
	p := &Param{Path: "resources", Type: TypeObject, Kind: "core/v1.ResourceRequirements"}
	for _, c := range []struct {
		in   string
		want string // the value passed on, as JSON ("" when it is the input)
		rule string // a part of the rule broken ("" when valid)
	}{
		{in: `{}`},
		{in: `{"limits":{"cpu":"500m","memory":"4Gi","nvidia.com/gpu":4},"requests":{"cpu":"250m"}}`},
		{in: `{"limits":{"nvidia.com/gpu":"2000m"}}`, want: `{"limits":{"nvidia.com/gpu":"2"}}`},
		{in: `{"limits":{"nvidia.com/gpu":"1e1"},"requests":{"nvidia.com/gpu":"10"}}`, want: `{"limits":{"nvidia.com/gpu":"10"},"requests":{"nvidia.com/gpu":"10"}}`},
		{in: `{"limits":{"nvidia.com/gpu":"1Ki","cpu":"1k"}}`, want: `{"limits":{"cpu":"1k","nvidia.com/gpu":"1024"}}`},
		{in: `{"limits":{"example.com/fpga":"1e14"}}`, want: `{"limits":{"example.com/fpga":"100000000000000"}}`},
		// the one magnitude rule of every quantity: under 10^15 (format/quantity.go)
		{in: `{"limits":{"example.com/fpga":"1e15"}}`, rule: `is too large`},
		{in: `{"limits":{"example.com/fpga":"1e30"}}`, rule: `is too large`},
		{in: `{"limits":{"nvidia.com/gpu":1e1}}`}, // a number: Jsonnet gets 10
		{in: `{"limits":{"nvidia.com/gpu":1.5}}`, rule: `limits.nvidia.com/gpu 1.5: must be a whole number`},
		{in: `{"limits":{"nvidia.com/gpu":"500m"}}`, rule: `must be a whole number`},
		{in: `{"limits":{"cpu":"-1"}}`, rule: `limits.cpu "-1": must not be negative`},
		{in: `{"requests":{"memory":-5}}`, rule: `requests.memory -5: must not be negative`},
		{in: `{"limits":{"cpu":"2 cores"}}`, rule: `limits.cpu "2 cores": must be a Kubernetes quantity`},
		{in: `{"limits":{"cpu":true}}`, rule: `limits.cpu true: must be a Kubernetes quantity`},
		{in: `{"limits":{"memory":"1.5"}}`, rule: `whole number of bytes`},
		{in: `{"limits":{"gpu":"1"}}`, rule: `limits "gpu": must be cpu, memory`},
		{in: `{"limits":{"memory":"1Gi"},"requests":{"memory":"2Gi"}}`, rule: `requests.memory 2Gi: must be at most limits.memory (1Gi)`},
		{in: `{"limits":{"cpu":"1"},"requests":{"cpu":"1000m"}}`},
		{in: `{"requests":{"cpu":"64"}}`}, // no limit: nothing to exceed
		{in: `{"requests":{"nvidia.com/gpu":1}}`, rule: `requests.nvidia.com/gpu 1: needs an equal limit (limits.nvidia.com/gpu)`},
		{in: `{"limits":{"nvidia.com/gpu":2},"requests":{"nvidia.com/gpu":1}}`, rule: `must equal limits.nvidia.com/gpu (2)`},
		{in: `{"limits":{"hugepages-2Mi":"4Mi","memory":"1Gi"},"requests":{"hugepages-2Mi":"2Mi"}}`, rule: `does not overcommit huge pages`},
		{in: `{"limits":{"hugepages-2Mi":"4Mi"}}`, rule: `hugepages need a cpu or memory`},
		{in: `{"claims":[{"name":"gpu"}]}`, rule: `claims: not supported`},
		{in: `{"limits":null,"requests":{"cpu":"1"}}`, want: `{"requests":{"cpu":"1"}}`},
		{in: `{"limits":{"cpu":null}}`, rule: `limits.cpu null: must be a Kubernetes quantity`},
		{in: `{"limits":[]}`, rule: `is not a valid core/v1 ResourceRequirements`},
	} {
		v, err := DecodeJSON([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		before, _ := json.Marshal(v)
		got, rule := p.objectValue(v)
		if after, _ := json.Marshal(v); string(after) != string(before) {
			t.Errorf("%s: the caller's value changed to %s", c.in, after)
		}
		if c.rule != "" {
			if !strings.Contains(rule, c.rule) {
				t.Errorf("%s: rule %q, want one with %q", c.in, rule, c.rule)
			}
			continue
		}
		if rule != "" {
			t.Errorf("%s: refused: %s", c.in, rule)
			continue
		}
		want := c.want
		if want == "" {
			want = c.in
		}
		var w any
		_ = json.Unmarshal([]byte(want), &w)
		var g any
		b, _ := json.Marshal(got)
		_ = json.Unmarshal(b, &g)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: passed on %s, want %s", c.in, b, want)
		}
	}
}

// TestContainerResources: the same rules for the resources of a
// core/v1.Container parameter (a sidecar of a prototype of one's own).
func TestContainerResources(t *testing.T) {
	p := &Param{Path: "sidecars", Type: TypeObject, Kind: "core/v1.Container", List: true}
	v, _ := DecodeJSON([]byte(`[{"name":"a","image":"x","resources":{"limits":{"nvidia.com/gpu":"3000m"}}},{"name":"b","image":"y"}]`))
	got, rule := p.objectValue(v)
	if rule != "" {
		t.Fatal(rule)
	}
	b, _ := json.Marshal(got)
	if want := `[{"image":"x","name":"a","resources":{"limits":{"nvidia.com/gpu":"3"}}},{"image":"y","name":"b"}]`; string(b) != want {
		t.Errorf("passed on %s, want %s", b, want)
	}
	v, _ = DecodeJSON([]byte(`[{"name":"a","image":"x","resources":{"requests":{"memory":"2Gi"},"limits":{"memory":"1Gi"}}}]`))
	if _, rule := p.objectValue(v); !strings.Contains(rule, `container "a": resources.requests.memory 2Gi: must be at most`) {
		t.Errorf("rule %q", rule)
	}
}
