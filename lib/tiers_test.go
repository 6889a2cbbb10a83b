package lib_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTierTableNamesTests holds docs/runtime.md, the table of the pods'
// runtime by its paths (role × wait / serve the end / hear the end / stop,
// each tool a path may take), to the tests: every cell but a role's "—"
// names at least one test, and every test it names is a case of this
// package's script tests.
func TestTierTableNamesTests(t *testing.T) {
	data, err := os.ReadFile("../docs/runtime.md")
	require.NoError(t, err)
	suites := map[string][]scriptCase{
		"TestMPIScript": mpiCases, "TestRuntimeScript": runtimeCases, "TestStopPort": stopPortCases,
	}
	named := regexp.MustCompile("`(Test[A-Za-z]+)/([^`]+)`")
	rows := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| role") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.Len(t, cells, 5, "a row of role and four paths: %s", line)
		rows++
		for i, cell := range cells[1:] {
			cell = strings.TrimSpace(cell)
			if cell == "—" || strings.HasPrefix(cell, "as a follower") {
				continue
			}
			refs := named.FindAllStringSubmatch(cell, -1)
			assert.NotEmpty(t, refs, "%s, path %d, names no test: %s", cells[0], i+1, cell)
			for _, r := range refs {
				cases, ok := suites[r[1]]
				if !assert.True(t, ok, "%s: no such script test %s", cells[0], r[1]) {
					continue
				}
				found := false
				for _, c := range cases {
					found = found || c.name == r[2]
				}
				assert.True(t, found, "%s names %s/%s, which is not a case", cells[0], r[1], r[2])
			}
		}
	}
	assert.Equal(t, 7, rows, "the table's roles: launcher, worker, the launcher as worker 0 and its workers, lead, follower, a static group")
}
