package generator_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trainsonnet/trainsonnet/generator"
)

// TestAuthorConfinedToPrototypePaths: a prototype of one's own reads files
// under its -J directories and the embedded library, and nothing else,
// however it names them (import, importstr, importbin, ts.asset; an
// absolute path, ../, a symbolic link out); the refusal is one line at
// the author's import, naming the file and the rule. What lies under a
// -J directory, a second one included, reads as before.
func TestAuthorConfinedToPrototypePaths(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("token=s3cr3t"), 0o600))
	shared := filepath.Join(base, "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(shared, "note.txt"), []byte("shared note"), 0o600))
	const rule = `outside the prototype paths: a prototype reads files under its -J directories and the built-in library only \(name the file's directory with -J to allow it\)`
	for _, c := range []struct {
		name, data string
		setup      func(t *testing.T, dir string)
		want       string // a regexp of the message after "prototype <name>: <file>:<line>:<column>: "; "" renders
	}{
		{name: "absolute", data: `importstr '` + outside + `'`,
			want: `import "` + outside + `": ` + outside + ` is ` + rule},
		{name: "proc-environ", data: `importstr '/proc/self/environ'`,
			want: `import "/proc/self/environ": /proc/self/environ is ` + rule},
		{name: "dot-dot", data: `importstr '../secret.txt'`,
			want: `import "../secret.txt": .*/secret.txt is ` + rule},
		{name: "importbin", data: `std.toString(importbin '../secret.txt')`,
			want: `import "../secret.txt": .* is ` + rule},
		{name: "asset", data: `ts.asset('` + outside + `', '')`,
			want: `asset "` + outside + `": ` + outside + ` is ` + rule},
		{name: "link-out", data: `importstr 'link.txt'`,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))
			},
			want: `import "link.txt": .*/link.txt leads to ` + outside + `, ` + rule},
		{name: "link-loop", data: `importstr 'a.txt'`,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink("b.txt", filepath.Join(dir, "a.txt")))
				require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "b.txt")))
			},
			want: `import "a.txt": .*/a.txt is a loop of symbolic links`},
		{name: "directory", data: `importstr 'sub'`,
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755)) },
			want:  `import "sub": .*/sub is a directory, not a file`},
		{name: "fifo", data: `importstr 'pipe'`,
			setup: func(t *testing.T, dir string) { require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600)) },
			want:  `import "pipe": .*/pipe is not a regular file`},
		{name: "latin-1", data: `importstr 'latin1.txt'`,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "latin1.txt"), []byte("caf\xe9"), 0o600))
			},
			want: `import "latin1.txt": .*/latin1.txt:1:4: not UTF-8 text \(byte 0xe9\): a prototype reads text only, which go-jsonnet would change; Kubernetes carries binary files in a ConfigMap's binaryData, base64-encoded: keep the file base64-encoded and put importstr of it there`},
		{name: "binary", data: `std.toString(importbin 'blob')`,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "blob"), []byte{0x7f, 'E', 'L', 'F', 0xff, 0}, 0o600))
			},
			want: `import "blob": .*/blob:1:5: not UTF-8 text \(byte 0xff\)`},
		{name: "link-in", data: `importstr 'in.txt'`,
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "real.txt"), []byte("mine"), 0o600))
				require.NoError(t, os.Symlink("real.txt", filepath.Join(dir, "in.txt")))
			}},
		{name: "second-path", data: `importstr '../shared/note.txt'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, c.name)
			require.NoError(t, os.Mkdir(dir, 0o755))
			if c.setup != nil {
				c.setup(t, dir)
			}
			render := `[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name}, data: {d: ` + c.data + `}}]`
			file := writeContractProto(t, dir, c.name, "", "", render)
			g, err := generator.New(generator.Options{PrototypePaths: []string{dir, shared}})
			require.NoError(t, err)
			_, err = g.Render(context.Background(), generator.NewParams(c.name))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			requireAuthorError(t, err, c.name, file, c.want)
			assert.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

// TestAuthorErrors: an error of a prototype of one's own is one line at
// its author's file, line and column (the innermost place in the
// author's files, or the field of the spec the library found wrong) and
// says what was expected; the library's frames stay out of it.
func TestAuthorErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, src, render string
		want              string // as in TestAuthorConfinedToPrototypePaths
		line              int    // of the place, 0: any
	}{
		{name: "syntax", src: "local x = ;\n{}\n", want: `syntax error: Unexpected: ";" while parsing terminal`, line: 1},
		{name: "error", render: `[error 'boom']`, want: `boom$`, line: 14},
		{name: "unknown-native", render: `[std.native('nope')(1)]`,
			want: `Unexpected type null, expected function: std.native\('nope'\) is null: trainsonnet registers no such native`, line: 14},
		{name: "render-object", render: `{a: 1}`, want: `render\(p\) must return a list of objects, not an object$`, line: 14},
		{name: "render-null", render: `null`, want: `render\(p\) must return a list of objects, not null$`, line: 14},
		{name: "missing-field", render: `[p.nope]`, want: `Field does not exist: nope`, line: 14},
		{name: "latin-1-source", src: "local ts = import 'trainsonnet.libsonnet';\n// caf\xe9\n{}\n", want: `not UTF-8 text \(byte 0xe9\)`, line: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.name+".jsonnet")
			if c.src != "" {
				require.NoError(t, os.WriteFile(file, []byte(c.src), 0o600))
			} else {
				file = writeContractProto(t, dir, c.name, "", "", c.render)
			}
			g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
			require.NoError(t, err)
			_, err = g.Render(context.Background(), generator.NewParams(c.name))
			requireAuthorError(t, err, c.name, file, c.want)
			if c.line != 0 {
				assert.Contains(t, err.Error(), file+":"+strconv.Itoa(c.line)+":")
			}
		})
	}
	t.Run("shadowed-library", func(t *testing.T) {
		// a library file of one's own that shadows the library's, broken:
		// one line at its place, for a built-in prototype too
		for name, src := range map[string]string{
			"syntax":  "{ broken: ",
			"runtime": "local x = error 'boom';\n{ params(a, b):: x }\n",
		} {
			lib := filepath.Join(dir, "shadow-"+name)
			require.NoError(t, os.Mkdir(lib, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(lib, "common.libsonnet"), []byte(src), 0o600))
			g, err := generator.New(generator.Options{PrototypePaths: []string{lib}})
			require.NoError(t, err)
			_, err = g.Render(context.Background(), generator.NewParams("openmpi"))
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n", name)
			assert.Contains(t, err.Error(), filepath.Join(lib, "common.libsonnet")+":", name)
		}
	})
	t.Run("validate-shape", func(t *testing.T) {
		for name, validate := range map[string]string{
			"validate-object":  `{}`,
			"validate-no-rule": `[[{param: 'name'}]]`,
			"validate-items":   `[{param: 'name', rule: 'x'}]`,
		} {
			src := strings.Replace(contractProto, "  render(p)::", "  validate(p):: "+validate+",\n  render(p)::", 1)
			file := filepath.Join(dir, name+".jsonnet")
			require.NoError(t, os.WriteFile(file, []byte(expandContract(src, name, "", "", "")), 0o600))
			g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
			require.NoError(t, err)
			_, err = g.Render(context.Background(), generator.NewParams(name))
			requireAuthorError(t, err, name, file, `validate\(p\) must return (a list of lists of problems \(ts.check\), not an? (object)|lists of problems made with ts.check\(ok, param, rule\), \{param: <name>, rule: <text>\}; one is)`)
			assert.Contains(t, err.Error(), file+":14:", "at the validate field")
		}
	})
}

// writeContractProto writes contractProto named name into dir with the
// blanks filled (defaults for ""), and returns its file.
func writeContractProto(t *testing.T, dir, name, params, worker, render string) string {
	t.Helper()
	file := filepath.Join(dir, name+".jsonnet")
	require.NoError(t, os.WriteFile(file, []byte(expandContract(contractProto, name, params, worker, render)), 0o600))
	return file
}

func expandContract(src, name, params, worker, render string) string {
	for k, v := range map[string]string{
		"NAME":   name,
		"PARAMS": or(params, `common.params(proto, 'busybox:1.37') + batch.params('the workers')`),
		"WORKER": or(worker, `{name: 'worker', kind: 'IndexedJob', count: 2, image: p.image, lead: true}`),
		"RENDER": or(render, `roles.objects(proto, p, [worker(p)])`),
	} {
		src = strings.ReplaceAll(src, k, v)
	}
	return src
}

// requireAuthorError: err is one line, "prototype <name>[ failed]:
// <file>:<line>:<column>: " and a match of want; not the user's input,
// and without the library's frames.
func requireAuthorError(t *testing.T, err error, name, file, want string) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.False(t, generator.IsValidation(err), "a prototype's bug, not the user's input: %s", msg)
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "RUNTIME ERROR")
	assert.NotContains(t, msg, "lib/")
	assert.Regexp(t, `^(reading )?prototype `+regexp.QuoteMeta(name)+`( failed)?: `+regexp.QuoteMeta(file)+`:\d+:\d+: `+want, msg)
}

// TestAuthorBounds: an evaluation without end (a tailstrict recursion,
// which go-jsonnet's 500 calls do not bound and which would kill the
// process at a 1 GB stack; a loop; a value built without end) is an
// error of the prototype's, at its file, once it passes a bound; the
// Generator renders no more (the evaluation runs on: the CLI exits). Each
// case runs in a process of its own (TestAuthorBoundsCase): what runs on
// would pass the next case's bounds.
func TestAuthorBounds(t *testing.T) {
	for _, c := range boundCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestAuthorBoundsCase$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "TRAINSONNET_BOUNDS_CASE="+c.name)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "--- PASS: TestAuthorBoundsCase", "%s", out)
		})
	}
}

var boundCases = []struct{ name, render, want string }{
	{"tailstrict", `local f(x) = f(x + 1) tailstrict; [f(0)]`, `its stack passed 32 MB \(a recursion without end\? go-jsonnet bounds calls to 500 deep, but not tailstrict ones\)`},
	{"loop", `[std.length([1 for j in std.range(1, 10000)]) for i in std.range(1, 1000000)]`, `it ran for more than 2s \(a loop without end\?\)`},
	{"memory", `[[std.toString(j) for j in std.range(1, 1000)] for i in std.range(1, 1000000)]`, `it used more than 512 MB of memory \(a value built without end\?\)`},
}

// TestAuthorBoundsCase is a case of TestAuthorBounds, in its process.
func TestAuthorBoundsCase(t *testing.T) {
	name := os.Getenv("TRAINSONNET_BOUNDS_CASE")
	if name == "" {
		t.Skip("a case of TestAuthorBounds, run by it")
	}
	for _, c := range boundCases {
		if c.name != name {
			continue
		}
		dir := t.TempDir()
		file := writeContractProto(t, dir, c.name, "", "", c.render)
		g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
		require.NoError(t, err)
		// Each case passes one bound while the others are out of reach:
		// time enough for the stack and the heap to pass theirs, and for
		// the loop a heap no machine's speed makes it reach in 2 s (its
		// garbage counts against the process's heap: on a fast machine
		// it passed 512 MB in 1.7 s).
		bound, heapMB := time.Minute, uint64(512)
		if c.name == "loop" {
			bound, heapMB = 2*time.Second, 8192
		}
		generator.SetBounds(g, bound, 32, heapMB)
		_, err = g.Render(context.Background(), generator.NewParams(c.name))
		require.Error(t, err)
		assert.Regexp(t, `^prototype `+c.name+` failed: `+regexp.QuoteMeta(file)+`: evaluation stopped: `+c.want+`$`, err.Error())
		assert.False(t, generator.IsValidation(err))
		// the evaluation runs on, out of reach: the Generator says so
		_, err = g.Render(context.Background(), generator.NewParams("openmpi"))
		require.ErrorContains(t, err, "this Generator renders no more; end the process")
		return
	}
	t.Fatalf("no case %q", name)
}

// TestObjectSizes: an object the API server or etcd would refuse by size
// is refused in the one check of every object, naming the input that made
// it big: a user's value (a ValidationError, exit 2), or else the
// prototype's object (its bug).
func TestObjectSizes(t *testing.T) {
	g, err := generator.New(generator.Options{})
	require.NoError(t, err)
	_, err = g.Render(context.Background(), generator.NewParams("horovod-spark").
		Set("sparkConf", map[string]string{"spark.big": strings.Repeat("x", 1100000)}))
	require.Error(t, err)
	assert.True(t, generator.IsValidation(err), "%v", err)
	assert.Regexp(t, `^sparkConf: invalid value "spark.big=x+… \(1100012 bytes\): makes the ConfigMap's data \d+ bytes \(1.0\d MiB\); the API server takes at most 1 MiB \(1048576 bytes\) of data in a ConfigMap$`, err.Error())

	dir := t.TempDir()
	big := strings.Repeat("z", 1100000)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o600))
	for _, c := range []struct{ name, render, want string }{
		{"configmap", `[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name}, data: {big: importstr 'big.txt'}}]`,
			`ConfigMap configmap: data: makes the ConfigMap's data 1100000 bytes \(1.05 MiB\); the API server takes at most 1 MiB`},
		{"secret", `[{apiVersion: 'v1', kind: 'Secret', metadata: {name: p.name}, stringData: {big: importstr 'big.txt'}}]`,
			`Secret secret: data: makes the Secret's data 1100000 bytes \(1.05 MiB\); the API server takes at most 1 MiB`},
		{"custom", `[{apiVersion: 'example.com/v1', kind: 'Thing', metadata: {name: p.name}, spec: {a: importstr 'big.txt', b: importstr 'big.txt'}}]`,
			`Thing custom: \(the object\): makes the Thing 22000\d\d bytes \(2.10 MiB\) as JSON; etcd stores an object of at most 1.5 MiB`},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeContractProto(t, dir, c.name, "", "", c.render)
			g, err := generator.New(generator.Options{PrototypePaths: []string{dir}})
			require.NoError(t, err)
			_, err = g.Render(context.Background(), generator.NewParams(c.name))
			require.Error(t, err)
			assert.False(t, generator.IsValidation(err))
			assert.Regexp(t, `^prototype bug: `+c.name+`: `+c.want, err.Error())
		})
	}
}
