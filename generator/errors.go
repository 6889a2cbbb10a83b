package generator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-jsonnet"
	"github.com/google/go-jsonnet/ast"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// ValidationError reports every problem found in a set of parameters at once.
// The CLI exits with code 2 on it, and writes nothing.
type ValidationError struct {
	Prototype string
	Problems  []*param.Error
}

func (e *ValidationError) Error() string {
	if e == nil {
		return "invalid parameters"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// IsValidation reports whether err is (or wraps) a ValidationError or a
// UsageError: a problem with the user's input rather than with trainsonnet.
func IsValidation(err error) bool {
	var v *ValidationError
	var u *UsageError
	return errors.As(err, &v) || errors.As(err, &u)
}

// UsageError is a problem with how the generator was asked to do something
// (an unknown prototype, an unreadable params file): the user's to fix.
type UsageError struct{ Err error }

func (e *UsageError) Error() string {
	if e == nil || e.Err == nil {
		return "usage error"
	}
	return e.Err.Error()
}

func (e *UsageError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// usage is a UsageError of a Go caller's: bad or missing input to an
// entry point of the package.
func usage(msg string) error { return &UsageError{errors.New("generator: " + msg)} }

// errNotMade: a Generator not made with New.
var errNotMade = usage("a Generator is made with New (this one is nil or a zero value)")

// failMark starts the message of ts.fail (lib/trainsonnet.libsonnet): a
// prototype that uses a piece of the library wrongly (a Job role without
// the Job lifetime parameters, a parameter declared by two pieces). The
// message says what is missing and what to add; the Jsonnet stack trace
// would only bury it.
const failMark = "\uFDD1"

// failFormatter formats the errors of ts.fail as their marked message
// alone, and every other error as go-jsonnet does (with its trace).
type failFormatter struct{ jsonnet.ErrorFormatter }

func (f failFormatter) Format(err error) string {
	var re jsonnet.RuntimeError
	if errors.As(err, &re) && strings.HasPrefix(re.Msg, failMark) {
		return re.Msg
	}
	return f.ErrorFormatter.Format(err)
}

// skipChecks tells the library to skip the checks of what its pieces read
// of the parameters (ts.checks in lib/trainsonnet.libsonnet): they would
// cost every render about 5%, and they only name what a failed render
// lacks, so evalFailed runs them then.
var skipChecks = &jsonnet.NativeFunction{
	Name: "skipContractChecks",
	Func: func([]any) (any, error) { return true, nil },
}

// evalFailed is the error of a render of pr that failed with err: the
// message of ts.fail; for any other error, the message of ts.fail that an
// evaluation with the library's checks gives (the piece the prototype
// lacks), or else err with its trace.
func (g *Generator) evalFailed(pr *Prototype, tla ast.Node, err error) error {
	if !strings.HasPrefix(err.Error(), failMark) {
		if _, cerr := g.evaluate(g.newVM(true), pr.Source, tla, "full"); cerr != nil && strings.HasPrefix(cerr.Error(), failMark) {
			err = cerr
		}
	}
	return evalError(pr.Name, "prototype "+pr.Name+" failed", err)
}

// evalError is the error of evaluating prototype name: "prototype <name>:
// <message>" for ts.fail, what go-jsonnet said (trace included) after
// context otherwise.
func evalError(name, context string, err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), failMark); ok {
		return fmt.Errorf("prototype %s: %s", name, unmark(msg))
	}
	return fmt.Errorf("%s: %s", context, unmark(err.Error()))
}
