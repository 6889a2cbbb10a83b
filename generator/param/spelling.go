package param

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator/format"
)

// A Spelling is another way of writing a parameter's value that a
// prototype takes, with a warning, because the system it replaces wrote
// values that way: the Helm charts' values files left a value unset as
// "", quoted numbers, wrote bytes as Dask does (2GB) and an empty list as
// {}. A declaration opts in (spellings in ts.prototype for all of a
// prototype's parameters, or on one declaration); a value in any other
// spelling is held to the declared type alone. Read and ReadText apply
// them, Schema lists them, both from the table below.
type Spelling string

// The spellings a declaration can name (lib/params.libsonnet's
// chartSpellings is all but numberAsText).
const (
	// SpellBlankUnset: "" where it breaks the declared type is the key
	// left out, so the default applies (kolotoc's schedulerPort: "").
	SpellBlankUnset Spelling = "blankIsUnset"
	// SpellQuotedScalars: a quoted integer or boolean is the number or
	// boolean (cluster.sh's ssh.port: "3222").
	SpellQuotedScalars Spelling = "quotedScalars"
	// SpellByteUnits: a byte quantity written as Dask and the charts
	// wrote memory (2GB, 512MiB, 1.5 GB) is its Kubernetes spelling (2G,
	// 512Mi, 1.5G), on the command line too.
	SpellByteUnits Spelling = "byteUnits"
	// SpellEmptyMapList: {} where a list is declared is the empty list
	// (the horovod chart's master.args: {}).
	SpellEmptyMapList Spelling = "emptyMapList"
	// SpellNumberAsText: a bare number where text is declared is its text,
	// without a word, for a text parameter whose values are mostly numbers
	// (a PyTorchJob's nprocPerNode: 8, auto or gpu). A number YAML would
	// read as another (1.10, 012) is still refused: quote it.
	SpellNumberAsText Spelling = "numberAsText"
)

// spelling is how one Spelling is read and described.
type spelling struct {
	// text: also read in text (flags, --set), not only in decoded values
	// (params files, Go values).
	text bool
	// takes reports whether the spelling means anything for p: whether
	// some value in it breaks p's declared type.
	takes func(p *Param) bool
	// read returns what v, which breaks p's type, stands for (unset: the
	// default), or ok false when v is not in this spelling.
	read func(p *Param, v any) (as any, unset, ok bool)
	// note says what the value written was taken as, for a warning.
	note func(p *Param, written, as any) string
	// schema is the JSON Schema of the spelling's values for p.
	schema func(p *Param) map[string]any
}

// spellings is every Spelling, in the order they are tried (and listed in
// a schema).
var spellings = []struct {
	name Spelling
	spelling
}{
	{SpellBlankUnset, spelling{
		takes: func(p *Param) bool {
			return p.Type != TypeGroup && (p.Type != TypeString || p.FormatSpec().Check("") != "")
		},
		read: func(_ *Param, v any) (any, bool, bool) {
			s, ok := v.(string)
			return nil, true, ok && s == ""
		},
		note: func(*Param, any, any) string {
			return `"" is taken as unset (the default) here, as the chart meant it; leave the key out`
		},
		schema: func(*Param) map[string]any {
			return map[string]any{"const": "", "description": "unset, as the charts wrote it: the default"}
		},
	}},
	{SpellQuotedScalars, spelling{
		takes: func(p *Param) bool { return p.Type == TypeInt || p.Type == TypeBool },
		read: func(p *Param, v any) (any, bool, bool) {
			s, ok := v.(string)
			if !ok {
				return nil, false, false
			}
			t := strings.TrimSpace(s)
			if p.Type == TypeBool {
				b, err := strconv.ParseBool(t)
				return b, false, err == nil && (t == "true" || t == "false")
			}
			n, err := strconv.ParseInt(t, 10, 64)
			return n, false, err == nil
		},
		note: func(_ *Param, written, as any) string {
			return strconv.Quote(written.(string)) + " is taken as " + fmt.Sprint(as) + ", as the chart took it; leave out the quotes"
		},
		schema: func(p *Param) map[string]any {
			if p.Type == TypeBool {
				return map[string]any{"type": "string", "pattern": `^\s*(true|false)\s*$`, "description": "a quoted boolean, as the charts wrote them"}
			}
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if p.Min != nil {
				lo = *p.Min
			}
			if p.Max != nil {
				hi = *p.Max
			}
			return map[string]any{"type": "string", "pattern": `^\s*` + format.IntRange(lo, hi) + `\s*$`, "description": "a quoted integer, as the charts wrote them"}
		},
	}},
	{SpellByteUnits, spelling{
		text:  true,
		takes: func(p *Param) bool { return p.Type == TypeQuantity && p.Format == "bytes" },
		read: func(_ *Param, v any) (any, bool, bool) {
			s, ok := v.(string)
			if !ok {
				return nil, false, false
			}
			q, ok := byteUnits(s)
			return q, false, ok
		},
		note: func(_ *Param, written, as any) string {
			return written.(string) + " is taken as " + as.(string) + ", its spelling as a Kubernetes quantity"
		},
		schema: func(*Param) map[string]any {
			return map[string]any{"type": "string", "pattern": `^\s*[0-9.]+\s*([kKMGTPE]i?)\s*B\s*$`, "description": "bytes as Dask and the charts wrote them (2GB)"}
		},
	}},
	{SpellEmptyMapList, spelling{
		// a list of strings or of objects (tolerations, volumes) alike
		takes: func(p *Param) bool { return p.Type == TypeList || p.Type == TypeObject && p.List },
		read: func(_ *Param, v any) (any, bool, bool) {
			m, ok := v.(map[string]any)
			return []any{}, false, ok && len(m) == 0
		},
		note: func(p *Param, _, _ any) string {
			return "{} is an empty map where a list is expected; taken as an empty list (" + p.Path + ": [])"
		},
		schema: func(*Param) map[string]any {
			return map[string]any{"type": "object", "maxProperties": 0, "description": "{}, as the charts wrote an empty list"}
		},
	}},
	{SpellNumberAsText, spelling{
		takes: func(p *Param) bool { return p.Type == TypeString },
		read: func(_ *Param, v any) (any, bool, bool) {
			switch n := v.(type) {
			case json.Number:
				return n.String(), false, true
			case int:
				return strconv.Itoa(n), false, true
			case int64:
				return strconv.FormatInt(n, 10), false, true
			}
			return nil, false, false
		},
		note: func(*Param, any, any) string { return "" },
		// the numbers whose text the format takes: an interval of
		// integers, found by asking the format
		schema: func(p *Param) map[string]any { return numbersOf(p.FormatSpec()) },
	}},
}

