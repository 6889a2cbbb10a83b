package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trainsonnet/trainsonnet/generator"
	"github.com/trainsonnet/trainsonnet/generator/format"
	"github.com/trainsonnet/trainsonnet/generator/param"
)

// This file draws random parameter sets from a prototype's declarations
// (param.Leaves: types, bounds, formats, the prototype's own formats among
// them, and relations such as pytorch's elastic.minNodes atMost workers),
// and from what rendering measures (the parameters that scale the output,
// where a path parameter without a default mounts). Nothing here knows a
// prototype: no parameter is named but the two every prototype has
// (lib/common.libsonnet): name, drawn unique per set, and namespace, which
// the sweep sets to its test namespace. The rules between parameters that
// a prototype's validate keeps (horovod-dask's Dask GPUs within the
// worker's, horovod-spark's cores and task size, sshd's port with
// runAsUser, a port used twice) are not repeated here: a set the
// prototype refuses is usually fixed as its user fixes it, by drawing
// again what the refusal names (fix).

// sweepCountCap bounds every int parameter whose value scales the size of
// the output (openmpi's workers: one hostfile line and one pod each): such
// parameters are drawn from [min, min+15], so at most 16 for min 1, which
// keeps each set's manifests a few kB. Which parameters scale the output
// is measured, not declared: see sizeScalingInts.
const sweepCountCap = 16

// interestingInts are drawn now and then for any int parameter whose range
// holds them: edges and well-known values (ssh's port 22, privileged
// ports, a typical uid, int32's edge).
var interestingInts = []int64{0, 1, 2, 22, 80, 443, 1000, 1023, 1024, 2222, 65535, math.MaxInt32, math.MaxInt32 + 1}

// A drawnValue is one parameter's value, as the flag text the CLI takes
// (and generator.Params.SetText parses the same way) and as the value a
// params file holds.
type drawnValue struct {
	param *param.Param
	text  string
	value any
}

// flagTexts is the value as the CLI is given it, one text per occurrence
// of the flag: a list declared without a separator (driver.args) takes one
// item per flag, and its items may hold commas.
func (v drawnValue) flagTexts() []string {
	if v.param.Type == param.TypeList && v.param.Separator == "" {
		if items, ok := v.value.([]any); ok {
			texts := make([]string, len(items))
			for i, it := range items {
				texts[i] = fmt.Sprint(it)
			}
			return texts
		}
	}
	return []string{v.text}
}

// drawer draws parameter sets for one prototype.
type drawer struct {
	*format.Rand
	leaves []*param.Param
	caps   map[string]int64 // int parameters that scale the output -> max
	// perStep is, per capped parameter, the bytes each step adds.
	perStep map[string]int
	// pathDefaults are the measured defaults of path parameters declared
	// without one (mountPathDefaults).
	pathDefaults map[string]string
	// skipped records parameters no value can be drawn for (a format or
	// object kind this file does not know); they stay unset.
	skipped map[string]string
	// refused renders a set and returns the generator's refusal, or nil
	// (fix).
	refused func([]drawnValue) *generator.ValidationError
}

// fixPct is how often a refused set is fixed (fix); the rest stay
// refused, for the sweep to check that each refusal names a declared
// parameter.
const fixPct = 80

// newDrawer makes the drawer of one prototype's sets: its caps and path
// defaults measured by rendering, its random numbers from seed.
func newDrawer(ctx context.Context, g *generator.Generator, pr *generator.Prototype, seed uint64) *drawer {
	caps, perStep := sizeScalingInts(ctx, g, pr)
	return &drawer{
		Rand:         format.NewRand(rand.New(rand.NewPCG(seed, protoHash(pr.Name)))),
		caps:         caps,
		perStep:      perStep,
		pathDefaults: mountPathDefaults(ctx, g, pr),
		skipped:      map[string]string{},
		refused: func(values []drawnValue) *generator.ValidationError {
			_, err := g.Render(ctx, (&sweepSet{proto: pr.Name, values: values}).params(pr, ""))
			var verr *generator.ValidationError
			if errors.As(err, &verr) {
				return verr
			}
			return nil // valid, or a failure the caller's render reports
		},
	}
}

