package param

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A value of megabytes is named by its start and size, not repeated:
// the message stays one readable line.
func TestErrorShowsLongValuesByTheirStart(t *testing.T) {
	e := &Error{Param: "env", Source: "values.yaml: env", Value: `"X=` + strings.Repeat("é", 1_000_000) + `"`, Rule: "variable X is too long"}
	msg := e.Error()
	assert.Less(t, len(msg), 300)
	assert.True(t, strings.HasPrefix(msg, `values.yaml: env: invalid value "X=éé`), msg)
	assert.Contains(t, msg, "é… (2000004 bytes): variable X is too long")

	short := &Error{Param: "gpu", Source: "--gpu", Value: `"-1"`, Rule: "must be at least 0"}
	assert.Equal(t, `--gpu: invalid value "-1": must be at least 0`, short.Error())
}
