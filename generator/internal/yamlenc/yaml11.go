package yamlenc

import (
	"bytes"
	"encoding/hex"
	"fmt"
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
// Such a string is written double-quoted: Prepare finds them while
// it walks the tree and makes each a yaml11Text, which the encoder writes
// as a token that names the text (the encoder has no way to be asked for
// a style), and Document writes each token's text quoted in its place.
// The JSON encoder sees a yaml11Text as the string it is.

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

// yaml11Text is a string that YAML 1.1 readers would misread.
type yaml11Text string

// quoteToken starts the token of a yaml11Text, the text's bytes in hex
// after it; the NUL keeps it from being mistaken for text.
const quoteToken = "\x00trainsonnet.quote:"

// MarshalYAML gives the encoder the token in place of the text.
func (t yaml11Text) MarshalYAML() (any, error) {
	return quoteToken + hex.EncodeToString([]byte(t)), nil
}

// quoteTokenYAML is the start of a token as the encoder writes it: a
// double-quoted scalar (a NUL is not printable), up to the hex digits.
var quoteTokenYAML = sync.OnceValues(func() ([]byte, error) {
	y, err := yamlv2.Marshal(quoteToken)
	return bytes.TrimSuffix(y, []byte("\"\n")), err
})

// unquoteYAML11 writes the text of every token in y double-quoted in its
// place.
func unquoteYAML11(y []byte) ([]byte, error) {
	start, err := quoteTokenYAML()
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		i := bytes.Index(y, start)
		if i < 0 {
			break
		}
		digits, rest, ok := bytes.Cut(y[i+len(start):], []byte(`"`))
		text, err := hex.DecodeString(string(digits))
		if !ok || err != nil {
			return nil, fmt.Errorf("a YAML 1.1 quote token the encoder broke: %q", y[i:min(len(y), i+80)])
		}
		out = append(out, y[:i]...)
		out = strconv.AppendQuote(out, string(text))
		y = rest
	}
	return append(out, y...), nil
}
