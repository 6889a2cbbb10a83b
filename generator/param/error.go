package param

import (
	"strconv"
	"unicode/utf8"
)

// Error is one problem with one parameter value.
type Error struct {
	// Param is the declared path of the parameter ("ssh.port"), or the
	// unknown key as given.
	Param string
	// Source names the input the value came from, as the caller labelled
	// it ("--node-selector", "--set ssh.port", "values.yaml: ssh.port");
	// empty when no input set the parameter (its default broke a rule).
	Source string
	// Value is the offending value as text; empty for unknown parameters.
	Value string
	// Rule is what the value must be, or what is wrong.
	Rule string
}

func (e *Error) Error() string {
	where := e.Source
	if where == "" {
		where = e.Param
	}
	if e.Value == "" {
		return where + ": " + e.Rule
	}
	return where + ": invalid value " + Brief(e.Value) + ": " + e.Rule
}

// maxShown bounds the bytes of a value an error message repeats: a 2 MB
// env value must not become a 2 MB line (the rule says its size).
const maxShown = 200

// Brief is a value as a message shows it: whole up to maxShown bytes,
// else its start (cut at a character boundary), an ellipsis and its size.
// Every message that repeats a value (Error, Show's callers) uses it.
func Brief(v string) string {
	if len(v) <= maxShown {
		return v
	}
	cut := maxShown - 40
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "… (" + strconv.Itoa(len(v)) + " bytes)"
}
