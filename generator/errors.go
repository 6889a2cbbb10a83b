package generator

import (
	"errors"
	"strings"

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
