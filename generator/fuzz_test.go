package generator_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/format"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// FuzzParams feeds arbitrary params files and --set text to the resolver and
// the prototype: the outcome must be a render or a ValidationError, never a
// panic and never a "prototype bug". `go test` runs the seeds; explore with
// go test ./generator -run '^$' -fuzz FuzzParams -fuzztime 1m.
func FuzzParams(f *testing.F) {
	for _, seed := range []struct{ file, key, value string }{
		{"workers: 2\n", "gpu", "1"},
		{"ssh: null\n", "ssh.port", "2300"},
		{"nodeSelector: {a: 1}\n", "nodeSelector.b", "x"},
		{"volumes: [{name: a, emptyDir: {}}]\nvolumeMounts: [{name: a, mountPath: /a}]\n", "env", "A=1,B"},
		{"s3: {downloadFrom: s3://b/x, downloadTo: /trainsonnet/data/x}\n", "s3.endpoint", "http://m"},
		{"customResources: {hugepages-2Mi: 4Mi}\nmemory: 1Gi\n", "mca", "btl=tcp"},
		{"[1, 2]", "name", "x"},
		{"initTimeout: 1h\nuseHostNetwork: true\n", "ssh.port", "22"},
		{"tolerations: [{key: a, operator: Exists}]\n", "launcher.tolerations", "[{}]"},
	} {
		f.Add(seed.file, seed.key, seed.value)
	}
	g, err := generator.New(generator.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file, key, value string) {
		params := generator.NewParams("openmpi").Set("ssh.secret", "fuzz").
			AddFile("fuzz.yaml", []byte(file)).SetText(key, value, "--set "+key)
		_, err := g.Render(context.Background(), params)
		if err != nil && !generator.IsValidation(err) {
			t.Fatalf("file %q, --set %s=%q: not a validation error: %v", file, key, value, err)
		}
	})
}

// FuzzPrototypes draws random parameter sets for every prototype, by their
// declarations (nothing here knows a prototype's parameters): each leaf is
// left alone or set to a valid value of its format, an edge of its type
// (bounds, odd quantities such as 1e1, 2000m, 1Ki, -1, 1.5, 1e30), text it
// must refuse, or, for objects, a random value of its kind (resources with
// odd quantities, requests above limits, GPU requests without limits),
// through a Go value, the text of a flag, or a params file; the chart keys
// a prototype replaced or removed are used now and then. The outcome must
// be a render or a ValidationError, never a panic or a prototype failure
// (a Jsonnet stack trace), and a rendered hostfile must count whole slots.
// The fuzzer varies which prototype (proto), the draw (seed) and one more
// params file of its own (file). Seeds: one per prototype below, and any
// failure the fuzzer found, in testdata/fuzz/FuzzPrototypes. Explore with
// go test ./generator -run '^$' -fuzz FuzzPrototypes -fuzztime 2m -parallel 1.
func FuzzPrototypes(f *testing.F) {
	g, err := generator.New(generator.Options{})
	if err != nil {
		f.Fatal(err)
	}
	protos, err := g.Prototypes()
	if err != nil {
		f.Fatal(err)
	}
	for i := range protos {
		for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
			f.Add(uint8(i), seed, "")
		}
	}
	f.Add(uint8(1), uint64(7), "resources: {limits: {nvidia.com/gpu: 1e1}}\n")
	f.Add(uint8(1), uint64(8), "worker: {resources: {limits: {nvidia.com/gpu: \"2000m\"}, requests: {nvidia.com/gpu: 2}}}\n")
	f.Add(uint8(1), uint64(9), "master: {args: {}}\n")
	f.Fuzz(func(t *testing.T, proto uint8, seed uint64, file string) {
		pr := protos[int(proto)%len(protos)]
		d := &sweepDrawer{Rand: format.NewRand(rand.New(rand.NewPCG(seed, uint64(proto))))}
		params, trace := d.draw(pr)
		if file != "" {
			params.AddFile("fuzz.yaml", []byte(file))
			trace = append(trace, "-f fuzz.yaml: "+strconv.Quote(file))
		}
		res, err := g.Render(context.Background(), params)
		if err != nil {
			if !generator.IsValidation(err) {
				t.Fatalf("%s with\n  %s\nnot a validation error: %v", pr.Name, strings.Join(trace, "\n  "), err)
			}
			var verr *generator.ValidationError
			if errors.As(err, &verr) {
				for _, p := range verr.Problems {
					if p.Param == "" && p.Source == "" {
						t.Fatalf("%s with\n  %s\na problem that names no parameter: %v", pr.Name, strings.Join(trace, "\n  "), p)
					}
				}
			}
			return
		}
		y, err := res.YAML()
		if err != nil {
			t.Fatalf("%s with\n  %s\nYAML: %v", pr.Name, strings.Join(trace, "\n  "), err)
		}
		// What was printed passes, as it reads back, the strict decode and
		// the pod check.
		if err := generator.CheckOutput(y); err != nil {
			t.Fatalf("%s with\n  %s\nthe output read back: %v", pr.Name, strings.Join(trace, "\n  "), err)
		}
		if m := badSlots.Find(y); m != nil {
			t.Fatalf("%s with\n  %s\nrendered %q in a hostfile", pr.Name, strings.Join(trace, "\n  "), m)
		}
	})
}