// sizeScalingInts measures which int parameters scale the output: each is
// rendered at min+1 and min+9 (every other parameter at its default), and
// one that adds 16 bytes or more per step is capped at min+15. It returns
// the caps and, per capped parameter, the bytes per step.
func sizeScalingInts(ctx context.Context, g *generator.Generator, pr *generator.Prototype) (map[string]int64, map[string]int) {
	caps, perStep := map[string]int64{}, map[string]int{}
	size := func(p *param.Param, v int64) (int, bool) {
		res, err := g.Render(ctx, generator.NewParams(pr.Name).Set("name", "probe").Set(p.Path, v))
		if err != nil {
			return 0, false
		}
		y, err := res.YAML()
		return len(y), err == nil
	}
	for _, p := range param.Leaves(pr.Params) {
		if p.Type != param.TypeInt {
			continue
		}
		lo := int64(0)
		if p.Min != nil {
			lo = *p.Min
		}
		if p.Max != nil && *p.Max < lo+9 {
			continue
		}
		a, okA := size(p, lo+1)
		b, okB := size(p, lo+9)
		if okA && okB && b-a >= 8*16 {
			caps[p.Path] = lo + sweepCountCap - 1
			perStep[p.Path] = (b - a) / 8
		}
	}
	return caps, perStep
}

// probePath is the value mountPathDefaults sets a path parameter to.
const probePath = "/trainsonnet-probe"

// mountPathDefaults measures where the prototype mounts a volume when an
// absolute-path parameter declared without a default (the storage's
// mountPath, whose default the prototype works out) is left unset: the
// defaults are rendered with the parameter unset and at probePath, and the
// one mount path that moves is its default. Paths drawn later are drawn
// under it, as under a declared default.
func mountPathDefaults(ctx context.Context, g *generator.Generator, pr *generator.Prototype) map[string]string {
	mounts := func(ps *generator.Params) map[string]bool {
		res, err := g.Render(ctx, ps.Set("name", "probe"))
		if err != nil {
			return nil
		}
		out := map[string]bool{}
		for _, o := range res.Objects {
			objs, err := decodeObjects(o.JSON())
			if err != nil || len(objs) != 1 {
				continue
			}
			for _, ps := range podSpecsOf(objs[0]) {
				for _, kind := range []string{"initContainers", "containers"} {
					for _, c := range asList(ps.spec[kind]) {
						for _, m := range asList(asMap(c)["volumeMounts"]) {
							if mp, ok := asMap(m)["mountPath"].(string); ok {
								out[mp] = true
							}
						}
					}
				}
			}
		}
		return out
	}
	base := mounts(generator.NewParams(pr.Name))
	defaults := map[string]string{}
	for _, p := range param.Leaves(pr.Params) {
		if p.Type != param.TypeString || p.Format != "absPath" || p.Default != nil {
			continue
		}
		probed := mounts(generator.NewParams(pr.Name).Set(p.Path, probePath))
		if base == nil || probed == nil || !probed[probePath] {
			continue
		}
		var moved []string
		for mp := range base {
			if !probed[mp] {
				moved = append(moved, mp)
			}
		}
		if len(moved) == 1 {
			defaults[p.Path] = moved[0]
		}
	}
	return defaults
}

// drawSet draws one parameter set. Top-level parameters are each set with
// probability 0.4. A group (ssh, s3, launcher) is, as a whole, left unset
// (50%), set completely (40%: "all of s3 set or none") or set member by
// member (10%, each member 50%). Values are valid for their declared type
// and format, and usually keep the relations declared between them
// (relate); combinations may break the prototype's own rules (a mount
// without its volume, s3.downloadFrom without s3.downloadTo, host network
// with ssh port 22), which the generator reports as a ValidationError,
// and which a set usually has fixed before it is returned (fix).
func (d *drawer) drawSet(pr *generator.Prototype, index int) []drawnValue {
	set := map[string]bool{}
	d.decide(pr.Params, "each", 40, set, false)
	leaves := param.Leaves(pr.Params)
	d.leaves = leaves
	// Volume mounts need volumes: when mounts are drawn but no volumes,
	// usually (90%) draw volumes too. The rest are mounts of no volume,
	// which the prototype must refuse.
	// A group's mounts (horovod-dask's worker.volumeMounts) may be of its
	// volumes or of the top-level ones; the top-level mounts only of the
	// top-level volumes.
	for _, m := range leaves {
		if !isMount(m) || !set[m.Path] {
			continue
		}
		eligible := func(v *param.Param) bool { return isVolume(v) && (groupOf(v) == "" || groupOf(v) == groupOf(m)) }
		if !slices.ContainsFunc(leaves, func(v *param.Param) bool { return eligible(v) && set[v.Path] }) && d.IntN(100) < 90 {
			for _, v := range leaves {
				if eligible(v) && groupOf(v) == groupOf(m) {
					set[v.Path] = true
				}
			}
		}
	}
	// A parameter that needs another (params.needs: workloadPriorityClass
	// needs queue) usually (90%) comes with it, as a user's does; the rest
	// come alone, which the generator must refuse.
	for _, p := range leaves {
		if p.Needs != nil && set[p.Path] && d.IntN(100) < 90 {
			set[p.Needs.Param] = true
		}
	}
	values := map[string]drawnValue{}
	// Objects referring to others come after them (volume mounts after
	// volumes), absolute paths last: they are drawn relative to paths drawn
	// before, those with a default (declared or measured) first.
	hasDefault := func(p *param.Param) bool {
		_, measured := d.pathDefaults[p.Path]
		return p.Default != nil || measured
	}
	passes := []func(*param.Param) bool{
		func(p *param.Param) bool { return !isMount(p) && !isAbsPath(p) },
		isMount,
		func(p *param.Param) bool { return isAbsPath(p) && hasDefault(p) },
		func(p *param.Param) bool { return isAbsPath(p) && !hasDefault(p) },
	}
	for _, pass := range passes {
		for _, p := range leaves {
			if !pass(p) {
				continue
			}
			switch {
			case p.Path == "name":
				v := d.name(index)
				values[p.Path] = drawnValue{p, v, v}
				continue
			case p.Path == "namespace":
				continue // the sweep's namespace
			case !set[p.Path]:
				continue
			}
			if v, ok := d.value(p, values); ok {
				values[p.Path] = v
			}
		}
	}
	d.relate(values)
	d.fix(index, values)
	return d.ordered(values)
}

