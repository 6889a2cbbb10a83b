package generator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/format"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// TestEveryParameterIsWired: every declared parameter of every built-in
// prototype, and of the worked example of a prototype of one's own,
// changes the output (the objects or the warnings) for some value. A
// parameter that is declared, documented and accepted but never reaches
// the render (the example's --backoff-limit once rendered backoffLimit:
// 0) fails here. Nothing here knows a prototype: the values come from the
// declarations (the bounds, the enum's values, the format's drawer), and
// a parameter that matters only beside others (storage.nfs.path beside
// storage.nfs.server, s3.endpoint beside S3 staging) is tried beside what
// the renders' problems and warnings name: the parameters they mention
// (at their values), and the directories (a path under one). An enum or
// a bool whose every other value is refused accepts only its default
// (tensorboard's jobset, which names why): nothing to wire.
func TestEveryParameterIsWired(t *testing.T) {
	if testing.Short() {
		t.Skip("renders every prototype a few thousand times")
	}
	g, err := generator.New(generator.Options{PrototypePaths: []string{"../examples/own-prototype"}})
	if err != nil {
		t.Fatal(err)
	}
	protos, err := g.Prototypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range protos {
		if !pr.Builtin && pr.Name != "pytorch-ddp" {
			continue
		}
		t.Run(pr.Name, func(t *testing.T) {
			w := &wiring{t: t, g: g, pr: pr, cands: map[string][]any{}, seen: map[string]outcome{}, leaves: param.Leaves(pr.Params)}
			for _, p := range w.leaves {
				w.cands[p.Path] = w.candidates(p, rand.New(rand.NewPCG(1, uint64(len(p.Path)))))
			}
			for _, p := range w.leaves {
				if !w.wired(p) {
					t.Errorf("%s: no value of %s (tried %s) changes the output, alone or beside what the problems and warnings name: is it wired to anything?",
						pr.Name, p.Path, show(w.cands[p.Path]))
				}
			}
		})
	}
}

type wiring struct {
	t      *testing.T
	g      *generator.Generator
	pr     *generator.Prototype
	leaves []*param.Param
	cands  map[string][]any   // path -> valid values other than the default
	seen   map[string]outcome // renders, by the JSON of the values set
	good   []map[string]any   // contexts where a parameter was found wired
}

// outcome is a render: its objects (as JSON) and warnings, or none when
// the parameters were refused; and what its problems or warnings say.
type outcome struct {
	out  []byte
	ok   bool
	says []said
}

type said struct{ param, text string }

// maxContexts bounds the contexts tried for one parameter, maxValues
// the values of it tried in each.
const (
	maxContexts = 300
	maxValues   = 6
)

