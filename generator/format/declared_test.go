package format

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

// TestDeclaredFormat: a format declared in Jsonnet checks its pattern and
// length with its rule in the message, puts both in the schema, and draws
// values its own check takes, from the pattern and the examples.
func TestDeclaredFormat(t *testing.T) {
	d := &Declared{Name: "gitRef", Rule: "a branch or tag name", Pattern: `^[A-Za-z0-9._/-]+$`, MaxLength: intp(12), Examples: []string{"main", "v1.2"}}
	f, err := d.Format()
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]string{
		"release/1.2":   "",
		"a b":           "must be a branch or tag name",
		"":              "must be a branch or tag name",
		"a-much-longer": "must be a branch or tag name, at most 12 characters",
	} {
		if got := f.Check(s); got != want {
			t.Errorf("Check(%q) = %q, want %q", s, got, want)
		}
	}
	if f.Rule != "a branch or tag name" || f.Schema["pattern"] != d.Pattern || f.Schema["maxLength"] != 12 {
		t.Errorf("rule %q, schema %v", f.Rule, f.Schema)
	}
	fromExamples := 0
	for seed := range uint64(500) {
		v := f.Draw(NewRand(rand.New(rand.NewPCG(seed, 3))))
		if rule := f.Check(v); rule != "" {
			t.Fatalf("seed %d: drew %q, which %s", seed, v, rule)
		}
		if v == "main" || v == "v1.2" {
			fromExamples++
		}
	}
	if fromExamples == 0 || fromExamples == 500 {
		t.Errorf("%d of 500 drawn from the examples: want some from each source", fromExamples)
	}
}

func TestDeclaredFormatErrors(t *testing.T) {
	for _, c := range []struct {
		d    Declared
		want string
	}{
		{Declared{Name: "Bad", Rule: "r", Pattern: "x"}, "camelCase identifier"},
		{Declared{Name: "absPath", Rule: "r", Pattern: "x"}, "the name of a built-in format"},
		{Declared{Name: "x", Pattern: "x"}, "needs a rule"},
		{Declared{Name: "x", Rule: "r", Pattern: "("}, "pattern: error parsing regexp"},
		{Declared{Name: "x", Rule: "r", Pattern: "^a+$", Examples: []string{"b"}}, `example "b" must be r`},
		{Declared{Name: "x", Rule: "r", Pattern: "^a$", MaxLength: intp(0)}, "maxLength must be at least 1"},
		{Declared{Name: "x", Rule: "r", Pattern: `^\bword\b$`}, "nothing to draw its values from"},
	} {
		_, err := c.d.Format()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error with %q", c.d, err, c.want)
		}
	}
	// A pattern the drawer cannot follow is fine with examples.
	if _, err := (&Declared{Name: "x", Rule: "r", Pattern: `^\bword\b$`, Examples: []string{"word"}}).Format(); err != nil {
		t.Error(err)
	}
}

// TestDrawRegexp draws from the patterns of the built-in formats' schemas
// and a few more: every value drawn matches its pattern.
func TestDrawRegexp(t *testing.T) {
	patterns := []string{
		`^spark\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`, `^[^/\n\r\x00]{1,5}$`, `(?i)^ab|cd$`, `^x{2,}y?$`,
		`^[\p{Greek}]+$`, `^\d{3}-\w+$`, `^(a|b|)+c*$`, `.`,
	}
	for _, name := range Names() {
		if p, ok := Get(name).Schema["pattern"].(string); ok {
			patterns = append(patterns, p)
		}
	}
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		tree, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(300) {
			s, ok := drawRegexp(NewRand(rand.New(rand.NewPCG(seed, 5))), tree, -1)
			if !ok {
				t.Fatalf("%s: seed %d: nothing drawn", p, seed)
			}
			if !re.MatchString(s) {
				t.Fatalf("%s: seed %d: drew %q, which it does not match", p, seed, s)
			}
		}
	}
}