// ordered is a set's values in the order of the declarations.
func (d *drawer) ordered(values map[string]drawnValue) []drawnValue {
	out := make([]drawnValue, 0, len(values))
	for _, p := range d.leaves {
		if v, ok := values[p.Path]; ok {
			out = append(out, v)
		}
	}
	return out
}

// relate makes a drawn value that breaks a relation its declaration
// states (param.Relation: pytorch's elastic.minNodes at most workers)
// usually (90%) keep it, as a user's do (drawn independently from
// [1, 1000], minNodes would nearly always exceed workers), leaving the
// rest to break it, which the generator must refuse.
func (d *drawer) relate(values map[string]drawnValue) {
	valueOf := func(p *param.Param) (int64, bool) {
		if v, ok := values[p.Path]; ok {
			n, rule := p.Parse(v.text)
			return asInt64(n), rule == ""
		}
		n, ok := p.Default.(int64)
		return n, ok
	}
	for _, p := range d.leaves {
		v, drawn := values[p.Path]
		if !drawn {
			continue
		}
		for _, rel := range []struct {
			r      *param.Relation
			atMost bool
		}{{p.AtMost, true}, {p.AtLeast, false}} {
			var other *param.Param
			if rel.r != nil {
				other = d.param(rel.r.Param)
			}
			if other == nil {
				continue
			}
			n, ok := valueOf(p)
			bound, bok := valueOf(other)
			if !ok || !bok || (rel.atMost && n <= bound) || (!rel.atMost && n >= bound) || d.IntN(100) >= 90 {
				continue
			}
			within := *p // the declared bounds, narrowed by the relation
			if rel.atMost {
				within.Max = &bound
			} else {
				within.Min = &bound
			}
			if within.Min != nil && within.Max != nil && *within.Min > *within.Max {
				continue // no value keeps it
			}
			n = d.intIn(&within)
			values[p.Path] = drawnValue{v.param, strconv.FormatInt(n, 10), n}
		}
	}
}

// fix does with a refused set what its user usually (fixPct) does: draws
// again what the refusal names and tries again, three times, then leaves
// out what is still named (three times more: leaving one out may break a
// rule of another). The rules of one prototype's numbers
// (horovod-spark's cores and task size, horovod-dask's Dask GPUs) and of
// every job (sshd's port with runAsUser, each port once, directories on
// the storage, a limit set once) are the prototype's, in its validate and
// the pod check; the refusal names the parameter at fault.
func (d *drawer) fix(index int, values map[string]drawnValue) {
	if d.refused == nil || d.IntN(100) >= fixPct {
		return
	}
	for round := range 6 {
		verr := d.refused(d.ordered(values))
		if verr == nil {
			return
		}
		changed := false
		for _, pb := range verr.Problems {
			v, drawn := values[pb.Param]
			switch {
			case !drawn:
				continue
			case pb.Param == "name":
				n := d.name(index)
				values["name"] = drawnValue{v.param, n, n}
			case round < 3:
				nv, ok := d.value(v.param, values)
				if !ok {
					delete(values, pb.Param)
				} else {
					values[pb.Param] = nv
				}
			default:
				delete(values, pb.Param)
			}
			changed = true
		}
		if !changed {
			return // what is at fault was not drawn: a default's rule
		}
		d.relate(values)
	}
}

// param is the leaf at path, or nil.
func (d *drawer) param(path string) *param.Param {
	for _, p := range d.leaves {
		if p.Path == path {
			return p
		}
	}
	return nil
}