// badSlots is a hostfile line whose slots are not a whole number.
var badSlots = regexp.MustCompile(`slots=(-|\d*[.eE+]|[^\d<\s])`)

// sweepDrawer draws the parameter sets of FuzzPrototypes.
type sweepDrawer struct {
	*format.Rand
	wrongPct int // how often a value is one its type refuses
}

// oddQuantities are valid and invalid quantities a value may get.
var oddQuantities = []string{"0", "1", "2", "500m", "1e1", "2000m", "1Ki", "2Ki", "1k", "1e30", "-1", "1.5", "0.5", "2 cores", "", "4Gi", "1E3", "+3"}

// resourceNames are the names a drawn ResourceRequirements uses.
var resourceNames = []string{"cpu", "memory", "nvidia.com/gpu", "amd.com/gpu", "example.com/fpga", "hugepages-2Mi", "ephemeral-storage", "gpu", "kubernetes.io/x"}

func (d *sweepDrawer) pick(xs []string) string { return xs[d.IntN(len(xs))] }

// draw makes one parameter set and says, one line per input, what it set.
func (d *sweepDrawer) draw(pr *generator.Prototype) (*generator.Params, []string) {
	params := generator.NewParams(pr.Name)
	var trace []string
	leaves := param.Leaves(pr.Params)
	pct := 5 + d.IntN(30)
	// Half the sets have only values of the right type, so that most of
	// them reach the prototype's own rules and rendering.
	d.wrongPct = []int{0, 0, 5, 20}[d.IntN(4)]
	for _, p := range leaves {
		if p.Path == "ssh.secret" && d.IntN(10) > 0 {
			params.Set(p.Path, "fuzz") // generating keys is slow and beside the point
			continue
		}
		if d.IntN(100) >= pct {
			continue
		}
		v, text := d.value(p)
		switch d.IntN(3) {
		case 0:
			params.SetText(p.Path, text, "--set "+p.Path)
			trace = append(trace, "--set "+p.Path+"="+strconv.Quote(text))
		case 1:
			b, _ := json.Marshal(nest(p.Path, v))
			params.AddFile(p.Path+".json", b)
			trace = append(trace, "-f "+string(b))
		default:
			params.Set(p.Path, v)
			b, _ := json.Marshal(v)
			trace = append(trace, p.Path+" = "+string(b))
		}
	}
	// The keys of the replaced system: renamed ones, removed ones.
	for _, p := range leaves {
		for _, old := range p.OldPaths {
			if d.IntN(20) == 0 {
				v, _ := d.value(p)
				b, _ := json.Marshal(nest(old, v))
				params.AddFile(old+".json", b)
				trace = append(trace, "-f "+string(b))
			}
		}
	}
	for key := range pr.Removed {
		if d.IntN(10) == 0 {
			b, _ := json.Marshal(nest(key, d.pick([]string{"x", ""})))
			params.AddFile(key+".json", b)
			trace = append(trace, "-f "+string(b))
		}
	}
	return params, trace
}

