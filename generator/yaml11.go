package generator

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yamlv2 "go.yaml.in/yaml/v2"
)

// YAML 1.1, which many parsers still read (PyYAML, Ruby's Psych, older
// tools of the ecosystem), reads some plain scalars as something other
// than text where the YAML encoder (go.yaml.in/yaml/v2) writes them plain:
// "=" (the value key, which PyYAML refuses), "<<" (a merge key), numbers
// and times in forms it does not know (1_0.5, 2001-12-14 21:59:43.10 -5).
// Such a string is written double-quoted: numbersForYAML finds them while
// it walks the tree, tokenize puts a token in their place, and yaml() puts
// each one back quoted where the encoder wrote its token.

var yaml11 = sync.OnceValues(func() (*regexp.Regexp, *regexp.Regexp) {
	number := regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	timestamp := regexp.MustCompile(`^[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?$`)
	return number, timestamp
})

// quoteForYAML11 reports whether s must be quoted for YAML 1.1 readers
// though the encoder would write it plain.
func quoteForYAML11(s string) bool {
	if s == "=" || s == "<<" {
		return true
	}
	if s == "" || !(s[0] >= '0' && s[0] <= '9' || s[0] == '+' || s[0] == '-' || s[0] == '.') {
		return false
	}
	// what the encoder quotes itself: integers and its floats
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseFloat(plain, 64); err == nil && !strings.ContainsAny(plain, "xXpP") {
		return false
	}
	number, timestamp := yaml11()
	return number.MatchString(s) || timestamp.MatchString(s)
}

// quoteToken is the text a quoted string's token starts with; the NUL
// keeps it from being mistaken for text.
const quoteToken = "\x00trainsonnet.quote:"

// tokenize puts a token in place of each string of o.quoted in the tree.
func (o *Object) tokenize() {
	for i, p := range o.quoted {
		s := *p
		*p = quoteToken + strconv.Itoa(i)
		o.quotedText = append(o.quotedText, s)
	}
}

// unquoteTokens puts each quoted string back in y, double-quoted, where
// the encoder wrote its token.
func (o *Object) unquoteTokens(y []byte) ([]byte, error) {
	for i, s := range o.quotedText {
		tok, err := yamlv2.Marshal(quoteToken + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		y = bytes.Replace(y, bytes.TrimSuffix(tok, []byte("\n")), []byte(strconv.Quote(s)), 1)
	}
	return y, nil
}