// asInt64: a normalized int or seconds value.
func asInt64(v any) int64 {
	n, _ := v.(int64)
	return n
}

// decide marks which leaves get a value (see drawSet). Within a group,
// groups side by side are usually alternatives (a store is a claim, NFS or
// Azure Files): at most one of them, picked at random, is drawn.
func (d *drawer) decide(ps []*param.Param, mode string, pct int, set map[string]bool, inGroup bool) {
	var subgroups []*param.Param
	for _, p := range ps {
		if p.Type == param.TypeGroup {
			subgroups = append(subgroups, p)
		}
	}
	var chosen *param.Param
	if inGroup && mode != "none" && len(subgroups) > 1 {
		chosen = subgroups[d.IntN(len(subgroups))]
	}
	for _, p := range ps {
		if p.Type == param.TypeGroup {
			m := "each"
			switch x := d.IntN(100); {
			case mode == "none" || x < 50 || (chosen != nil && p != chosen):
				m = "none"
			case x < 90:
				m = "all"
			}
			d.decide(p.Params, m, 50, set, true)
			continue
		}
		switch mode {
		case "none":
			set[p.Path] = false
		case "all":
			set[p.Path] = true
		default:
			set[p.Path] = d.IntN(100) < pct
		}
	}
}

// groupOf: the group of a parameter ("" at the top).
func groupOf(p *param.Param) string { return p.Path[:max(0, strings.LastIndexByte(p.Path, '.'))] }

func isMount(p *param.Param) bool {
	return p.Type == param.TypeObject && p.Kind == "core/v1.VolumeMount"
}

func isVolume(p *param.Param) bool {
	return p.Type == param.TypeObject && p.Kind == "core/v1.Volume"
}

func isAbsPath(p *param.Param) bool {
	return (p.Type == param.TypeString || p.Type == param.TypeList) && (p.Format == "absPath" || p.Format == "absPathOrURI")
}

// value draws a value for p; drawn holds the values drawn so far.
func (d *drawer) value(p *param.Param, drawn map[string]drawnValue) (drawnValue, bool) {
	switch p.Type {
	case param.TypeString:
		s, ok := d.formatted(p.FormatSpec(), drawn)
		if !ok {
			d.skipped[p.Path] = "string format " + strconv.Quote(p.Format)
			return drawnValue{}, false
		}
		return drawnValue{p, s, s}, true
	case param.TypeInt:
		n := d.intIn(p)
		return drawnValue{p, strconv.FormatInt(n, 10), n}, true
	case param.TypeBool:
		b := d.IntN(2) == 0
		return drawnValue{p, strconv.FormatBool(b), b}, true
	case param.TypeEnum:
		// Half the time the default, as most users leave it: a value a
		// prototype always refuses (horovod's OrderedReady) must not
		// make most sets invalid.
		s := p.Values[d.IntN(len(p.Values))]
		if def, ok := p.Default.(string); ok && d.IntN(2) == 0 {
			s = def
		}
		return drawnValue{p, s, s}, true
	case param.TypeQuantity:
		var q string
		switch p.Format {
		case "":
			q = d.quantity()
		case "bytes":
			q = d.bytes()
		default:
			d.skipped[p.Path] = "quantity unit " + strconv.Quote(p.Format)
			return drawnValue{}, false
		}
		return drawnValue{p, q, q}, true
	case param.TypeDuration:
		n := d.intIn(p)
		text := d.seconds(n)
		var v any = n
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			v = text
		}
		return drawnValue{p, text, v}, true
	case param.TypeMap:
		return d.mapValue(p, drawn)
	case param.TypeList:
		return d.listValue(p, drawn)
	case param.TypeObject:
		v, ok := d.object(p, drawn)
		if !ok {
			d.skipped[p.Path] = "object kind " + p.Kind
			return drawnValue{}, false
		}
		j, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return drawnValue{p, string(j), v}, true
	}
	d.skipped[p.Path] = "type " + string(p.Type)
	return drawnValue{}, false
}

// intIn draws an int (or seconds) within the parameter's bounds (and its
// cap, for parameters that scale the output): small values near the
// minimum, the bounds, interestingInts, and log-uniform values across the
// whole range (beyond int32 when there is no maximum).
func (d *drawer) intIn(p *param.Param) int64 {
	lo, hi := int64(0), int64(math.MaxInt64)
	if p.Min != nil {
		lo = *p.Min
	}
	if p.Max != nil {
		hi = *p.Max
	}
	if c, ok := d.caps[p.Path]; ok {
		hi = min(hi, c)
	}
	in := func(v int64) bool { return v >= lo && v <= hi }
	switch x := d.IntN(100); {
	case x < 40:
		return lo + d.Int64N(min(hi-lo, 15)+1)
	case x < 55:
		var cands []int64
		for _, v := range interestingInts {
			if in(v) {
				cands = append(cands, v)
			}
		}
		if len(cands) > 0 {
			return cands[d.IntN(len(cands))]
		}
		return lo
	case x < 62:
		return lo
	case x < 67 && p.Max != nil:
		return hi
	}
	// log-uniform: up to 2^33 above the minimum
	v := lo + d.Int64N(int64(1)<<(1+d.IntN(33)))
	if !in(v) {
		v = lo + d.Int64N(min(hi-lo, math.MaxInt64-1)+1)
	}
	return v
}

