package eval

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"
	"github.com/google/go-jsonnet/toolutils"

	"github.com/trainsonnet/trainsonnet/generator/internal/dollar"
)

// failMark starts the message of ts.fail (lib/trainsonnet.libsonnet): a
// prototype that uses a piece of the library wrongly (a Job role without
// the Job lifetime parameters, a parameter declared by two pieces). The
// message says what is missing and what to add; the Jsonnet stack trace
// would only bury it.
const failMark = "\uFDD1"

// errFormatter formats go-jsonnet's errors, of the evaluation of entry.
// The errors of a prototype of one's own (entry a file of a -J directory)
// are its author's: one line, "<file>:<line>:<column>: <message>" at the
// innermost place in the author's files (the library's frames are not
// the author's concern), or at the field of the prototype's spec that the
// library found wrong. A syntax error is one line too, anywhere. The
// built-in prototypes' errors are trainsonnet's bugs: ts.fail's message
// alone, any other with go-jsonnet's trace.
type errFormatter struct {
	jsonnet.ErrorFormatter
	entry string    // the importer's name of the file evaluated
	im    *importer // its files, and their names as the user spells them
}

func (f *errFormatter) Format(err error) string {
	var re jsonnet.RuntimeError
	if errors.As(err, &re) {
		// a file of a -J directory that a built-in prototype imported (one
		// that shadows the library's) is the author's too: its syntax
		// error, or a frame of it in the trace
		if file, rest, ok := strings.Cut(re.Msg, " "); ok && filepath.IsAbs(file) && strings.Count(file, ":") >= 2 && !filepath.IsAbs(f.entry) {
			path, _, _ := strings.Cut(file, ":")
			return f.im.show(path) + strings.TrimPrefix(file, path) + ": syntax error: " + rest
		}
		if filepath.IsAbs(f.entry) || authorFrame(re.StackTrace) {
			mark, msg := "", re.Msg
			if m, ok := strings.CutPrefix(msg, failMark); ok {
				mark, msg = failMark, m
			}
			return mark + authorPlace(re.StackTrace, f.entry, msg, f.im) + ": " + f.explainRuntime(msg, re.StackTrace)
		}
		if strings.HasPrefix(re.Msg, failMark) {
			return re.Msg
		}
		return f.ErrorFormatter.Format(err)
	}
	var se interface{ Loc() ast.LocationRange }
	if errors.As(err, &se) {
		loc := se.Loc()
		msg := strings.TrimSpace(strings.TrimPrefix(err.Error(), loc.String()))
		return place(loc, f.im.show) + ": syntax error: " + msg
	}
	// the importer's errors (a prototype that cannot be read), as they are
	return err.Error()
}

// place is "<file>:<line>:<column>" of loc, the file as show names it.
func place(loc ast.LocationRange, show func(string) string) string {
	return fmt.Sprintf("%s:%d:%d", show(loc.FileName), loc.Begin.Line, loc.Begin.Column)
}

// authorPlace is the place of an error of the prototype entry: the
// innermost frame in the author's files (absolute names; the embedded
// library's are relative), else the field of its spec that msg begins
// with ("render(p) ..."), else the file.
func authorPlace(trace []jsonnet.TraceFrame, entry, msg string, im *importer) string {
	show := im.show
	for i := len(trace) - 1; i >= 0; i-- { // go-jsonnet's trace: outermost first
		if loc := trace[i].Loc; filepath.IsAbs(loc.FileName) && loc.Begin.Line > 0 {
			return place(loc, show)
		}
	}
	if field, _, ok := strings.Cut(msg, "(p)"); ok && !strings.ContainsAny(field, " .") {
		if loc, ok := fieldPlace(im, entry, field); ok {
			return place(loc, show)
		}
	}
	return show(entry)
}

// fieldPlace finds the field named field of an object in the Jsonnet file
// (the first one, outermost first), as the importer read it.
func fieldPlace(im *importer, file, field string) (ast.LocationRange, bool) {
	f := im.read(file)
	if f.err != nil {
		return ast.LocationRange{}, false
	}
	node, err := jsonnet.SnippetToAST(file, f.contents.String())
	if err != nil {
		return ast.LocationRange{}, false
	}
	queue := []ast.Node{node}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if o, ok := n.(*ast.DesugaredObject); ok {
			for _, fl := range o.Fields {
				if name, ok := fl.Name.(*ast.LiteralString); ok && name.Value == field && fl.LocRange.FileName == file {
					return fl.LocRange, true
				}
			}
		}
		queue = append(queue, toolutils.Children(n)...)
	}
	return ast.LocationRange{}, false
}

// explainRuntime adds what go-jsonnet's message leaves out, where a
// prototype author meets it: for a call of std.native(name) of a name
// trainsonnet does not register, the name (found in the author's files of
// the trace).
func (f *errFormatter) explainRuntime(msg string, trace []jsonnet.TraceFrame) string {
	if msg != "Unexpected type null, expected function" {
		return msg
	}
	registered := map[string]bool{}
	for _, n := range natives(&largeStrings{}, false, nil, false) {
		registered[n.Name] = true
	}
	files := []string{f.entry}
	for _, fr := range trace {
		if filepath.IsAbs(fr.Loc.FileName) && !slices.Contains(files, fr.Loc.FileName) {
			files = append(files, fr.Loc.FileName)
		}
	}
	var unknown []string
	for _, file := range files {
		if !filepath.IsAbs(file) {
			continue
		}
		src := f.im.read(file)
		if src.err != nil {
			continue
		}
		for _, m := range nativeCall.FindAllStringSubmatch(src.contents.String(), -1) {
			if !registered[m[1]] && !slices.Contains(unknown, m[1]) {
				unknown = append(unknown, m[1])
			}
		}
	}
	if len(unknown) > 0 {
		return msg + ": std.native('" + strings.Join(unknown, "'), std.native('") + "') is null: trainsonnet registers no such native (its natives are the library's, called through trainsonnet.libsonnet)"
	}
	return msg + " (std.native(name) is null for a name trainsonnet does not register: its natives are the library's, called through trainsonnet.libsonnet)"
}

// nativeCall is a call of std.native with a literal name.
var nativeCall = regexp.MustCompile(`std\.native\(\s*['"]([^'"]*)['"]\s*\)`)

// authorFrame reports whether a trace passes through a file of a -J
// directory (whose names are absolute).
func authorFrame(trace []jsonnet.TraceFrame) bool {
	for _, fr := range trace {
		if filepath.IsAbs(fr.Loc.FileName) && fr.Loc.Begin.Line > 0 {
			return true
		}
	}
	return false
}

// Error is the error of evaluating the prototype name: "prototype <name>:
// <message>" for ts.fail, what go-jsonnet said (trace included) after
// context otherwise.
func Error(name, context string, err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), failMark); ok {
		return fmt.Errorf("prototype %s: %s", name, dollar.Unmark(msg))
	}
	return fmt.Errorf("%s: %s", context, dollar.Unmark(err.Error()))
}