// spellingNamed returns the spelling called name, or nil.
func spellingNamed(name Spelling) *spelling {
	for i := range spellings {
		if spellings[i].name == name {
			return &spellings[i].spelling
		}
	}
	return nil
}

// SpellingNames returns the name of every Spelling, in order.
func SpellingNames() []string {
	names := make([]string, len(spellings))
	for i, s := range spellings {
		names[i] = string(s.name)
	}
	return names
}

// spelled reads v, which breaks the declared type, in the first of the
// parameter's Spellings (in the table's order) that it is written in (in
// text only those read in text); written is v as the note shows it.
func (p *Param) spelled(v, written any, text bool) (Reading, bool) {
	for _, sp := range spellings {
		s := &sp.spelling
		if !p.spells(sp.name) || (text && !s.text) || !s.takes(p) {
			continue
		}
		as, unset, ok := s.read(p, v)
		if !ok {
			continue
		}
		if unset {
			return Reading{Unset: true, Note: s.note(p, written, nil)}, true
		}
		nv, rule := p.Normalize(as)
		if rule != "" {
			continue
		}
		return Reading{Value: nv, Note: s.note(p, written, nv)}, true
	}
	return Reading{}, false
}

// spellingSchemas are the JSON Schemas of the other ways a params file may
// write a value of the parameter (its Spellings), which trainsonnet takes
// with a warning: an editor that uses the schema must not flag a file that
// gen takes.
func (p *Param) spellingSchemas() []any {
	var alt []any
	for _, s := range spellings {
		if p.spells(s.name) && s.takes(p) {
			alt = append(alt, s.schema(p))
		}
	}
	return alt
}

// spells reports whether the parameter takes the spelling.
func (p *Param) spells(name Spelling) bool {
	for _, n := range p.Spellings {
		if n == name {
			return true
		}
	}
	return false
}

// byteUnits: for a quantity of bytes written the way Dask and the charts
// wrote memory (2GB, 512MiB, 1.5 GB), the Kubernetes spelling (2G, 512Mi,
// 1.5G).
func byteUnits(s string) (string, bool) {
	t, ok := strings.CutSuffix(strings.TrimSpace(s), "B")
	if !ok {
		return "", false
	}
	t = strings.TrimSpace(t)
	n := strings.TrimRight(t, "kKMGTPEi")
	unit := t[len(n):]
	switch unit {
	case "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei":
	case "K":
		unit = "k"
	default:
		return "", false
	}
	n = strings.TrimSpace(n)
	if n == "" {
		return "", false
	}
	return n + unit, true
}

// numbersOf is the schema of the numbers whose text (as a JSON file writes
// them) the format f takes: the interval of integers it takes between
// -1 and 100000, or none; the format of a number-as-text parameter takes
// an interval of small integers and words (a format of one's own that
// takes other numbers gets a schema that takes them all).
func numbersOf(f *format.Format) map[string]any {
	takes := func(n int64) bool { return f.Check(strconv.FormatInt(n, 10)) == "" }
	lo := int64(-1)
	for lo <= 100000 && !takes(lo) {
		lo++
	}
	if lo > 100000 {
		return map[string]any{"not": map[string]any{}}
	}
	hi := lo
	for hi < 100000 && takes(hi+1) {
		hi++
	}
	// an interval: nothing taken past it, for a thousand and at 100001
	for n := hi + 2; n <= hi+1000; n++ {
		if takes(n) {
			return map[string]any{"type": "integer"} // more than a schema says here
		}
	}
	if takes(100001) || f.Check("1.5") == "" {
		return map[string]any{"type": "number"} // more than a schema says here
	}
	return map[string]any{"type": "integer", "minimum": lo, "maximum": hi}
}