// seconds writes n as "300", "300s", "5m" or "2h", as users may.
func (d *drawer) seconds(n int64) string {
	switch x := d.IntN(4); {
	case x == 0 && n > 0 && n%3600 == 0:
		return strconv.FormatInt(n/3600, 10) + "h"
	case x == 1 && n > 0 && n%60 == 0:
		return strconv.FormatInt(n/60, 10) + "m"
	case x == 2:
		return strconv.FormatInt(n, 10) + "s"
	}
	return strconv.FormatInt(n, 10)
}

// quantity draws a Kubernetes quantity: mostly whole numbers with or
// without a binary or decimal suffix, sometimes milli values, decimals or
// exponents.
func (d *drawer) quantity() string {
	suffixes := []string{"", "", "Ki", "Mi", "Gi", "k", "M", "G"}
	switch x := d.IntN(40); {
	case x < 26:
		return strconv.Itoa(1+d.IntN(64)) + suffixes[d.IntN(len(suffixes))]
	case x < 28:
		return strconv.Itoa(1+d.IntN(8000)) + "m"
	case x < 30:
		return fmt.Sprintf("%d.%d%s", d.IntN(16), 1+d.IntN(9), []string{"", "Gi", "Mi", "Ti"}[d.IntN(4)])
	case x < 32:
		return "0"
	case x < 34:
		return fmt.Sprintf("%de%d", 1+d.IntN(9), d.IntN(10))
	}
	return strconv.Itoa(1+d.IntN(512)) + []string{"Mi", "Gi"}[d.IntN(2)]
}

// bytes draws a whole number of bytes (a quantity of unit "bytes").
func (d *drawer) bytes() string {
	switch x := d.IntN(10); {
	case x < 6:
		return strconv.Itoa(1+d.IntN(512)) + []string{"Mi", "Gi", "Ki", "M", "G"}[d.IntN(5)]
	case x < 7:
		return "0"
	case x < 8:
		return fmt.Sprintf("%d.5Gi", d.IntN(64))
	case x < 9:
		return fmt.Sprintf("%de%d", 1+d.IntN(9), 3+d.IntN(8))
	}
	return strconv.Itoa(1 + d.IntN(1<<30))
}

// resourceQuantity draws a limit valid for the resource named: whole bytes
// for memory and storage, whole pages for huge pages, whole devices for
// extended resources (the rules of the format "resourceName").
func (d *drawer) resourceQuantity(name string) string {
	switch {
	case name == "memory" || name == "ephemeral-storage":
		return d.bytes()
	case strings.HasPrefix(name, "hugepages-"):
		page, err := resource.ParseQuantity(strings.TrimPrefix(name, "hugepages-"))
		if err != nil {
			return d.bytes()
		}
		return strconv.FormatInt(int64(1+d.IntN(8))*page.Value(), 10)
	case strings.Contains(name, "/"):
		return strconv.Itoa(d.IntN(65))
	}
	return d.quantity()
}

// formatted draws a string valid for a parameter's format (built in, or
// declared by the prototype), with the format's own drawer
// (generator/format), absolute paths mostly under the ones in absPathPool.
func (d *drawer) formatted(f *format.Format, drawn map[string]drawnValue) (string, bool) {
	d.Paths = d.absPathPool(drawn)
	return f.Draw(d.Rand), true
}

// name draws the set's unique name: a DNS-1035 label of 1 to 62
// characters, mostly short, then "-<index>".
func (d *drawer) name(index int) string {
	suffix := "-" + strconv.Itoa(index)
	var n int
	switch x := d.IntN(100); {
	case x < 70:
		n = 1 + d.IntN(10)
	case x < 90:
		n = 11 + d.IntN(30)
	default:
		n = 41 + d.IntN(22)
	}
	n = max(1, min(n, 63-len(suffix)))
	return d.DNS1035Label(n) + suffix
}

