package e2e

import (
	"regexp"
	"strings"
)

// An outputEntry is one thing kubectl apply printed: an object it applied
// ("job.batch/x" with -o name), a server warning, or an error (which may
// span several lines).
type outputEntry struct {
	kind     entryKind
	text     string
	resource string // entryApplied: "job.batch"
	name     string // entryApplied: "x"
}

type entryKind int

const (
	entryApplied entryKind = iota
	entryWarning
	entryError
)

var (
	appliedLine      = regexp.MustCompile(`^([a-z0-9.-]+)/([a-z0-9.-]+)$`)
	warningsReceived = regexp.MustCompile(`^error: \d+ warnings? received$`)
)

// parseApplyOutput splits the combined output of `kubectl apply -o name`
// into entries, in order. kubectl's final "error: N warnings received"
// (with --warnings-as-errors) is dropped: the warnings themselves are
// entries.
func parseApplyOutput(out string) []outputEntry {
	var entries []outputEntry
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case appliedLine.MatchString(line):
			m := appliedLine.FindStringSubmatch(line)
			entries = append(entries, outputEntry{kind: entryApplied, text: line, resource: m[1], name: m[2]})
		case strings.HasPrefix(line, "Warning: "):
			entries = append(entries, outputEntry{kind: entryWarning, text: line})
		case warningsReceived.MatchString(line):
		case (strings.HasPrefix(line, "* ") || strings.HasPrefix(line, " ")) && len(entries) > 0 &&
			entries[len(entries)-1].kind == entryError:
			entries[len(entries)-1].text += "\n" + line
		default:
			entries = append(entries, outputEntry{kind: entryError, text: line})
		}
	}
	return entries
}

// quotedNames finds the object names an error message mentions:
// `Job.batch "x" is invalid`, `(namespace/x; batch/v1, Kind=Job)`.
var quotedNames = regexp.MustCompile(`"([a-z0-9][a-z0-9.-]*)"|\([a-z0-9-]+/([a-z0-9][a-z0-9.-]*);`)

func mentionedNames(msg string) []string {
	var names []string
	for _, m := range quotedNames.FindAllStringSubmatch(msg, -1) {
		if m[1] != "" {
			names = append(names, m[1])
		} else {
			names = append(names, m[2])
		}
	}
	return names
}

// resourceOfKind reports whether kubectl's resource name ("job.batch",
// "networkpolicy.networking.k8s.io", "configmap") is the kind's.
func resourceOfKind(resource, kind string) bool {
	k := strings.ToLower(kind)
	return resource == k || strings.HasPrefix(resource, k+".")
}
