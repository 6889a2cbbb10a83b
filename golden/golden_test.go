package golden

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/cryptotest"

	yamlv2 "go.yaml.in/yaml/v2"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/trainsonnet/trainsonnet/internal/cli"
	"github.com/trainsonnet/trainsonnet/internal/goldentest"
	"github.com/trainsonnet/trainsonnet/lib"
)

// libAssets are the runtime scripts of lib/assets: pinned once, by their
// sha256 and size in assets.txt, and a marker line naming each (and its
// sha256) in every other golden file. Their text is lib/assets itself.
var libAssets = sync.OnceValues(func() (*goldentest.Assets, error) { return goldentest.LoadAssets(lib.FS, "assets") })

func assets(t *testing.T) *goldentest.Assets {
	t.Helper()
	a, err := libAssets()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAssets pins every asset by its sha256 and size in assets.txt, and
// checks that each is marked however it is written: as trainsonnet writes
// YAML and JSON, and as kustomize writes YAML (the examples).
func TestAssets(t *testing.T) {
	a := assets(t)
	files := a.Files()
	var pins strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(&pins, "assets/%s sha256:%x %d bytes\n", name, sha256.Sum256(files[name]), len(files[name]))
	}
	goldentest.Assert(t, []byte(pins.String()), "assets.txt")
	for name, data := range files {
		cm := map[string]any{"data": map[string]string{name: string(data)}}
		v2, err := yamlv2.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		v3, err := kyaml.Marshal(map[string]any{"items": []any{cm}})
		if err != nil {
			t.Fatal(err)
		}
		j, err := json.MarshalIndent(cm, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range [][]byte{v2, v3, j} {
			marked, err := a.Mark(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(marked, []byte("<asset assets/"+name+" sha256:")) {
				t.Errorf("%s is not marked in:\n%s", name, marked)
			}
		}
	}
}

// run runs the CLI in-process with crypto randomness fixed, so generated
// ssh keys are the same on every run.
func run(t *testing.T, args []string) (code int, stdout, stderr []byte) {
	t.Helper()
	cryptotest.SetGlobalRandom(t, 1)
	var out, errb bytes.Buffer
	code = cli.Run(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.Bytes(), errb.Bytes()
}

func TestRenders(t *testing.T) {
	for proto, cases := range Renders {
		for _, c := range cases {
			t.Run(proto+"/"+c.Name, func(t *testing.T) {
				code, stdout, stderr := run(t, c.Args)
				if code != 0 {
					t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
				}
				ext := ".yaml"
				if contains(c.Args, "json") {
					ext = ".json"
				}
				assets(t).Assert(t, stdout, filepath.Join(c.Dir, c.Name+ext))
				assertStderr(t, stderr, filepath.Join(c.Dir, c.Name+".stderr"))
			})
		}
	}
}

func TestBases(t *testing.T) {
	for proto, cases := range Bases {
		for _, c := range cases {
			t.Run(proto+"/"+c.Name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "base")
				code, stdout, stderr := run(t, append(c.Args, "--output-dir", dir))
				if code != 0 {
					t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
				}
				if len(stdout) != 0 {
					t.Errorf("--output-dir must keep stdout empty, got %q", stdout)
				}
				assets(t).AssertDir(t, readDir(t, dir), filepath.Join(c.Dir, c.Name))
			})
		}
	}
}

func TestOutputs(t *testing.T) {
	for _, c := range Outputs {
		t.Run(c.Name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.Args)
			if code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			if len(stderr) != 0 {
				t.Errorf("unexpected stderr:\n%s", stderr)
			}
			// the scripts of a batch's jobs as their markers, as in the
			// renders' golden files (TestAssets pins them)
			assets(t).Assert(t, stdout, filepath.Join(c.Dir, c.Name+".txt"))
		})
	}
}

func TestErrors(t *testing.T) {
	for _, c := range Errors {
		t.Run(c.Name, func(t *testing.T) {
			code, stdout, stderr := run(t, c.Args)
			if code != c.ExitCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, c.ExitCode, stderr)
			}
			if len(stdout) != 0 {
				t.Errorf("stdout must be empty on error, got:\n%s", stdout)
			}
			got := "$ trainsonnet " + quoteArgs(c.Args) + "\nexit code " + strconv.Itoa(code) + "\n" + string(stderr)
			goldentest.Assert(t, []byte(got), filepath.Join(c.Dir, c.Name+".txt"))
		})
	}
}

// assertStderr pins warnings; a case without any must not have a file.
func assertStderr(t *testing.T, stderr []byte, path string) {
	t.Helper()
	if len(stderr) > 0 || fileExists(path) {
		if len(stderr) == 0 && *goldentest.Update {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			return
		}
		goldentest.Assert(t, stderr, path)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'{}[],=*$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func contains(ss []string, s string) bool { return slices.Contains(ss, s) }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestNoStrayGoldens: every file beside a cases.yaml is a golden file of
// one of its cases, so that a case removed from the data takes its golden
// files along (with -update, they are removed).
func TestNoStrayGoldens(t *testing.T) {
	dirs, err := filepath.Glob("*/cases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, cases := range append(slices.Collect(maps.Values(Renders)), Outputs, Errors) {
		for _, c := range cases {
			for _, ext := range []string{".yaml", ".json", ".stderr", ".txt"} {
				claimed[filepath.Join(c.Dir, c.Name+ext)] = true
			}
		}
	}
	for _, cases := range Bases {
		for _, c := range cases {
			claimed[filepath.Join(c.Dir, c.Name)] = true
		}
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if p == f || claimed[p] {
				continue
			}
			if *goldentest.Update {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
				t.Logf("removed %s: no case of %s has it", p, f)
				continue
			}
			t.Errorf("%s is a golden file of no case in %s (remove it, or add its case)", p, f)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"gen openmpi":                    {"gen", "openmpi"},
		"  gen\n openmpi\t--x 1 ":        {"gen", "openmpi", "--x", "1"},
		`--exec 'mpirun -np 2 "a b"'`:    {"--exec", `mpirun -np 2 "a b"`},
		`--env "A=it's \"q\" \\ \n"`:     {"--env", `A=it's "q" \ \n`},
		`a\ b c''d ''`:                   {"a b", "cd", ""},
		`--volumes '[{"name":"x"}]' --y`: {"--volumes", `[{"name":"x"}]`, "--y"},
	} {
		got, err := splitWords(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"'open", `"open`, `end\`} {
		if _, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q) succeeds", bad)
		}
	}
}

// TestEveryCaseLoads checks what the data gave: every list has cases, and
// every render and base a Pod Security level.
func TestEveryCaseLoads(t *testing.T) {
	if len(Renders) == 0 || len(Bases) == 0 || len(Outputs) == 0 || len(Errors) == 0 {
		t.Fatalf("cases missing: %d prototypes with renders, %d with bases, %d outputs, %d errors", len(Renders), len(Bases), len(Outputs), len(Errors))
	}
	for _, cases := range append(slices.Collect(maps.Values(Renders)), slices.Collect(maps.Values(Bases))...) {
		for _, c := range cases {
			if c.PodSecurity == "" && c.NotApplied == "" {
				t.Errorf("%s/%s: no podSecurity, for the e2e suite", c.Dir, c.Name)
			}
		}
	}
}