// absPathPool is where absolute paths are drawn from: the value of every
// absolute-path parameter that has a default, declared or measured (a
// directory the prototype mounts, such as openmpi's dataDir or the
// storage's mountPath; as drawn so far, else the default),
// and the mount paths of volume mounts. A prototype's paths often have to
// be under one of those (openmpi: S3 staging paths under dataDir or a
// volume mount).
func (d *drawer) absPathPool(drawn map[string]drawnValue) []string {
	var pool []string
	for _, p := range d.leaves {
		v, isDrawn := drawn[p.Path]
		def, hasDefault := p.Default.(string)
		if m, ok := d.pathDefaults[p.Path]; ok && !hasDefault {
			def, hasDefault = m, true
		}
		switch {
		case isAbsPath(p) && p.Type == param.TypeString && hasDefault && isDrawn:
			pool = append(pool, v.text)
		case isAbsPath(p) && p.Type == param.TypeString && hasDefault:
			pool = append(pool, def)
		case isMount(p) && isDrawn && !strings.Contains(p.Path, "."): // a group's mounts are in some pods only
			for _, m := range asList(v.value) {
				if mp, ok := asMap(m)["mountPath"].(string); ok {
					pool = append(pool, mp)
				}
			}
		}
	}
	slices.Sort(pool)
	return slices.Compact(pool)
}

// mapValue draws one to three entries with keys and values valid for the
// map's Format and ValueFormat.
func (d *drawer) mapValue(p *param.Param, drawn map[string]drawnValue) (drawnValue, bool) {
	m := map[string]any{}
	for i := 1 + d.IntN(3); i > 0; i-- {
		var k, v string
		var ok bool
		if p.Format == "" {
			k = strings.NewReplacer("=", "", ",", "").Replace(d.Text(false))
			if strings.TrimSpace(k) != k || k == "" {
				k = "k" + strconv.Itoa(i)
			}
		} else if k, ok = d.formatted(p.FormatSpec(), drawn); !ok {
			d.skipped[p.Path] = "map key format " + strconv.Quote(p.Format)
			return drawnValue{}, false
		}
		switch {
		case p.ValueFormat == "quantity" && p.Format == "resourceName":
			v = d.resourceQuantity(k)
		case p.ValueFormat == "quantity":
			v = d.quantity()
		case p.ValueFormat == "":
			v = d.Text(true)
		default:
			if v, ok = d.formatted(p.ValueFormatSpec(), drawn); !ok {
				d.skipped[p.Path] = "map value format " + strconv.Quote(p.ValueFormat)
				return drawnValue{}, false
			}
		}
		m[k] = v
	}
	keys := sortedKeys(m)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + m[k].(string)
	}
	return drawnValue{p, strings.Join(pairs, ","), m}, true
}

// listValue draws one to three distinct items (integers within the list's
// bounds for items "int").
func (d *drawer) listValue(p *param.Param, drawn map[string]drawnValue) (drawnValue, bool) {
	var items []any
	var texts []string
	for i := 1 + d.IntN(3); i > 0; i-- {
		var s string
		switch p.Format {
		case "int":
			s = strconv.FormatInt(d.intIn(&param.Param{Type: param.TypeInt, Min: p.Min, Max: p.Max}), 10)
		default:
			var ok bool
			if s, ok = d.formatted(p.FormatSpec(), drawn); !ok {
				d.skipped[p.Path] = "list item format " + strconv.Quote(p.Format)
				return drawnValue{}, false
			}
			if s == "" || (p.Separator != "" && strings.Contains(s, p.Separator)) || strings.TrimSpace(s) != s {
				continue // not expressible as a separated flag
			}
		}
		if slices.Contains(texts, s) {
			continue
		}
		texts = append(texts, s)
		if p.Format == "int" {
			n, _ := strconv.ParseInt(s, 10, 64)
			items = append(items, n)
		} else {
			items = append(items, s)
		}
	}
	if len(items) == 0 {
		return drawnValue{}, false
	}
	return drawnValue{p, strings.Join(texts, ","), items}, true
}