// nest turns a dotted path and a value into a params file's nested maps.
func nest(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	m := map[string]any{parts[len(parts)-1]: v}
	for i := len(parts) - 2; i >= 0; i-- {
		m = map[string]any{parts[i]: m}
	}
	return m
}

// value draws a value for p: valid for its type and format most of the
// time, an edge or a wrong value otherwise (wrongPct). It returns the value
// as a Go value or a params file holds it, and as the text of a flag.
func (d *sweepDrawer) value(p *param.Param) (any, string) {
	wrong := d.IntN(100) < d.wrongPct
	asText := func(v any) (any, string) {
		if s, ok := v.(string); ok {
			return v, s
		}
		b, _ := json.Marshal(v)
		return v, string(b)
	}
	switch p.Type {
	case param.TypeString:
		if wrong {
			return asText(d.pick([]string{"", " ", "\n", "x y", "/", "..", "A", strings.Repeat("a", 300),
				"/etc//trainsonnet", "/scratch/.", "/dev/shm/", "echo $$ $(HOME)", "a\x00b", "=", "<<", "1.10", "repo/:tag", "a//b"}))
		}
		if d.IntN(10) == 0 && p.Format == "nonEmpty" {
			// text the chart's users wrote: bash syntax, the Kubeflow
			// prototype's hostfile path
			return asText(d.pick([]string{"[[ -f x ]] && source y", "mpirun --hostfile /kubeflow/openmpi/assets/hostfile hostname", "for i in {1..3}; do echo $i; done", "''"}))
		}
		return asText(p.FormatSpec().Draw(d.Rand))
	case param.TypeEnum:
		if wrong || len(p.Values) == 0 {
			return asText("bogus")
		}
		return asText(d.pick(p.Values))
	case param.TypeInt, param.TypeDuration:
		lo, hi := int64(-5), int64(100)
		if p.Min != nil {
			lo = *p.Min
		}
		if p.Max != nil && *p.Max < hi {
			hi = *p.Max
		}
		var n int64
		switch {
		case wrong:
			s := d.pick([]string{strconv.FormatInt(lo-1, 10), "1.5", "x", "", "1e3", "9999999999999"})
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, s
			}
			return s, s
		case d.IntN(6) == 0 && p.Max != nil:
			n = *p.Max
		case hi <= lo:
			n = lo
		default:
			n = lo + d.Int64N(min(hi-lo+1, 20))
		}
		return n, strconv.FormatInt(n, 10)
	case param.TypeBool:
		if wrong {
			return asText("yes")
		}
		b := d.IntN(2) == 0
		return b, strconv.FormatBool(b)
	case param.TypeQuantity:
		switch {
		case wrong:
			return asText(d.pick(oddQuantities))
		case p.Format == "bytes":
			return asText(d.pick([]string{"1Gi", "512Mi", "64Gi", "1e9", "1k", "0"}))
		}
		return asText(d.pick(oddQuantities[:10]))
	case param.TypeMap:
		m := map[string]any{}
		for range d.IntN(3) {
			k := p.FormatSpec().Draw(d.Rand)
			if wrong {
				k = d.pick([]string{"", "a b", "-x"})
			}
			if p.ValueFormat == "quantity" {
				m[k] = d.pick(oddQuantities)
			} else {
				m[k] = p.ValueFormatSpec().Draw(d.Rand)
			}
		}
		pairs := make([]string, 0, len(m))
		for k, v := range m {
			pairs = append(pairs, k+"="+v.(string))
		}
		return m, strings.Join(pairs, ",")
	case param.TypeList:
		if wrong {
			v := map[string]any{} // the chart's args: {}
			return v, "{}"
		}
		l := []any{}
		texts := []string{}
		for range d.IntN(3) {
			if p.Format == "int" {
				n := int64(d.IntN(100))
				l, texts = append(l, n), append(texts, strconv.FormatInt(n, 10))
			} else {
				s := p.FormatSpec().Draw(d.Rand)
				l, texts = append(l, s), append(texts, s)
			}
		}
		sep := p.Separator
		if sep == "" {
			sep = " " // one flag's text is one item
		}
		return l, strings.Join(texts, sep)
	case param.TypeObject:
		var one func() any
		switch p.Kind {
		case "core/v1.ResourceRequirements":
			one = d.resources
		case "core/v1.Toleration":
			one = func() any {
				t := map[string]any{"key": d.pick([]string{"nvidia.com/gpu", "a"}), "operator": "Exists"}
				if d.IntN(2) == 0 {
					t["effect"] = "NoSchedule"
				}
				return t
			}
		case "core/v1.Volume":
			one = func() any {
				name := d.pick([]string{"data", "x", "trainsonnet-storage", "trainsonnet-config"})
				switch d.IntN(6) {
				case 0:
					return map[string]any{"name": name, "secret": map[string]any{"secretName": "s", "defaultMode": d.pick([]string{"420", "4096", "99999"})}}
				case 1:
					return map[string]any{"name": name, "configMap": map[string]any{"name": "c", "items": []any{map[string]any{"key": "k", "path": d.pick([]string{"k", "../k", "/k"})}}}}
				case 2:
					return map[string]any{"name": name, "emptyDir": map[string]any{"sizeLimit": d.pick([]string{"1Gi", "-1Gi"})}}
				case 3:
					return map[string]any{"name": name, "nfs": map[string]any{"server": "nfs", "path": d.pick([]string{"/x", "x"})}}
				}
				return map[string]any{"name": name, "emptyDir": map[string]any{}}
			}
		case "core/v1.VolumeMount":
			one = func() any {
				m := map[string]any{"name": d.pick([]string{"data", "x"}), "mountPath": d.pick([]string{"/data", "/x", "/etc/trainsonnet", "/kubeflow/openmpi/assets",
					"/etc/trainsonnet/", "/etc//trainsonnet", "/dev/shm/", "/", "/.", "/storage/", "/x/.", "/proc/x", "/etc/trainsonnet/x"})}
				switch d.IntN(8) {
				case 0:
					m["subPath"] = d.pick([]string{"a", "../a", "/a"})
				case 1:
					m["subPathExpr"] = "$(POD)"
					m["subPath"] = "a"
				case 2:
					m["mountPropagation"] = d.pick([]string{"None", "Bidirectional", "Sideways"})
				}
				return m
			}
		default:
			one = func() any { return map[string]any{} }
		}
		if wrong {
			v := d.pick([]string{"{}", "[]", "null", "x: [", `{"nmae": 1}`}) //nolint:misspell // an unknown key, misspelt on purpose
			return v, v
		}
		if p.List {
			l := []any{}
			for range d.IntN(3) {
				l = append(l, one())
			}
			return asText(l)
		}
		return asText(one())
	}
	return nil, ""
}

