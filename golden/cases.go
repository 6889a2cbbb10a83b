// Package golden pins every byte trainsonnet prints for a set of cases:
// rendered manifests (stdout), warnings (stderr), kustomize bases, and the
// errors of bad input. Refresh with `go test ./... -update` and review the
// diff like code. The cases are exported so that the end-to-end suite under
// test/ applies exactly the same manifests to a real API server.
//
// The cases are data: each folder <dir> of golden/ with a cases.yaml lists
// its cases there, and their golden files sit beside it. Adding a case, or
// the cases of a new prototype (golden/<prototype>/cases.yaml), needs no Go.
// A cases.yaml holds any of these lists, each case a name and the command
// line after "trainsonnet", split as sh splits words:
//
//	podSecurity: baseline    # the default Pod Security level of its renders and bases
//	renders:                 # stdout in <name>.yaml (<name>.json with -o json), stderr in <name>.stderr if any
//	- name: defaults
//	  args: gen openmpi
//	- name: non-root
//	  args: gen openmpi --name rootless --run-as-user 1000 --ssh-secret s
//	  podSecurity: restricted
//	bases:                   # run with --output-dir; the directory is pinned as <name>/
//	- name: kustomize-base
//	  args: gen openmpi --name train --ssh-secret train-ssh
//	outputs:                 # other commands: stdout in <name>.txt
//	errors:                  # must fail: the command, exit code and stderr in <name>.txt
//	- name: bad-quantity
//	  args: gen openmpi --memory 4GB
//	- name: bad-metadata      # exit code 2 (bad input) unless exitCode: 1 (a prototype bug)
//	  args: gen badcrd -J testdata/prototypes
//	  exitCode: 1
//
// Renders and bases of golden/<dir> must render the prototype <dir>.
// Relative paths in args (-f testdata/x.yaml, -J testdata/prototypes) are
// relative to golden/. podSecurity is the strictest Pod Security level the
// pods of a case pass (privileged, baseline or restricted); the e2e suite
// checks that it is exactly that. notApplied: <why>, at the top, keeps the
// e2e suite from applying the folder's cases (for kinds its API server
// does not have).
package golden

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// A Case is one trainsonnet invocation and the golden files it must match.
type Case struct {
	Name string   // golden file name, without extension
	Args []string // after "trainsonnet"
	// Dir is the folder under golden/ of its cases.yaml and golden files.
	Dir string
	// PodSecurity is the Pod Security level of a render or base: the
	// strictest one its pods pass.
	PodSecurity string
	// NotApplied, when set, says why the e2e suite does not apply the case.
	NotApplied string
	// ExitCode is the exit code an error case must end with: 2 (bad
	// input) unless its cases.yaml says exitCode: 1 (a prototype bug).
	ExitCode int
}

// Renders are cases that succeed, by prototype; their output goes to
// <prototype>/<name>.yaml (or .json), stderr to <name>.stderr when not empty.
// The e2e suite applies every one of them to a real API server.
var Renders map[string][]Case

// Bases are rendered with --output-dir and pinned as directories, by
// prototype.
var Bases map[string][]Case

// Outputs are the other commands whose output is pinned, in <dir>/<name>.txt.
var Outputs []Case

// Errors are cases that must fail: exit code and stderr are pinned in
// <dir>/<name>.txt, and stdout must stay empty.
var Errors []Case

// podSecurity is the default Pod Security level of each folder's cases.
var podSecurity map[string]string

//go:embed */cases.yaml
var data embed.FS

func init() {
	if err := load(data); err != nil {
		panic(err)
	}
}

// PodSecurity returns the default Pod Security level of a prototype's
// cases (podSecurity in golden/<proto>/cases.yaml), which its examples run
// at too; "" when it has none.
func PodSecurity(proto string) string { return podSecurity[proto] }

// casesFile is the shape of a cases.yaml.
type casesFile struct {
	PodSecurity string     `json:"podSecurity"`
	NotApplied  string     `json:"notApplied"`
	Renders     []caseData `json:"renders"`
	Bases       []caseData `json:"bases"`
	Outputs     []caseData `json:"outputs"`
	Errors      []caseData `json:"errors"`
}

type caseData struct {
	Name        string `json:"name"`
	Args        string `json:"args"`
	PodSecurity string `json:"podSecurity"`
	ExitCode    int    `json:"exitCode"`
}

var levels = []string{"privileged", "baseline", "restricted"}

