package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-jsonnet"

	"github.com/trainsonnet/trainsonnet/generator/param"
)

// Engine evaluates prototypes: the importer over the embedded files and
// the user's prototype paths, the natives, the large strings a render
// holds by reference, and a pool of VMs. It is safe for concurrent use:
// every evaluation gets a VM of its own. A VM caches the libraries it
// parsed and evaluated, so the pool keeps idle ones (a sync.Pool would drop
// them at every GC), and a caller that evaluates many times in a row (a
// batch's worker) holds one as a Session.
type Engine struct {
	im    *importer
	large *largeStrings

	// Two speed tricks, each behind its seam, are on unless turned off
	// before the first evaluation (by the benchmarks that show what they
	// buy, and the test that holds the output to be the same without
	// them): InlineLarge hands prototypes the large strings themselves
	// instead of references (refs.go), PrintFull takes the value of a
	// render from its printed output instead of the hand-over (Full).
	InlineLarge, PrintFull bool
	// Bounds of an evaluation (bounds.go); runaway: one passed them.
	Bounds  Bounds
	runaway atomic.Bool

	mu   sync.Mutex
	idle []*Session
}

// New is an Engine over the embedded trees ("prototypes", "lib" → their
// files) and the user's prototype directories (absolute, and as given, for
// messages), searched before the library.
func New(embedded map[string]fs.FS, dirs, given []string) *Engine {
	im := newImporter(embedded, dirs, given)
	return &Engine{im: im, large: newLargeStrings(im), Bounds: DefaultBounds}
}

// UserPaths reports whether the Engine reads prototype paths, which may
// shadow the library the built-in prototypes import.
func (e *Engine) UserPaths() bool { return len(e.im.userDirs) > 0 }

// Show is the name of a file for messages (importer.show).
func (e *Engine) Show(file string) string { return e.im.show(file) }

// Declaration is the JSON of a prototype's declaration (output 'spec'):
// for a built-in, the one evaluated at build time (declarations.go) unless
// prototype paths may shadow the libraries it imports; otherwise evaluated
// on s (or a pooled VM when s is nil).
func (e *Engine) Declaration(s *Session, name, file string, builtin bool) (string, error) {
	if builtin && !e.UserPaths() {
		if out := builtinDeclaration(name); out != "" {
			return out, nil
		}
	}
	return e.Evaluate(s, file, Empty(), "spec")
}

// Evaluate runs the prototype file with the given params and output mode
// on the Session s, or on a pooled VM when s is nil, and returns the JSON
// it printed.
func (e *Engine) Evaluate(s *Session, file string, params Value, output string) (string, error) {
	if s == nil {
		s = e.Session()
		defer e.Release(s)
	}
	s.handed, s.wasHanded = nil, false
	s.errs.entry = file
	s.vm.TLAReset()
	s.vm.TLANode("params", params.node)
	s.vm.TLAVar("output", output)
	if e.runaway.Load() {
		return "", errRunaway
	}
	out, abandoned, err := watched(e.Bounds, func() (string, error) { return s.vm.EvaluateFile(file) })
	if abandoned {
		s.abandoned = true // still evaluating: never to be reused
		e.runaway.Store(true)
		return "", fmt.Errorf("%s: %w", e.im.show(file), err)
	}
	return out, err
}

// errRunaway: an evaluation of the Engine passed a bound and runs on,
// unstoppable (bounds.go); the bounds of the next could not be told from
// it.
var errRunaway = errors.New("an earlier evaluation passed its bounds and runs on, out of reach (go-jsonnet cannot be stopped): this Generator renders no more; end the process")

// Full is the value of a render (output 'full': {errors, warnings,
// objects}) as Go values, the objects among them: what the prototype
// evaluated to. That value comes one way, and this is its seam:
// ts.prototype gives it to std.native('handOver'), which takes it as Go
// values, since printing it as JSON text for Go to parse it again costs
// a render a fifth more time, an eighth more allocations and a quarter
// more bytes (BenchmarkRenderHandOver);
// a prototype that does not (a wrapper of one's own, or with PrintFull)
// has its printed output parsed instead.
func (e *Engine) Full(s *Session, file string, params Value) (any, error) {
	if s == nil {
		s = e.Session()
		defer e.Release(s)
	}
	out, err := e.Evaluate(s, file, params, "full")
	handed, ok := s.handed, s.wasHanded
	s.handed = nil
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return param.DecodeJSON([]byte(out))
	case out != "null\n": // what handOver returned, as the whole output
		return nil, errors.New("its output is not the value it handed over (std.native('handOver') is ts.prototype's)")
	}
	return handed, nil
}