// object draws a value for an object parameter from a few valid objects
// of its kind. Kinds without a generator here are left unset (and listed).
func (d *drawer) object(p *param.Param, drawn map[string]drawnValue) (any, bool) {
	var one func(i int, names map[string]bool) map[string]any
	switch p.Kind {
	case "core/v1.Volume":
		one = d.volume
	case "core/v1.VolumeMount":
		// The mounts of a group (horovod-dask's worker.volumeMounts) are of
		// its volumes or of the top-level ones; the top-level mounts, in
		// every pod, of the top-level volumes only.
		var volumes []string
		for _, v := range drawn {
			if isVolume(v.param) && (groupOf(v.param) == "" || groupOf(v.param) == groupOf(p)) {
				for _, vol := range asList(v.value) {
					volumes = append(volumes, asMap(vol)["name"].(string))
				}
			}
		}
		slices.Sort(volumes)
		one = func(i int, used map[string]bool) map[string]any { return d.mount(volumes, used) }
	case "core/v1.Toleration":
		one = func(int, map[string]bool) map[string]any { return d.toleration() }
	case "core/v1.EnvVar":
		one = func(int, map[string]bool) map[string]any {
			return map[string]any{"name": d.EnvName(), "value": d.Text(true)}
		}
	case "core/v1.LocalObjectReference":
		one = func(int, map[string]bool) map[string]any { return map[string]any{"name": d.Subdomain()} }
	case "networking/v1.NetworkPolicyPeer":
		one = func(int, map[string]bool) map[string]any { return d.peer() }
	case "core/v1.ResourceRequirements":
		one = func(int, map[string]bool) map[string]any { return d.resources() }
	default:
		return nil, false
	}
	if !p.List {
		return one(0, map[string]bool{}), true
	}
	used := map[string]bool{}
	var list []any
	for i := 1 + d.IntN(3); i > 0; i-- {
		list = append(list, one(i, used))
	}
	return list, true
}

// volume draws a volume with a fresh name, of one of the common types
// (hostPath too: it makes the set need a privileged namespace).
func (d *drawer) volume(_ int, used map[string]bool) map[string]any {
	name := "v-" + d.DNS1123Label(1+d.IntN(12))
	for used[name] {
		name += "x"
	}
	used[name] = true
	v := map[string]any{"name": name}
	switch d.IntN(9) {
	case 0:
		v["emptyDir"] = map[string]any{}
	case 1:
		v["emptyDir"] = map[string]any{"medium": "Memory", "sizeLimit": strconv.Itoa(1+d.IntN(64)) + "Gi"}
	case 2:
		v["configMap"] = map[string]any{"name": d.Subdomain(), "optional": true, "defaultMode": 0o444}
	case 3:
		v["secret"] = map[string]any{"secretName": d.Subdomain(), "defaultMode": 0o400}
	case 4:
		v["persistentVolumeClaim"] = map[string]any{"claimName": d.Subdomain(), "readOnly": d.IntN(2) == 0}
	case 5:
		v["downwardAPI"] = map[string]any{"items": []any{map[string]any{"path": "labels", "fieldRef": map[string]any{"fieldPath": "metadata.labels"}}}}
	case 6:
		v["projected"] = map[string]any{"sources": []any{
			map[string]any{"configMap": map[string]any{"name": d.Subdomain()}},
			map[string]any{"serviceAccountToken": map[string]any{"path": "token", "expirationSeconds": 3600}},
		}}
	case 7:
		v["ephemeral"] = map[string]any{"volumeClaimTemplate": map[string]any{"spec": map[string]any{
			"accessModes": []any{"ReadWriteOnce"},
			"resources":   map[string]any{"requests": map[string]any{"storage": strconv.Itoa(1+d.IntN(100)) + "Gi"}},
		}}}
	default:
		v["hostPath"] = map[string]any{"path": "/var/lib/" + d.DNS1123Label(1+d.IntN(10)), "type": "DirectoryOrCreate"}
	}
	return v
}

// mount draws a volume mount of one of the drawn volumes (5%: of a volume
// that does not exist, which the prototype must refuse) on a fresh path.
func (d *drawer) mount(volumes []string, used map[string]bool) map[string]any {
	name := "v-" + d.DNS1123Label(1+d.IntN(12))
	if len(volumes) > 0 && d.IntN(100) < 95 {
		name = volumes[d.IntN(len(volumes))]
	}
	p := "/mnt/" + d.DNS1123Label(1+d.IntN(12))
	for used[p] {
		p += "x"
	}
	used[p] = true
	m := map[string]any{"name": name, "mountPath": p}
	if d.IntN(2) == 0 {
		m["readOnly"] = true
	}
	if d.IntN(4) == 0 {
		m["subPath"] = d.DNS1123Label(1 + d.IntN(8))
	}
	return m
}

func (d *drawer) toleration() map[string]any {
	effects := []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	switch d.IntN(4) {
	case 0:
		return map[string]any{"operator": "Exists"}
	case 1:
		return map[string]any{"key": d.LabelKey(), "operator": "Exists", "effect": effects[d.IntN(3)]}
	case 2:
		return map[string]any{"key": d.LabelKey(), "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": d.IntN(3600)}
	}
	return map[string]any{"key": d.LabelKey(), "operator": "Equal", "value": d.LabelValue(), "effect": effects[d.IntN(3)]}
}