// wired: whether two values of p (its default among them) render
// differently beside some context (values of other parameters), at most
// maxContexts of them.
func (w *wiring) wired(p *param.Param) bool {
	// The contexts to try: none, and what its renders name; then, in
	// turn, those where an earlier parameter was found wired, each other
	// parameter of p's group (the top level's, for a top-level one) at one
	// of its first two values, each other parameter at its first, and
	// what the renders of those name.
	group := func(path string) string { return path[:strings.LastIndex(path, ".")+1] }
	var near, far []map[string]any
	for _, q := range w.leaves {
		for i, v := range w.cands[q.Path] {
			switch {
			case q.Path == p.Path:
			case group(q.Path) == group(p.Path) && i < 2:
				near = append(near, map[string]any{q.Path: v})
			case i < 1:
				far = append(far, map[string]any{q.Path: v})
			}
		}
	}
	queues := [][]map[string]any{{{}}, nil, slices.Clone(w.good), near, far, nil}
	named := []int{1, 1, 5, 5, 5, 5} // where a context's named ones go
	visited := map[string]bool{}
	refused := p.Type == param.TypeEnum || p.Type == param.TypeBool
	turn := 2
	for tried := 0; tried < maxContexts; {
		// {} and what it names first; then the others in turn
		i := slices.IndexFunc(queues[:2], func(q []map[string]any) bool { return len(q) > 0 })
		for k := 0; i < 0 && k < len(queues)-2; k++ {
			if turn = 2 + (turn-2+1)%(len(queues)-2); len(queues[turn]) > 0 {
				i = turn
			}
		}
		if i < 0 {
			break
		}
		ctx := queues[i][0]
		queues[i] = queues[i][1:]
		key, _ := json.Marshal(ctx)
		if _, own := ctx[p.Path]; own || visited[string(key)] {
			continue
		}
		visited[string(key)] = true
		tried++
		base := w.render(ctx)
		says := base.says
		// p's values, unless the context is refused for what p cannot
		// mend (no problem names p); the ones the messages led to first
		cands := len(w.cands[p.Path])
		if base.ok || slices.ContainsFunc(base.says, func(s said) bool { return s.param == p.Path || mentions(s.text, p.Path) }) {
			var outs [][]byte
			if base.ok {
				outs = append(outs, base.out)
			}
			rendered := 0 // values of p
			for n, v := range w.cands[p.Path] {
				if n >= maxValues || rendered > 2 || rendered > 1 && len(ctx) > 0 {
					break // (values that render alike: p does not matter here)
				}
				o := w.render(with(ctx, p.Path, v))
				says = append(says, o.says...)
				if !o.ok {
					continue
				}
				rendered++
				refused = false
				for _, x := range outs {
					if !bytes.Equal(x, o.out) {
						if len(ctx) > 0 {
							w.good = append(w.good, ctx) // (visited once per parameter)
						}
						return true
					}
				}
				outs = append(outs, o.out)
			}
		}
		if len(ctx) == 0 && refused {
			return true // an enum or bool that takes only its default
		}
		// What the renders name (but the defaults' own warnings): a
		// parameter (at its values), or a directory (a path under it, for
		// the parameter at fault).
		for _, s := range says {
			if slices.Contains(w.render(nil).says, s) {
				continue
			}
			for _, q := range w.leaves {
				if _, set := ctx[q.Path]; set || q.Path == p.Path || len(ctx) >= 3 || !mentions(s.text, q.Path) {
					continue
				}
				for n, v := range w.cands[q.Path] {
					if n < 2 {
						queues[named[i]] = append(queues[named[i]], with(ctx, q.Path, v))
					}
				}
			}
			for _, dir := range absPaths.FindAllStringSubmatch(s.text, -1) {
				for _, under := range []string{"/wired", "/wired/too"} {
					under = strings.TrimRight(dir[2], ".,:;)'") + under
					if s.param == p.Path {
						w.addCandidate(p, under)
					} else if _, set := ctx[s.param]; set {
						queues[named[i]] = append(queues[named[i]], with(ctx, s.param, under))
					}
				}
			}
		}
		if len(w.cands[p.Path]) > cands {
			// values the messages led to: try them here too
			delete(visited, string(key))
			queues[i] = append([]map[string]any{ctx}, queues[i]...)
		}
	}
	return false
}

// absPaths finds the absolute paths in a message.
var absPaths = regexp.MustCompile(`(^|[\s(])(/[A-Za-z0-9._/-]+)`)

