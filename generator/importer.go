package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/go-jsonnet"
)

// importer resolves Jsonnet imports over the embedded prototypes and
// library, then the user's prototype paths. Embedded files have stable,
// repository-relative names ("lib/mpi.libsonnet") so error messages and
// stack traces are the same on every machine. It returns the same Contents
// for the same file every time, as go-jsonnet requires, and is safe for
// concurrent use by several VMs.
type importer struct {
	embedded map[string]fs.FS // "prototypes", "lib" -> their files
	userDirs []string         // -J directories, searched before lib

	mu    sync.Mutex
	files map[string]*cachedFile // foundAt -> contents (or absence)
}

type cachedFile struct {
	contents jsonnet.Contents
	err      error
}

func newImporter(embedded map[string]fs.FS, userDirs []string) *importer {
	return &importer{embedded: embedded, userDirs: userDirs, files: map[string]*cachedFile{}}
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
	for _, c := range candidates {
		f := im.read(c)
		if f.err == nil {
			return f.contents, c, nil
		}
		if !errors.Is(f.err, fs.ErrNotExist) {
			return jsonnet.Contents{}, "", f.err
		}
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not found next to %q, in the prototype paths or in lib/", importedPath, importedFrom)
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
	if filepath.IsAbs(name) || im.inUserDir(name) {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) || isDirErr(err) {
			return nil, fs.ErrNotExist
		}
		return data, err
	}
	return nil, fs.ErrNotExist
}

func (im *importer) inUserDir(name string) bool {
	for _, d := range im.userDirs {
		if name == d || strings.HasPrefix(name, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func isDirErr(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "is a directory")
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