func load(fsys fs.FS) error {
	Renders, Bases, Outputs, Errors = map[string][]Case{}, map[string][]Case{}, nil, nil
	podSecurity = map[string]string{}
	files, err := fs.Glob(fsys, "*/cases.yaml")
	if err != nil {
		return err
	}
	seen := map[string]string{} // golden file -> case, across lists
	for _, file := range files {
		dir := path.Dir(file)
		raw, err := fs.ReadFile(fsys, file)
		if err != nil {
			return err
		}
		var f casesFile
		if err := yaml.UnmarshalStrict(raw, &f); err != nil {
			return fmt.Errorf("golden/%s: %w", file, err)
		}
		if f.PodSecurity != "" && !slices.Contains(levels, f.PodSecurity) {
			return fmt.Errorf("golden/%s: podSecurity %q: must be one of %s", file, f.PodSecurity, strings.Join(levels, ", "))
		}
		podSecurity[dir] = f.PodSecurity
		lists := []struct {
			what  string
			cases []caseData
			add   func(Case)
			files func(name string) []string
		}{
			{"renders", f.Renders, func(c Case) { Renders[dir] = append(Renders[dir], c) },
				func(n string) []string { return []string{n + ".yaml", n + ".json", n + ".stderr"} }},
			{"bases", f.Bases, func(c Case) { Bases[dir] = append(Bases[dir], c) },
				func(n string) []string { return []string{n} }},
			{"outputs", f.Outputs, func(c Case) { Outputs = append(Outputs, c) },
				func(n string) []string { return []string{n + ".txt"} }},
			{"errors", f.Errors, func(c Case) { Errors = append(Errors, c) },
				func(n string) []string { return []string{n + ".txt"} }},
		}
		for _, l := range lists {
			for i, d := range l.cases {
				where := fmt.Sprintf("golden/%s: %s[%d] %s", file, l.what, i, d.Name)
				c, err := d.toCase(dir, f)
				if err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
				if (l.what == "renders" || l.what == "bases") && (len(c.Args) < 2 || c.Args[0] != "gen" || c.Args[1] != dir) {
					return fmt.Errorf("%s: renders and bases of golden/%s must start with: gen %s", where, dir, dir)
				}
				if l.what != "renders" && l.what != "bases" && d.PodSecurity != "" {
					return fmt.Errorf("%s: podSecurity is for renders and bases", where)
				}
				if l.what == "errors" {
					if c.ExitCode == 0 {
						c.ExitCode = 2
					}
					if c.ExitCode != 1 && c.ExitCode != 2 {
						return fmt.Errorf("%s: exitCode %d: errors end with 2 (bad input) or 1 (a prototype bug)", where, c.ExitCode)
					}
				} else if d.ExitCode != 0 {
					return fmt.Errorf("%s: exitCode is for errors", where)
				}
				for _, g := range l.files(d.Name) {
					if prev, dup := seen[path.Join(dir, g)]; dup {
						return fmt.Errorf("%s: its golden file %s is %s's too", where, path.Join(dir, g), prev)
					}
					seen[path.Join(dir, g)] = where
				}
				l.add(c)
			}
		}
	}
	return nil
}

func (d caseData) toCase(dir string, f casesFile) (Case, error) {
	if d.Name == "" || d.Name != strings.TrimSpace(d.Name) || strings.ContainsAny(d.Name, `/\`) {
		return Case{}, fmt.Errorf("name %q: must be a file name", d.Name)
	}
	args, err := splitWords(d.Args)
	if err != nil {
		return Case{}, fmt.Errorf("args: %w", err)
	}
	if len(args) == 0 {
		return Case{}, fmt.Errorf("args: empty")
	}
	level := d.PodSecurity
	if level == "" {
		level = f.PodSecurity
	} else if !slices.Contains(levels, level) {
		return Case{}, fmt.Errorf("podSecurity %q: must be one of %s", level, strings.Join(levels, ", "))
	}
	return Case{Name: d.Name, Args: args, Dir: dir, PodSecurity: level, NotApplied: f.NotApplied, ExitCode: d.ExitCode}, nil
}

// splitWords splits a command line as sh does, without expansions: words
// are separated by blanks; '…' quotes anything; "…" quotes anything but \"
// and \\; a backslash outside quotes escapes the next character.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("a \\ ends %q", s)
			}
			i++
			w.WriteByte(s[i])
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// ExampleOverlays finds the kustomize overlays under an examples folder:
// for every prototype folder with a params.yaml (the base's parameters),
// each subfolder with a kustomization.yaml, sorted.
func ExampleOverlays(examples string) (map[string][]string, error) {
	protos, err := os.ReadDir(examples)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, p := range protos {
		if !p.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(examples, p.Name(), "params.yaml")); err != nil {
			continue
		}
		subs, err := os.ReadDir(filepath.Join(examples, p.Name()))
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if _, err := os.Stat(filepath.Join(examples, p.Name(), s.Name(), "kustomization.yaml")); err == nil && s.IsDir() && s.Name() != "base" {
				out[p.Name()] = append(out[p.Name()], s.Name())
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no example overlays under %s", examples)
	}
	for _, overlays := range out {
		slices.Sort(overlays)
	}
	return out, nil
}