// mentions: whether text names the parameter path as a word.
func mentions(text, path string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], path)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWord(text[j-1])
		after := j+len(path) == len(text) || !isWord(text[j+len(path)])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWord(c byte) bool {
	return c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// with is ctx with path set to v (nil: left out).
func with(ctx map[string]any, path string, v any) map[string]any {
	m := map[string]any{}
	for k, x := range ctx {
		m[k] = x
	}
	if v != nil {
		m[path] = v
	}
	return m
}

func (w *wiring) addCandidate(p *param.Param, v any) {
	vv, _ := json.Marshal(v)
	for _, x := range w.cands[p.Path] {
		if xv, _ := json.Marshal(x); bytes.Equal(xv, vv) {
			return
		}
	}
	w.cands[p.Path] = append([]any{v}, w.cands[p.Path]...)
}

// render renders the prototype with values (and the rest at their
// defaults), the randomness fixed.
func (w *wiring) render(values map[string]any) outcome {
	key, _ := json.Marshal(values)
	if o, ok := w.seen[string(key)]; ok {
		return o
	}
	params := generator.NewParams(w.pr.Name)
	for k, v := range values {
		params.Set(k, v)
	}
	cryptotest.SetGlobalRandom(w.t, 1) // the same ssh keys and tokens every time
	var o outcome
	res, err := w.g.Render(context.Background(), params)
	switch {
	case err == nil:
		var out bytes.Buffer
		for _, obj := range res.Objects {
			out.Write(obj.JSON())
			out.WriteByte('\n')
		}
		out.WriteString("warnings:\n" + strings.Join(res.Warnings, "\n"))
		o = outcome{out: out.Bytes(), ok: true}
		for _, s := range res.Warnings {
			o.says = append(o.says, said{text: s})
		}
	case generator.IsValidation(err):
		var verr *generator.ValidationError
		if errors.As(err, &verr) {
			for _, pb := range verr.Problems {
				o.says = append(o.says, said{param: pb.Param, text: pb.Rule})
			}
		}
	default:
		w.t.Fatalf("%s with %s: %v", w.pr.Name, key, err)
	}
	w.seen[string(key)] = o
	return o
}

// candidates are valid values of p other than its default: the edges of
// its type and a few drawn by its format.
func (w *wiring) candidates(p *param.Param, r *rand.Rand) []any {
	d := format.NewRand(r)
	draw := func(f *format.Format) string { return f.Draw(d) }
	var out []any
	add := func(v any) {
		if v == nil {
			return
		}
		dv, _ := json.Marshal(p.Default)
		vv, _ := json.Marshal(v)
		if p.Default != nil && bytes.Equal(dv, vv) {
			return
		}
		for _, x := range out {
			if xv, _ := json.Marshal(x); bytes.Equal(xv, vv) {
				return
			}
		}
		out = append(out, v)
	}
	switch p.Type {
	case param.TypeBool:
		add(true)
		add(false)
	case param.TypeInt, param.TypeDuration:
		lo, hi := int64(0), int64(1<<20)
		if p.Min != nil {
			lo = *p.Min
		}
		if p.Max != nil {
			hi = *p.Max
		}
		if def, ok := p.Default.(int64); ok && def+1 <= hi {
			add(def + 1)
		}
		for _, n := range []int64{lo, lo + 1, 2, 3, 8, 1025, hi} {
			if n >= lo && n <= hi {
				add(n)
			}
		}
	case param.TypeEnum:
		for _, v := range p.Values {
			add(v)
		}
	case param.TypeString:
		for range 4 {
			add(draw(p.FormatSpec()))
		}
		switch p.Format {
		case "absPathOrURI":
			add("s3://bucket/runs")
			add("gs://bucket/runs")
		case "nonEmpty", "":
			add("python /opt/train.py")
		}
	case param.TypeQuantity:
		if p.Format == "bytes" {
			add("1Gi")
			add("64Gi")
		} else {
			add("2")
			add("500m")
		}
	case param.TypeMap:
		for range 2 {
			v := "1"
			if p.ValueFormat != "quantity" {
				v = draw(p.ValueFormatSpec())
			}
			add(map[string]any{draw(p.FormatSpec()): v})
		}
	case param.TypeList:
		if p.Format == "int" {
			lo := int64(1)
			if p.Min != nil && *p.Min > lo {
				lo = *p.Min
			}
			add([]any{lo})
		} else {
			for range 2 {
				add([]any{draw(p.FormatSpec())})
			}
		}
	case param.TypeObject:
		var one any
		switch p.Kind {
		case "core/v1.Toleration":
			one = map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
		case "core/v1.Volume":
			one = map[string]any{"name": "data", "emptyDir": map[string]any{}}
		case "core/v1.VolumeMount":
			// (it renders beside a volume of that name: the context of
			// the volumes parameter)
			one = map[string]any{"name": "data", "mountPath": "/data"}
		case "core/v1.ResourceRequirements":
			one = map[string]any{"limits": map[string]any{"cpu": "2", "memory": "4Gi"}}
		case "networking/v1.NetworkPolicyPeer":
			one = map[string]any{"namespaceSelector": map[string]any{}}
		default:
			w.t.Fatalf("%s: no value of kind %s to try; add one here", p.Path, p.Kind)
		}
		if p.List {
			add([]any{one})
		} else {
			add(one)
		}
	default:
		w.t.Fatalf("%s: no values of type %s to try; add them here", p.Path, p.Type)
	}
	return out
}

func show(vs []any) string {
	var s []string
	for _, v := range vs {
		b, _ := json.Marshal(v)
		s = append(s, string(b))
	}
	if len(s) == 0 {
		return "no value"
	}
	return strings.Join(s, ", ")
}
