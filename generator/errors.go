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

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
