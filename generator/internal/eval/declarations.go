package eval

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"github.com/trainsonnet/trainsonnet/lib"
	"github.com/trainsonnet/trainsonnet/prototypes"
)

// The declarations of the built-in prototypes, evaluated when the binary
// was built, one file each (declarations/<name>.json, the JSON of the
// prototype's output='spec'): looking a built-in up then costs a JSON
// decode instead of a Jsonnet evaluation of its parameters (a cold `gen`
// evaluated Jsonnet twice: the declaration, then the render).
// declarations/sources.txt names the digest of the embedded sources they
// were evaluated from (sourcesDigest); when that is not the binary's own
// (a prototype or library was edited and `go generate ./generator` not
// run since), every declaration is evaluated as before, so a stale file
// can never change what a prototype accepts. TestDeclarationsUpToDate
// keeps them current.
//
//go:embed declarations/*.json declarations/sources.txt
var declarationFiles embed.FS

// declarationsSourcesFile names the digest of the sources the embedded
// declarations were evaluated from.
const declarationsSourcesFile = "declarations/sources.txt"

// builtinDeclaration returns the declaration of the built-in prototype
// name as evaluated at build time, or "" when the embedded declarations
// are not of the sources this binary embeds.
func builtinDeclaration(name string) string {
	return declarationFrom(name, sourcesDigest())
}

// declarationFrom returns the embedded declaration of name if the
// embedded declarations were evaluated from the sources with the given
// digest, or "".
func declarationFrom(name, digest string) string {
	if declaredSources() != digest {
		return ""
	}
	data, err := declarationFiles.ReadFile("declarations/" + name + ".json")
	if err != nil {
		return ""
	}
	return string(data)
}

// declaredSources is the digest in declarations/sources.txt.
var declaredSources = sync.OnceValue(func() string {
	data, _ := declarationFiles.ReadFile(declarationsSourcesFile)
	return strings.TrimSpace(string(data))
})

// sourcesDigest is the sha256 of every embedded prototype and library
// file, with its path: what the declarations are evaluated from.
var sourcesDigest = sync.OnceValue(func() string {
	h := sha256.New()
	for _, tree := range []struct {
		dir   string
		files fs.FS
	}{{"prototypes", prototypes.FS}, {"lib", lib.FS}} {
		err := fs.WalkDir(tree.files, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(tree.files, path)
			if err != nil {
				return err
			}
			h.Write([]byte(tree.dir + "/" + path + "\x00" + strconv.Itoa(len(data)) + "\x00"))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "" // unreadable embedded files: no declaration matches
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
})
