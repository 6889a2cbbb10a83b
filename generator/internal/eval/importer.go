package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/google/go-jsonnet"
)

// importer resolves Jsonnet imports over the embedded prototypes and
// library, then the user's prototype paths. Embedded files have stable,
// repository-relative names ("lib/mpi.libsonnet") so error messages and
// stack traces are the same on every machine. It returns the same Contents
// for the same file every time, as go-jsonnet requires, and is safe for
// concurrent use by several VMs.
//
// A prototype of one's own reads files under the -J directories only (and
// the embedded library): an import, importstr, importbin or asset of a
// file elsewhere (an absolute path, ../ above a directory, a symbolic link
// out of one) is refused, so that rendering someone else's prototype in a
// pipeline cannot copy the runner's files (/proc/self/environ, its
// credentials) into the manifests. A wider root is asked for by naming it
// with -J.
type importer struct {
	embedded map[string]fs.FS // "prototypes", "lib" -> their files
	userDirs []string         // -J directories, searched before lib
	given    []string         // the same as the user named them
	roots    []string         // the same with symbolic links resolved

	mu    sync.Mutex
	files map[string]*cachedFile // foundAt -> contents (or absence)
}

type cachedFile struct {
	contents jsonnet.Contents
	err      error
}

func newImporter(embedded map[string]fs.FS, userDirs, given []string) *importer {
	roots := make([]string, len(userDirs))
	for i, d := range userDirs {
		roots[i] = d
		if resolved, err := filepath.EvalSymlinks(d); err == nil {
			roots[i] = resolved
		}
	}
	return &importer{embedded: embedded, userDirs: userDirs, given: given, roots: roots, files: map[string]*cachedFile{}}
}

// show is the name of a file for messages: under a -J directory, as the
// user named the directory (testdata/protos/x.jsonnet, the same on every
// machine, not /home/.../testdata/protos/x.jsonnet); else as it is.
func (im *importer) show(name string) string {
	for i, d := range im.userDirs {
		if rest, ok := strings.CutPrefix(name, d+string(filepath.Separator)); ok && i < len(im.given) {
			return filepath.Join(im.given[i], rest)
		}
	}
	return name
}

// An outsideError refuses a file outside the prototype paths.
type outsideError struct {
	name string // as imported (after joining)
	real string // where its symbolic links lead, when elsewhere
}

func (e *outsideError) Error() string {
	where := e.name + " is outside"
	if e.real != "" && e.real != e.name {
		where = e.name + " leads to " + e.real + ", outside"
	}
	return where + " the prototype paths: a prototype reads files under its -J directories and the built-in library only (name the file's directory with -J to allow it)"
}

// Import implements jsonnet.Importer. A path is first looked up next to the
// importing file, then in each -J directory, then in the embedded lib.
func (im *importer) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	var candidates []string
	if strings.HasPrefix(importedPath, "/") {
		candidates = []string{importedPath}
	} else {
		if importedFrom != "" {
			candidates = append(candidates, join(dirOf(importedFrom), importedPath))
		} else {
			candidates = append(candidates, importedPath) // an entry point, by its full name
		}
		for _, d := range im.userDirs {
			candidates = append(candidates, filepath.Join(d, importedPath))
		}
		candidates = append(candidates, "lib/"+importedPath)
	}
	var refused error
	for _, c := range candidates {
		f := im.read(c)
		if f.err == nil {
			return f.contents, c, nil
		}
		var out *outsideError
		if errors.As(f.err, &out) {
			if refused == nil {
				refused = f.err
			}
			continue
		}
		if !errors.Is(f.err, fs.ErrNotExist) {
			return jsonnet.Contents{}, "", importErr(importedFrom, importedPath, f.err)
		}
	}
	if refused != nil {
		return jsonnet.Contents{}, "", importErr(importedFrom, importedPath, refused)
	}
	if importedFrom == "" {
		return jsonnet.Contents{}, "", fmt.Errorf("%s not found in the prototype paths or in lib/", im.show(importedPath))
	}
	return jsonnet.Contents{}, "", fmt.Errorf("import %q: not found next to %s, in the prototype paths or in lib/", importedPath, im.show(importedFrom))
}

// importErr is err of importing path (from: an entry point, or an asset).
func importErr(from, path string, err error) error {
	if from == "" {
		return err
	}
	return fmt.Errorf("import %q: %w", path, err)
}

// read returns the cached contents of one candidate path.
func (im *importer) read(name string) *cachedFile {
	im.mu.Lock()
	defer im.mu.Unlock()
	if f, ok := im.files[name]; ok {
		return f
	}
	data, err := im.readUncached(name)
	f := &cachedFile{err: err}
	if err == nil {
		f.contents = jsonnet.MakeContentsRaw(data)
	}
	im.files[name] = f
	return f
}

func (im *importer) readUncached(name string) ([]byte, error) {
	if root, rest, ok := strings.Cut(name, "/"); ok && !filepath.IsAbs(name) {
		if fsys, ok := im.embedded[root]; ok {
			return fs.ReadFile(fsys, rest)
		}
	}
	if !filepath.IsAbs(name) {
		return nil, fs.ErrNotExist
	}
	// Where the name says, then where its links lead: both under a root.
	if !within(filepath.Clean(name), im.userDirs) {
		return nil, &outsideError{name: filepath.Clean(name)}
	}
	resolved, err := filepath.EvalSymlinks(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fs.ErrNotExist
	case errors.Is(err, syscall.ELOOP) || err != nil && strings.HasSuffix(err.Error(), "too many links"):
		return nil, fmt.Errorf("%s is a loop of symbolic links", im.show(name))
	case err != nil:
		return nil, err
	case !within(resolved, im.roots):
		return nil, &outsideError{name: im.show(name), real: resolved}
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file", im.show(name))
	}
	if !st.Mode().IsRegular() { // a FIFO would never end
		return nil, fmt.Errorf("%s is not a regular file", im.show(name))
	}
	data, err := os.ReadFile(resolved)
	if err != nil {
		return nil, err
	}
	// go-jsonnet would turn each byte that is not UTF-8 into U+FFFD,
	// silently: the manifest would carry other bytes than the file.
	if !utf8.Valid(data) {
		line, col, at := 1, 1, 0
		for at < len(data) {
			r, size := utf8.DecodeRune(data[at:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			if col++; r == '\n' {
				line, col = line+1, 1
			}
			at += size
		}
		return nil, fmt.Errorf("%s:%d:%d: not UTF-8 text (byte 0x%02x): a prototype reads text only, which go-jsonnet would change; "+
			"Kubernetes carries binary files in a ConfigMap's binaryData, base64-encoded: keep the file base64-encoded and put importstr of it there", im.show(name), line, col, data[at])
	}
	return data, nil
}

// within: whether the clean absolute path name is one of dirs or under one.
func within(name string, dirs []string) bool {
	for _, d := range dirs {
		if name == d || strings.HasPrefix(name, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// dirOf and join keep embedded names slash-separated and OS paths native.
func dirOf(name string) string {
	if filepath.IsAbs(name) {
		return filepath.Dir(name)
	}
	return path.Dir(name)
}

func join(dir, name string) string {
	if filepath.IsAbs(dir) {
		return filepath.Join(dir, name)
	}
	return path.Join(dir, name)
}