// Failed is the error of a render of the prototype name (the file) that
// failed with err: the message of ts.fail; for any other error, the
// message of ts.fail that an evaluation with the library's checks gives
// (the piece the prototype lacks), or else err with its trace. The
// checks cost every render about 5% and only name what a failed render
// lacks, so renders skip them (the native skipContractChecks) and only a
// failure pays for them, here, on a VM of its own.
func (e *Engine) Failed(name, file string, params Value, err error) error {
	if !strings.HasPrefix(err.Error(), failMark) {
		if _, cerr := e.Evaluate(e.newSession(true), file, params, "full"); cerr != nil && strings.HasPrefix(cerr.Error(), failMark) {
			err = cerr
		}
	}
	return Error(name, "prototype "+name+" failed", err)
}

// Place is the place of an error of a prototype of one's own, the file
// entry, whose message is msg: the field of its spec that msg begins with
// ("validate(p) ..."), else the file.
func (e *Engine) Place(entry, msg string) string { return authorPlace(nil, entry, msg, e.im) }

// ResolveRefs puts in the decoded object m, in place of each reference
// to a large string, the text it stands for (refs.go): the check's
// Resolver.
func (e *Engine) ResolveRefs(apiVersion, kind string, m map[string]any) (bool, int, error) {
	return e.large.resolveRefs(apiVersion, kind, m)
}

// Session is a VM of an Engine with the natives registered, held by one
// caller at a time, and the one thing a native keeps of the evaluation
// under way: the value handed over.
type Session struct {
	vm        *jsonnet.VM
	errs      *errFormatter // formats the errors of the file evaluated
	abandoned bool          // an evaluation passed a bound and runs on (bounds.go)
	handed    any
	wasHanded bool
}

// handOver is the native handOver(value): it keeps the value for Full.
func (s *Session) handOver(args []any) (any, error) {
	if s.wasHanded {
		return nil, fmt.Errorf("handOver(value) is called once per evaluation, by ts.prototype")
	}
	s.handed, s.wasHanded = args[0], true
	return nil, nil
}

// Session takes an idle VM of the pool, or makes one: give it back with
// Release.
func (e *Engine) Session() *Session {
	e.mu.Lock()
	if n := len(e.idle); n > 0 {
		s := e.idle[n-1]
		e.idle = e.idle[:n-1]
		e.mu.Unlock()
		return s
	}
	e.mu.Unlock()
	return e.newSession(false)
}

// newSession is a VM with the importer and the natives. checks: the
// library checks what its pieces read of the parameters (ts.checks),
// which a render skips: only a failed render is evaluated again with them
// (Failed).
func (e *Engine) newSession(checks bool) *Session {
	s := &Session{vm: jsonnet.MakeVM()}
	s.vm.Importer(e.im)
	handOver := s.handOver
	if e.PrintFull {
		handOver = nil
	}
	for _, f := range natives(e.large, e.InlineLarge, handOver, checks) {
		s.vm.NativeFunction(f)
	}
	s.vm.ErrorFormatter.SetMaxStackTraceSize(12)
	s.errs = &errFormatter{ErrorFormatter: s.vm.ErrorFormatter, im: e.im}
	s.vm.ErrorFormatter = s.errs
	return s
}

// Release gives s back to the pool (unless an evaluation on it runs on).
func (e *Engine) Release(s *Session) {
	if s.abandoned {
		return
	}
	s.handed, s.wasHanded = nil, false
	e.mu.Lock()
	if len(e.idle) < maxIdleVMs {
		e.idle = append(e.idle, s)
	}
	e.mu.Unlock()
}

// maxIdleVMs bounds the VMs kept between renders.
const maxIdleVMs = 8
