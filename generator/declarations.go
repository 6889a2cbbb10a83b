package generator

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"strconv"
	"sync"

	"github.com/trainsonnet/trainsonnet/lib"
	"github.com/trainsonnet/trainsonnet/prototypes"
)

// The declarations of the built-in prototypes, evaluated when the binary
// was built, one file each (declarations/<name>.json): looking a built-in
// up then costs a JSON decode instead of a Jsonnet evaluation of its
// parameters (a cold `gen` evaluated Jsonnet twice: the declaration, then
// the render). Each file names the digest of the embedded sources it was
// evaluated from (sourcesDigest); when that is not the binary's own (a
// prototype or library was edited and `go generate ./generator` not run
// since), the declaration is evaluated as before, so a stale file can
// never change what a prototype accepts. TestDeclarationsUpToDate keeps
// them current.
//
//go:embed declarations/*.json
var declarationFiles embed.FS

// declarationFile is the shape of declarations/<name>.json.
type declarationFile struct {
	Sources     string          `json:"sources"`
	Declaration json.RawMessage `json:"declaration"`
}

// builtinDeclaration returns the declaration of the built-in prototype
// name as evaluated at build time from the sources this binary embeds, or
// "" when there is none.
func builtinDeclaration(name string) string {
	data, err := declarationFiles.ReadFile("declarations/" + name + ".json")
	if err != nil {
		return ""
	}
	return declarationFor(data, sourcesDigest())
}

// declarationFor returns the declaration in data if it was evaluated from
// the sources with the given digest, or "".
func declarationFor(data []byte, digest string) string {
	var f declarationFile
	if json.Unmarshal(data, &f) != nil || f.Sources != digest || len(f.Declaration) == 0 {
		return ""
	}
	return string(f.Declaration)
}

// encodeDeclaration is the content of declarations/<name>.json for the
// declaration spec (the JSON of a prototype's output='spec').
func encodeDeclaration(spec string) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // descriptions show <name> as it is
	enc.SetIndent("", "  ")
	if err := enc.Encode(declarationFile{Sources: sourcesDigest(), Declaration: json.RawMessage(spec)}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

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
