package e2e

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/param"
	"github.com/trainsonnet/trainsonnet/test/kube"
)

// Environment of the sweep.
const (
	EnvSweepSeed = "TRAINSONNET_SWEEP_SEED"
	EnvSweepN    = "TRAINSONNET_SWEEP_N"
)

const (
	defaultSweepN = 200
	// sweepBatch sets go to the server in one kubectl call.
	sweepBatch = 25
	// maxDetailedReports: further rejected sets get a one-line report.
	maxDetailedReports = 10
)

// TestSweep renders TRAINSONNET_SWEEP_N (default 200) random parameter sets
// per prototype, drawn from the declared parameter types (draw_test.go),
// and sends every valid one to the API server: a server-side dry run with
// strict field validation in a namespace enforcing the strictest Pod
// Security level its pods pass, server warnings counting as rejections.
// Sets the generator refuses (*generator.ValidationError) are counted apart
// and must be a minority, each problem naming a declared parameter. Every
// set is also rendered from the equivalent params file, which must give the
// same outcome. A rejected set is printed as a replayable
// `trainsonnet gen` command line and params file.
func TestSweep(t *testing.T) {
	k := kube.E2E(t)
	t.Parallel()
	seed := sweepSeed(t)
	n := defaultSweepN
	if s := os.Getenv(EnvSweepN); s != "" {
		v, err := strconv.Atoi(s)
		require.NoErrorf(t, err, "%s=%q", EnvSweepN, s)
		require.Positivef(t, v, "%s", EnvSweepN)
		n = v
	}
	t.Logf("sweep seed %d, %d sets per prototype (replay: %s=%d %s=%d)", seed, n, EnvSweepSeed, seed, EnvSweepN, n)
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	for _, pr := range protos {
		t.Run(pr.Name, func(t *testing.T) {
			t.Parallel()
			sw := &sweep{what: "sweep", k: k, g: g, pr: pr, seed: seed}
			sw.run(t, n)
		})
	}
}

// sweepSeed is TRAINSONNET_SWEEP_SEED, or a random seed.
func sweepSeed(t *testing.T) uint64 {
	if s := os.Getenv(EnvSweepSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoErrorf(t, err, "%s=%q", EnvSweepSeed, s)
		return v
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) % 1_000_000_000 // short enough to type
}

// sweep is the sweep of one prototype.
type sweep struct {
	what string // "sweep" or "bounds", for messages
	k    *kube.Kubectl
	g    *generator.Generator
	pr   *generator.Prototype
	seed uint64
	ns   map[kube.PodSecurityLevel]string
}

// A sweepSet is one drawn parameter set and what became of it.
type sweepSet struct {
	index  int
	proto  string
	seed   uint64
	sweepN int
	values []drawnValue

	invalid   *generator.ValidationError // the generator refused it
	problems  []string                   // what the generator, kubectl or the server said against it
	objects   []*generator.Object
	manifests []byte
	level     kube.PodSecurityLevel
	ns        string
}

func (s *sweepSet) valid() bool { return s.invalid == nil }

// params returns the set as the CLI's flags would give it (SetText parses
// text exactly as a flag does), with the namespace if not empty.
func (s *sweepSet) params(pr *generator.Prototype, ns string) *generator.Params {
	ps := generator.NewParams(s.proto)
	for _, v := range s.values {
		if texts := v.flagTexts(); len(texts) == 1 {
			ps.SetText(v.param.Path, texts[0], "--"+v.param.Path)
		} else {
			ps.SetTexts(v.param.Path, texts, "--"+v.param.Path)
		}
	}
	if ns != "" && pr.Param("namespace") != nil {
		ps.SetText("namespace", ns, "--namespace")
	}
	return ps
}

