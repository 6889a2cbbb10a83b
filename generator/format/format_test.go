package format

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	_ "github.com/trainsonnet/trainsonnet/internal/goldentest" // accept the module-wide -update flag
)

// TestDrawnValuesPass holds every format's drawer to its own check and
// schema: the sweep sends drawn values to the API server as valid ones.
func TestDrawnValuesPass(t *testing.T) {
	for _, name := range append([]string{""}, Names()...) {
		f := Get(name)
		t.Run("format="+name, func(t *testing.T) {
			var pattern *regexp.Regexp
			if p, ok := f.Schema["pattern"].(string); ok {
				pattern = regexp.MustCompile(p)
			}
			for seed := range uint64(2000) {
				r := NewRand(rand.New(rand.NewPCG(seed, 7)))
				if seed%2 == 0 {
					r.Paths = []string{"/trainsonnet/data", "/mnt/x"}
				}
				v := f.Draw(r)
				if rule := f.Check(v); rule != "" {
					t.Fatalf("seed %d: drew %q, which %s", seed, v, rule)
				}
				if pattern != nil && !pattern.MatchString(v) {
					t.Fatalf("seed %d: drew %q, which the schema's pattern %s refuses", seed, v, pattern)
				}
				n := utf8.RuneCountInString(v)
				if m, ok := f.Schema["maxLength"].(int); ok && n > m {
					t.Fatalf("seed %d: drew %q, longer than the schema's maxLength %d", seed, v, m)
				}
				if m, ok := f.Schema["minLength"].(int); ok && n < m {
					t.Fatalf("seed %d: drew %q, shorter than the schema's minLength %d", seed, v, m)
				}
			}
		})
	}
}

func TestAbsPathOrURI(t *testing.T) {
	f := Get("absPathOrURI")
	for _, ok := range []string{"/logs", "/trainsonnet/data/tb", "s3://bucket", "s3://bucket/runs/1", "gs://b/logs"} {
		if rule := f.Check(ok); rule != "" {
			t.Errorf("%q: %s", ok, rule)
		}
	}
	for _, bad := range []string{"", "logs", "./logs", "/logs/", "/a//b", "file:///logs", "s3://", "s3:///key", "gs://b/x?y=1",
		"gs://b/x#f", "s3://user:secret@bucket/x", "gs://b/with space", "http://example.com/logs", "hdfs://namenode:8020/user/x"} {
		if f.Check(bad) == "" {
			t.Errorf("%q passes", bad)
		}
	}
}

func TestNames(t *testing.T) {
	names := Names()
	for i, n := range names {
		if n == "" || (i > 0 && names[i-1] >= n) {
			t.Fatalf("Names() = %q: not sorted, or holds \"\"", names)
		}
		if _, ok := Lookup(n); !ok {
			t.Fatalf("Lookup(%q) fails", n)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal(`Lookup("nope") succeeds`)
	}
}

func TestFormatsOfStorage(t *testing.T) {
	for _, c := range []struct {
		format, value string
		ok            bool
	}{
		{"absPathOrURI", "/azure/share/logs", true},
		{"absPathOrURI", "gs://bucket/runs/1", true},
		{"absPathOrURI", "s3://bucket", true},
		{"absPathOrURI", "logs", false},
		{"absPathOrURI", "/a/../b", false},
		{"absPathOrURI", "hdfs://nn/logs", false},
		{"absPathOrURI", "gs:///runs", false},
		{"base64", "YWNjb3VudG5hbWU=", true},
		{"base64", "accountname", false},
		{"base64", "YWNjb3VudG5hbWU", false},
		{"base64", "YWNj\nb3VudG5hbWU=", false},
		{"base64", "", false},
	} {
		if rule := Get(c.format).Check(c.value); c.ok != (rule == "") {
			t.Errorf("%s %q: ok %v, rule %q", c.format, c.value, c.ok, rule)
		}
	}
}

func TestImageTag(t *testing.T) {
	check := Get("imageTag").Check
	for tag, ok := range map[string]bool{
		"0.28.1": true, "latest": true, "_x": true, strings.Repeat("a", 128): true,
		"": false, ".x": false, "-x": false, "a:b": false, strings.Repeat("a", 129): false,
	} {
		if got := check(tag) == ""; got != ok {
			t.Errorf("imageTag %q: accepted %v, want %v", tag, got, ok)
		}
	}
}

// TestKueueKeys: the label and annotation keys by which Kueue would admit
// a job otherwise than trainsonnet made it (each Job apart, in part, or
// ended at an eviction) are not a user's to add; Kueue's other keys are.
func TestKueueKeys(t *testing.T) {
	for _, c := range []struct {
		format, value string
		ok            bool
	}{
		{"userLabelKey", "kueue.x-k8s.io/queue-name", false},
		{"userLabelKey", "kueue.x-k8s.io/pod-group-name", false},
		{"userLabelKey", "kueue.x-k8s.io/priority-class", false},
		{"userLabelKey", "kueue.x-k8s.io/managed", false},
		{"userLabelKey", "kueue.x-k8s.io/max-exec-time-seconds", true},
		{"userLabelKey", "team", true},
		{"userAnnotationKey", "kueue.x-k8s.io/pod-group-total-count", false},
		{"userAnnotationKey", "kueue.x-k8s.io/job-min-parallelism", false},
		{"userAnnotationKey", "kueue.x-k8s.io/pod-group-fast-admission", false},
		{"userAnnotationKey", "kueue.x-k8s.io/retriable-in-group", false},
		{"userAnnotationKey", "kueue.x-k8s.io/pod-group-serving", false},
		{"userAnnotationKey", "kueue.x-k8s.io/pod-suspending-parent", false},
		{"userAnnotationKey", "kueue.x-k8s.io/podset-preferred-topology", true},
		{"userAnnotationKey", "example.com/owner", true},
		{"userAnnotationKey", "not a key", false},
	} {
		if rule := Get(c.format).Check(c.value); c.ok != (rule == "") {
			t.Errorf("%s %q: ok %v, rule %q", c.format, c.value, c.ok, rule)
		}
	}
}