// peer draws a NetworkPolicy peer: pods by label, namespaces by label,
// both, or an IPv4 or IPv6 block (with an exception inside it, sometimes).
func (d *drawer) peer() map[string]any {
	selector := func() map[string]any {
		if d.IntN(3) == 0 {
			return map[string]any{}
		}
		return map[string]any{"matchLabels": map[string]any{d.LabelKey(): d.LabelValue()}}
	}
	switch d.IntN(5) {
	case 0:
		return map[string]any{"podSelector": selector()}
	case 1:
		return map[string]any{"namespaceSelector": selector()}
	case 2:
		return map[string]any{"podSelector": selector(), "namespaceSelector": selector()}
	case 3:
		return map[string]any{"ipBlock": map[string]any{"cidr": "2001:db8::/" + strconv.Itoa(32+d.IntN(33))}}
	}
	a, b := 1+d.IntN(223), d.IntN(256)
	block := map[string]any{"cidr": fmt.Sprintf("%d.%d.0.0/16", a, b)}
	if d.IntN(2) == 0 {
		block["except"] = []any{fmt.Sprintf("%d.%d.%d.0/24", a, b, d.IntN(256))}
	}
	return map[string]any{"ipBlock": block}
}

// resources draws a valid ResourceRequirements: limits of some of cpu,
// memory and GPUs, requests of cpu and memory at most their limits (a GPU
// request, when drawn, equals its limit, as the API server requires).
func (d *drawer) resources() map[string]any {
	limits, requests := map[string]any{}, map[string]any{}
	if d.IntN(2) == 0 {
		cpu := 1 + d.IntN(16)
		limits["cpu"] = strconv.Itoa(cpu)
		if d.IntN(2) == 0 {
			requests["cpu"] = strconv.Itoa(100*(1+d.IntN(10*cpu))) + "m"
		}
	}
	if d.IntN(2) == 0 {
		mem := 1 + d.IntN(64)
		limits["memory"] = strconv.Itoa(mem) + "Gi"
		if d.IntN(2) == 0 {
			requests["memory"] = strconv.Itoa(1+d.IntN(mem*1024)) + "Mi"
		}
	}
	if d.IntN(2) == 0 {
		gpus := d.IntN(9)
		limits["nvidia.com/gpu"] = gpus
		if d.IntN(3) == 0 {
			requests["nvidia.com/gpu"] = gpus
		}
	}
	out := map[string]any{}
	if len(limits) > 0 {
		out["limits"] = limits
	}
	if len(requests) > 0 {
		out["requests"] = requests
	}
	return out
}

// TestDrawnSetsAreMostlyValid draws sets of every built-in prototype the
// way the sweep does and renders them here: drawing never fails, and the
// sets the generator refuses (ValidationError) are a minority, as the sweep
// on the API server requires. No cluster needed. The seed is fixed (the
// share refused varies with it: openmpi's from about 33% to 48%), unless
// TRAINSONNET_SWEEP_SEED gives one, to replay a sweep's draw.
func TestDrawnSetsAreMostlyValid(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	protos, err := g.Prototypes()
	require.NoError(t, err)
	seed := uint64(20261124)
	if s, err := strconv.ParseUint(os.Getenv(EnvSweepSeed), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay: %s=%d)", seed, EnvSweepSeed, seed)
	for _, pr := range protos {
		t.Run(pr.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			d := newDrawer(ctx, g, pr, seed)
			const n = 200
			invalid := map[string]int{}
			inValid := map[string]int{} // parameter -> valid sets that set it
			refused := 0
			for i := range n {
				s := &sweepSet{index: i, proto: pr.Name, values: d.drawSet(pr, i)}
				_, err := g.Render(ctx, s.params(pr, ""))
				var verr *generator.ValidationError
				switch {
				case errors.As(err, &verr):
					refused++
					for _, p := range verr.Problems {
						invalid[p.Param]++
					}
				case err != nil:
					t.Errorf("set %d: %v\nreplay: %s", i, err, s.command())
				default:
					for _, v := range s.values {
						inValid[v.param.Path]++
					}
				}
			}
			t.Logf("%s: %d of %d refused (by parameter: %s)", pr.Name, refused, n, countsText(invalid))
			// How well the valid sets cover the parameters: the fewest
			// valid sets that set one, and the parameters in fewer than 10.
			var rare []string
			fewest := n
			for _, p := range param.Leaves(pr.Params) {
				if p.Path == "namespace" || d.skipped[p.Path] != "" {
					continue
				}
				fewest = min(fewest, inValid[p.Path])
				if inValid[p.Path] < 10 {
					rare = append(rare, p.Path+" "+strconv.Itoa(inValid[p.Path]))
				}
			}
			t.Logf("%s: coverage: every parameter in at least %d valid sets; in fewer than 10: %s", pr.Name, fewest, strings.Join(rare, ", "))
			assert.Lessf(t, refused, n/2, "%s: refused sets must be a minority (by parameter: %s)", pr.Name, countsText(invalid))
		})
	}
}