// paramsFile returns the set as a params file.
func (s *sweepSet) paramsFile() []byte {
	tree := map[string]any{}
	for _, v := range s.values {
		m := tree
		parts := strings.Split(v.param.Path, ".")
		for _, part := range parts[:len(parts)-1] {
			sub, ok := m[part].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[part] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v.value
	}
	y, err := yaml.Marshal(tree)
	if err != nil {
		panic(err)
	}
	return y
}

// command is the set as a command line for a shell, each parameter given
// by its declared path, which the CLI takes as a flag too (--ssh.port).
func (s *sweepSet) command() string {
	args := []string{"trainsonnet", "gen", s.proto}
	for _, v := range s.values {
		for _, text := range v.flagTexts() {
			args = append(args, "--"+v.param.Path+"="+shellQuote(text))
		}
	}
	return strings.Join(args, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// report describes a rejected set so that it can be replayed.
func (s *sweepSet) report() string {
	var b strings.Builder
	if s.sweepN > 0 {
		fmt.Fprintf(&b, "sweep %s set %d (seed %d): ", s.proto, s.index, s.seed)
	} else {
		fmt.Fprintf(&b, "%s set %d: ", s.proto, s.index)
	}
	if s.valid() {
		fmt.Fprintf(&b, "valid for trainsonnet, rejected (Pod Security level %s):\n", s.level)
	} else {
		b.WriteString("rejected:\n")
	}
	for _, p := range s.problems {
		b.WriteString("  " + strings.ReplaceAll(strings.TrimSpace(p), "\n", "\n  ") + "\n")
	}
	b.WriteString("replay:\n  " + s.command())
	if s.valid() {
		fmt.Fprintf(&b, " \\\n    | kubectl --warnings-as-errors apply --server-side --dry-run=server --validate=strict -f - -n <a namespace enforcing Pod Security %s>", s.level)
	}
	fmt.Fprintf(&b, "\nor with this params file: trainsonnet gen %s -f params.yaml\n  %s", s.proto,
		strings.ReplaceAll(strings.TrimRight(string(s.paramsFile()), "\n"), "\n", "\n  "))
	if s.sweepN > 0 {
		fmt.Fprintf(&b, "\nthe whole sweep: %s=%d %s=%d test/e2e.sh -run 'TestSweep/%s$'", EnvSweepSeed, s.seed, EnvSweepN, s.sweepN, s.proto)
	}
	return b.String()
}

func (sw *sweep) run(t *testing.T, n int) {
	ctx := t.Context()
	d := newDrawer(ctx, sw.g, sw.pr, sw.seed)
	for _, p := range sortedKeys(d.caps) {
		t.Logf("%s: %s scales the output (%d bytes per step): drawn from at most %d", sw.pr.Name, p, d.perStep[p], d.caps[p])
	}
	sets := make([]*sweepSet, n)
	for i := range sets {
		sets[i] = &sweepSet{index: i, proto: sw.pr.Name, seed: sw.seed, sweepN: n, values: d.drawSet(sw.pr, i)}
	}
	for _, p := range sortedKeys(d.skipped) {
		t.Logf("%s: %s is never set: no values for %s (add a drawer to draw_test.go, or a format to generator/format)", sw.pr.Name, p, d.skipped[p])
	}
	sw.evaluate(t, "e2e-sweep-"+sw.pr.Name, sets)
	sw.summarize(t, sets)
}

// evaluate renders the sets (checking them and picking their Pod Security
// level), makes a namespace per level needed, renders the valid sets for
// it, and sends them to the server.
func (sw *sweep) evaluate(t *testing.T, nsPrefix string, sets []*sweepSet) {
	ctx := t.Context()
	// Render (CPU only) on every core.
	parallel := func(f func(*sweepSet)) {
		var wg sync.WaitGroup
		work := make(chan *sweepSet)
		for range 4 {
			wg.Go(func() {
				for s := range work {
					f(s)
				}
			})
		}
		for _, s := range sets {
			work <- s
		}
		close(work)
		wg.Wait()
	}
	parallel(func(s *sweepSet) { sw.check(ctx, s) })

	nss := newNamespaces(t, sw.k)
	sw.ns = map[kube.PodSecurityLevel]string{}
	byLevel := map[kube.PodSecurityLevel][]*sweepSet{}
	for _, s := range sets {
		if s.valid() && len(s.problems) == 0 {
			if _, ok := sw.ns[s.level]; !ok {
				sw.ns[s.level] = nss.create(t, nsPrefix+"-"+string(s.level), s.level)
			}
			byLevel[s.level] = append(byLevel[s.level], s)
		}
	}
	parallel(func(s *sweepSet) {
		if s.valid() && len(s.problems) == 0 {
			sw.renderFor(ctx, s, sw.ns[s.level])
		}
	})

	// Dry runs, per namespace, in batches, two at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	var errMu sync.Mutex
	var runErrs []error
	for level, group := range byLevel {
		for batch := range slices.Chunk(group, sweepBatch) {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				var ready []*sweepSet
				for _, s := range batch {
					if len(s.problems) == 0 {
						ready = append(ready, s)
					}
				}
				if len(ready) == 0 {
					return
				}
				if err := sw.dryRun(ctx, sw.ns[level], ready); err != nil {
					errMu.Lock()
					runErrs = append(runErrs, err)
					errMu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.NoError(t, errors.Join(runErrs...))
}

// protoHash makes each prototype's draws independent of the others'.
func protoHash(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// render checks a set and renders a valid one for its level's namespace in
// sw.ns (none if the level has none).
func (sw *sweep) render(ctx context.Context, s *sweepSet) {
	if sw.check(ctx, s) {
		sw.renderFor(ctx, s, sw.ns[s.level])
	}
}

// check renders a set from its flags and from its params file (both must
// agree), and for a valid set picks its Pod Security level. It reports
// whether the set is valid and rendered without problems.
func (sw *sweep) check(ctx context.Context, s *sweepSet) bool {
	res, err := sw.g.Render(ctx, s.params(sw.pr, ""))
	fileRes, fileErr := sw.g.Render(ctx, generator.NewParams(s.proto).AddFile("params.yaml", s.paramsFile()))
	if msg := sameOutcome(res, err, fileRes, fileErr); msg != "" {
		s.problems = append(s.problems, "the flags and the params file disagree: "+msg)
	}
	var verr *generator.ValidationError
	if errors.As(err, &verr) {
		s.invalid = verr
		for _, p := range verr.Problems {
			s.problems = append(s.problems, "trainsonnet: "+p.Error())
		}
		return false
	}
	if err != nil {
		s.problems = append(s.problems, "trainsonnet: "+err.Error())
		return false
	}
	objs := make([]map[string]any, 0, len(res.Objects))
	for _, o := range res.Objects {
		m, err := decodeObjects(o.JSON())
		if err != nil || len(m) != 1 {
			s.problems = append(s.problems, fmt.Sprintf("%s: cannot decode its JSON: %v", o.ID(), err))
			return false
		}
		objs = append(objs, m[0])
	}
	s.level, _ = podSecurityLevel(objs)
	return len(s.problems) == 0
}

// renderFor renders a valid set's manifests for namespace ns.
func (sw *sweep) renderFor(ctx context.Context, s *sweepSet, ns string) {
	s.ns = ns
	res, err := sw.g.Render(ctx, s.params(sw.pr, s.ns))
	if err != nil {
		s.problems = append(s.problems, "trainsonnet, with --namespace="+s.ns+": "+err.Error())
		return
	}
	s.objects = res.Objects
	if s.manifests, err = res.YAML(); err != nil {
		s.problems = append(s.problems, "trainsonnet: YAML: "+err.Error())
	}
}

// sameOutcome compares two renders of one set: both must be refused for
// the same parameters, or both give the same objects (generated ssh keys
// aside). It returns "" when they agree.
func sameOutcome(a *generator.Result, aErr error, b *generator.Result, bErr error) string {
	params := func(err error) []string {
		var v *generator.ValidationError
		if !errors.As(err, &v) {
			return nil
		}
		var ps []string
		for _, p := range v.Problems {
			ps = append(ps, p.Param)
		}
		sort.Strings(ps)
		return slices.Compact(ps)
	}
	switch {
	case (aErr == nil) != (bErr == nil):
		return fmt.Sprintf("flags: %v; params file: %v", aErr, bErr)
	case aErr != nil:
		if pa, pb := params(aErr), params(bErr); !slices.Equal(pa, pb) {
			return fmt.Sprintf("flags refused %v (%v); params file refused %v (%v)", pa, aErr, pb, bErr)
		}
		return ""
	case len(a.Objects) != len(b.Objects):
		return fmt.Sprintf("flags give %d objects, the params file %d", len(a.Objects), len(b.Objects))
	}
	for i := range a.Objects {
		ja, jb := comparableJSON(a.Objects[i]), comparableJSON(b.Objects[i])
		if ja != jb {
			return fmt.Sprintf("%s differs:\nflags:       %s\nparams file: %s", a.Objects[i].ID(), ja, jb)
		}
	}
	return ""
}

// comparableJSON is an object's JSON, without a Secret's data (generated keys
// differ between renders).
func comparableJSON(o *generator.Object) string {
	if o.Kind != "Secret" {
		return string(o.JSON())
	}
	objs, err := decodeObjects(o.JSON())
	if err != nil || len(objs) != 1 {
		return string(o.JSON())
	}
	delete(objs[0], "data")
	return fmt.Sprint(objs[0])
}

// dryRun sends the sets' manifests to the server in one server-side dry
// run and records what the server said about each set. kubectl prints each
// applied object's name, a warning before the name of the object it is
// about, and the errors at the end, naming their objects; output that
// cannot be pinned on one set makes each set of the batch go again on its
// own.
func (sw *sweep) dryRun(ctx context.Context, ns string, sets []*sweepSet) error {
	type ref struct {
		kind, name string
		set        *sweepSet
	}
	var stream bytes.Buffer
	var objs []ref
	owner := map[string]*sweepSet{} // object name -> its set; nil: more than one
	for _, s := range sets {
		if stream.Len() > 0 {
			stream.WriteString("---\n")
		}
		stream.Write(s.manifests)
		for _, o := range s.objects {
			objs = append(objs, ref{o.Kind, o.Name, s})
			if prev, seen := owner[o.Name]; seen && prev != s {
				owner[o.Name] = nil
			} else {
				owner[o.Name] = s
			}
		}
	}
	args := slices.DeleteFunc(kubectlApplyArgs(ns), func(a string) bool { return a == "--warnings-as-errors" })
	// The combined stream (warnings before their object's name), failed or not.
	outBytes, runErr := sw.k.RunCombined(ctx, stream.Bytes(), args...)
	out := string(outBytes)
	if ctx.Err() != nil {
		return fmt.Errorf("sweep dry run: %w", runErr)
	}

	problems := map[*sweepSet][]string{}
	applied := make([]bool, len(objs))
	ambiguous := false
	next := 0
	var pending, unnamed []string
	// attribute pins messages on the set of objects [from, to].
	attribute := func(msgs []string, from, to int) {
		if len(msgs) == 0 {
			return
		}
		var s *sweepSet
		for i := from; i <= to && i < len(objs); i++ {
			if s != nil && s != objs[i].set {
				ambiguous = true
				return
			}
			s = objs[i].set
		}
		if s == nil {
			ambiguous = true
			return
		}
		problems[s] = append(problems[s], msgs...)
	}
	for _, e := range parseApplyOutput(out) {
		switch e.kind {
		case entryWarning:
			pending = append(pending, e.text)
		case entryApplied:
			j := next
			for j < len(objs) && (objs[j].name != e.name || !resourceOfKind(e.resource, objs[j].kind)) {
				j++
			}
			if j == len(objs) {
				ambiguous = true
				continue
			}
			attribute(pending, next, j)
			pending = nil
			applied[j] = true
			next = j + 1
		case entryError:
			var s *sweepSet
			for _, name := range mentionedNames(e.text) {
				o, ok := owner[name]
				if !ok {
					continue
				}
				if o == nil || (s != nil && s != o) {
					s = nil
					break
				}
				s = o
			}
			if s == nil && len(sets) == 1 {
				s = sets[0]
			}
			if s == nil {
				unnamed = append(unnamed, e.text)
				continue
			}
			problems[s] = append(problems[s], e.text)
		}
	}
	attribute(pending, next, len(objs)-1)
	// An error that names no object of the batch (a request too large,
	// say) belongs to the one set with objects that were not applied.
	if len(unnamed) > 0 {
		var failing []*sweepSet
		for i, o := range objs {
			if !applied[i] && !slices.Contains(failing, o.set) {
				failing = append(failing, o.set)
			}
		}
		if len(failing) == 1 {
			problems[failing[0]] = append(problems[failing[0]], unnamed...)
		} else {
			ambiguous = true
		}
	}
	for i, o := range objs {
		if !applied[i] && len(problems[o.set]) == 0 {
			if len(sets) > 1 {
				ambiguous = true
				break
			}
			problems[o.set] = append(problems[o.set], fmt.Sprintf("%s %s was not applied; kubectl said:\n%s", o.kind, o.name, out))
		}
	}
	if runErr != nil && len(problems) == 0 {
		if len(sets) > 1 {
			ambiguous = true
		} else {
			problems[sets[0]] = append(problems[sets[0]], fmt.Sprintf("kubectl failed (%v):\n%s", runErr, out))
		}
	}
	if ambiguous && len(sets) > 1 {
		for _, s := range sets {
			if err := sw.dryRun(ctx, ns, []*sweepSet{s}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range sets {
		s.problems = append(s.problems, problems[s]...)
	}
	return nil
}

// summarize logs the sweep's statistics and reports every rejected set.
func (sw *sweep) summarize(t testing.TB, sets []*sweepSet) {
	var accepted, invalid, failed []*sweepSet
	perLevel := map[kube.PodSecurityLevel]int{}
	invalidBy := map[string]int{}
	what := sw.what + " " + sw.pr.Name
	if sw.what == "sweep" {
		what += fmt.Sprintf(" seed %d", sw.seed)
	}
	for _, s := range sets {
		switch {
		case s.valid() && len(s.problems) == 0:
			accepted = append(accepted, s)
			perLevel[s.level]++
		case !s.valid() && len(s.problems) == len(s.invalid.Problems):
			invalid = append(invalid, s)
			for _, p := range s.invalid.Problems {
				invalidBy[p.Param]++
				if p.Param == "" || sw.pr.Param(p.Param) == nil {
					t.Errorf("%s set %d: a validation error must name a declared parameter, got %q (%s)\nreplay: %s",
						what, s.index, p.Param, p.Error(), s.command())
				}
			}
		default:
			failed = append(failed, s)
		}
	}
	n := len(sets)
	t.Logf("%s: %d sets: %d valid and accepted by the API server (restricted %d, baseline %d, privileged %d), "+
		"%d invalid (ValidationError), %d failed",
		what, n, len(accepted), perLevel[kube.Restricted], perLevel[kube.Baseline], perLevel[kube.Privileged],
		len(invalid), len(failed))
	t.Logf("%s: invalid sets by parameter named: %s", what, countsText(invalidBy))
	for i, s := range failed {
		if i < maxDetailedReports {
			t.Error(s.report())
			continue
		}
		t.Errorf("%s set %d rejected too: %s", what, s.index, s.command())
	}
	assert.Lessf(t, len(invalid), len(sets)-len(invalid),
		"%s: invalid sets must be a minority (by parameter: %s)", what, countsText(invalidBy))
	assert.NotEmptyf(t, accepted, "%s: no set was accepted", what)
}

// countsText formats counts as "a 3, b 1", largest first.
func countsText(m map[string]int) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// boundCompanions are the values a bound b of p needs beside it, where p
// is declared related to another parameter (param.Relation: pytorch's
// elastic.minNodes at most workers, 2 by default): the other takes the
// same value, so that the bound itself is what the API server is shown.
func boundCompanions(pr *generator.Prototype, p *param.Param, b int64) []drawnValue {
	var out []drawnValue
	for _, r := range []*param.Relation{p.AtMost, p.AtLeast} {
		if r == nil {
			continue
		}
		other := pr.Param(r.Param)
		if other == nil || (other.Min != nil && b < *other.Min) || (other.Max != nil && b > *other.Max) {
			continue
		}
		out = append(out, drawnValue{param: other, text: strconv.FormatInt(b, 10), value: b})
	}
	return out
}

// TestDeclaredBounds renders every int and seconds parameter of every
// prototype at each bound it declares, one at a time (everything else at
// its default, but for the parameter a declared relation ties it to:
// boundCompanions), and sends each to the API server like a sweep set: a
// value the declaration allows must not be one the server refuses. (The
// sweep caps parameters that scale the output; this is where their
// maximum is checked.)
func TestDeclaredBounds(t *testing.T) {
	k := kube.E2E(t)
	t.Parallel()
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	for _, pr := range protos {
		t.Run(pr.Name, func(t *testing.T) {
			t.Parallel()
			sw := &sweep{what: "bounds", k: k, g: g, pr: pr}
			nameParam := pr.Param("name")
			var sets []*sweepSet
			for _, p := range param.Leaves(pr.Params) {
				if p.Type != param.TypeInt && p.Type != param.TypeDuration {
					continue
				}
				var bounds []int64
				if p.Min != nil {
					bounds = append(bounds, *p.Min)
				}
				if p.Max != nil && (p.Min == nil || *p.Max != *p.Min) {
					bounds = append(bounds, *p.Max)
				}
				for _, b := range bounds {
					name := "bounds-" + strconv.Itoa(len(sets))
					sets = append(sets, &sweepSet{index: len(sets), proto: pr.Name, values: append([]drawnValue{
						{param: nameParam, text: name, value: name},
						{param: p, text: strconv.FormatInt(b, 10), value: b},
					}, boundCompanions(pr, p, b)...)})
				}
			}
			if len(sets) == 0 {
				t.Skipf("%s declares no bounded int or seconds parameter", pr.Name)
			}
			sw.evaluate(t, "e2e-bounds-"+pr.Name, sets)
			for _, s := range sets {
				assert.Truef(t, s.valid(), "%s=%s alone must be valid: %v", s.values[1].param.Path, s.values[1].text, s.problems)
			}
			sw.summarize(t, sets)
		})
	}
}