// resources draws a ResourceRequirements: limits and requests of a few
// resources each, quantities valid or not, numbers or text.
func (d *sweepDrawer) resources() any {
	if d.IntN(2) == 0 {
		// valid: GPUs spelt any way, requests at most the limits
		gpu := d.pick([]string{"1", "2", "2000m", "1e1", "1k", "1Ki", "0"})
		rr := map[string]any{"limits": map[string]any{"nvidia.com/gpu": gpu, "cpu": "4", "memory": "8Gi"}}
		if d.IntN(2) == 0 {
			rr["requests"] = map[string]any{"nvidia.com/gpu": gpu, "cpu": "500m", "memory": "1Gi"}
		}
		return rr
	}
	rr := map[string]any{}
	for _, field := range []string{"limits", "requests"} {
		if d.IntN(3) == 0 {
			continue
		}
		m := map[string]any{}
		for range 1 + d.IntN(3) {
			q := d.pick(oddQuantities)
			if n, err := strconv.ParseFloat(q, 64); err == nil && d.IntN(2) == 0 {
				m[d.pick(resourceNames)] = n
			} else {
				m[d.pick(resourceNames)] = q
			}
		}
		rr[field] = m
	}
	if d.IntN(20) == 0 {
		rr["claims"] = []any{map[string]any{"name": "gpu"}}
	}
	return rr
}
