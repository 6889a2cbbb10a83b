package format

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Declared is a format declared in Jsonnet, beside the parameters that use
// it (params.format in lib/params.libsonnet), for the formats that are a
// pattern: a name, the rule in words, the pattern (RE2 syntax, matched as
// Go's regexp matches, anywhere in the value unless anchored; written in
// the syntax JSON Schema's ECMA-262 patterns share, since the schema
// carries it as is), an optional maximum length in characters, and
// examples of valid values.
type Declared struct {
	Name      string   `json:"name"`
	Rule      string   `json:"rule"`
	Pattern   string   `json:"pattern"`
	MaxLength *int     `json:"maxLength,omitempty"`
	Examples  []string `json:"examples,omitempty"`
}

// Format makes the format: its check (the pattern and the length; a value
// that breaks them "must be" the rule), its JSON Schema keywords, and a
// drawer of random valid values, drawn from the pattern itself and, when
// given, the examples. A declaration whose pattern does not compile, or
// whose examples break it, or that gives nothing to draw from (a pattern
// the drawer cannot follow, such as one with \b, and no examples), is an
// error.
func (d *Declared) Format() (*Format, error) {
	switch {
	case !IsIdentifier(d.Name):
		return nil, fmt.Errorf("format %q: a format's name must be a camelCase identifier", d.Name)
	case registry[d.Name] != nil:
		return nil, fmt.Errorf("format %q: the name of a built-in format (declare it under another name)", d.Name)
	case strings.TrimSpace(d.Rule) == "":
		return nil, fmt.Errorf("format %q: needs a rule, the values it takes in words", d.Name)
	case d.MaxLength != nil && *d.MaxLength < 1:
		return nil, fmt.Errorf("format %q: maxLength must be at least 1", d.Name)
	}
	re, err := regexp.Compile(d.Pattern)
	if err != nil {
		return nil, fmt.Errorf("format %q: pattern: %w", d.Name, err)
	}
	tree, err := syntax.Parse(d.Pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("format %q: pattern: %w", d.Name, err)
	}
	rule := strings.TrimSpace(d.Rule)
	maxLen := -1
	if d.MaxLength != nil {
		maxLen = *d.MaxLength
	}
	check := func(s string) string {
		if maxLen >= 0 && utf8.RuneCountInString(s) > maxLen {
			return "must be " + rule + ", at most " + strconv.Itoa(maxLen) + " characters"
		}
		if !re.MatchString(s) {
			return "must be " + rule
		}
		return ""
	}
	for _, e := range d.Examples {
		if msg := check(e); msg != "" {
			return nil, fmt.Errorf("format %q: example %q %s", d.Name, e, msg)
		}
	}
	examples := d.Examples
	fromPattern := func(r *Rand) (string, bool) {
		for range 20 {
			if s, ok := drawRegexp(r, tree, maxLen); ok && check(s) == "" {
				return s, true
			}
		}
		return "", false
	}
	if _, ok := fromPattern(NewRand(rand.New(rand.NewPCG(1, 2)))); !ok && len(examples) == 0 {
		return nil, fmt.Errorf("format %q: nothing to draw its values from: the pattern is one the drawer cannot follow (give examples)", d.Name)
	}
	schema := map[string]any{"pattern": d.Pattern}
	if maxLen >= 0 {
		schema["maxLength"] = maxLen
	}
	return &Format{
		Name:   d.Name,
		Rule:   rule,
		Check:  check,
		Schema: schema,
		Draw: func(r *Rand) string {
			if len(examples) > 0 && r.IntN(2) == 0 {
				return examples[r.IntN(len(examples))]
			}
			if s, ok := fromPattern(r); ok {
				return s
			}
			return examples[r.IntN(len(examples))]
		},
	}, nil
}

// IsIdentifier reports whether s is a name a declaration may give (a
// format, a parameter): a lower-case ASCII letter, then ASCII letters and
// digits.
func IsIdentifier(s string) bool {
	if s == "" || !unicode.IsLower(rune(s[0])) {
		return false
	}
	for _, r := range s {
		if r >= unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// drawRegexp draws a string that the parsed pattern re matches as a
// whole, of at most maxLen characters (none when negative), or reports
// that it cannot (a word boundary, a class with nothing to draw). Open
// repetitions repeat at most a few times, and classes are drawn mostly
// from printable ASCII.
func drawRegexp(r *Rand, re *syntax.Regexp, maxLen int) (string, bool) {
	var b strings.Builder
	if !drawInto(r, re, &b) {
		return "", false
	}
	s := b.String()
	if maxLen >= 0 && utf8.RuneCountInString(s) > maxLen {
		return "", false
	}
	return s, true
}

func drawInto(r *Rand, re *syntax.Regexp, b *strings.Builder) bool {
	repeat := func(lo, hi int) bool {
		if hi < 0 {
			hi = lo + 3
		}
		for n := lo + r.IntN(hi-lo+1); n > 0; n-- {
			if !drawInto(r, re.Sub[0], b) {
				return false
			}
		}
		return true
	}
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
			}
			b.WriteRune(c)
		}
		return true
	case syntax.OpCharClass:
		c, ok := drawClass(r, re.Rune)
		if ok {
			b.WriteRune(c)
		}
		return ok
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(r.Pick(anyASCII))
		return true
	case syntax.OpCapture:
		return drawInto(r, re.Sub[0], b)
	case syntax.OpStar:
		return repeat(0, 3)
	case syntax.OpPlus:
		return repeat(1, 4)
	case syntax.OpQuest:
		return repeat(0, 1)
	case syntax.OpRepeat:
		hi := re.Max
		if hi < 0 || hi > re.Min+8 {
			hi = re.Min + min(8, max(3, hi-re.Min))
		}
		return repeat(re.Min, hi)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !drawInto(r, sub, b) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return drawInto(r, re.Sub[r.IntN(len(re.Sub))], b)
	}
	return false // word boundaries, no match
}

// drawClass draws a rune of a class given as ranges (lo, hi pairs):
// printable ASCII in it mostly, any of it now and then.
func drawClass(r *Rand, ranges []rune) (rune, bool) {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for c := max(ranges[i], ' '); c <= min(ranges[i+1], '~'); c++ {
			ascii = append(ascii, c)
		}
	}
	if len(ascii) > 0 && (r.IntN(10) > 0 || len(ranges) == 0) {
		return ascii[r.IntN(len(ascii))], true
	}
	var valid [][2]rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], min(ranges[i+1], unicode.MaxRune)
		if lo <= hi {
			valid = append(valid, [2]rune{lo, hi})
		}
	}
	for range 10 {
		if len(valid) == 0 {
			break
		}
		rg := valid[r.IntN(len(valid))]
		c := rg[0] + rune(r.Int64N(int64(rg[1]-rg[0])+1))
		if utf8.ValidRune(c) && c != 0 {
			return c, true
		}
	}
	if len(ascii) > 0 {
		return ascii[r.IntN(len(ascii))], true
	}
	return 0, false
}
