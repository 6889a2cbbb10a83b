// Command mkimage packs a root filesystem directory into a single-layer OCI
// image and writes it as an OCI image-layout tar archive, the format that
// `ctr -n k8s.io images import` reads. It lets the test node run images
// built from Debian packages without any registry or Docker engine.
//
//	mkimage -rootfs DIR -ref localhost/trainsonnet-mpi:TAG -config config.json -out image.tar \
//	        [-also localhost/trainsonnet-entrypoint:TAG=entrypoint.json]...
//
// The -config file holds the "config" object of the OCI image configuration
// (Env, Entrypoint, Cmd, WorkingDir, User, ...); it is copied as is. Each
// -also is one more image of the same layer, with a config of its own (an
// ENTRYPOINT, say): the archive holds the layer once.
//
// The archive is reproducible: the same rootfs and flags give the same
// bytes. The layer keeps numeric owners, modes, modification times, symbolic
// and hard links, device nodes, FIFOs and file capabilities
// (security.capability). Sockets are left out. The directories named by
// -empty go into the layer without their contents, since the runtime mounts
// over them.
//
// The index entry carries the annotation io.containerd.image.name with the
// full reference: containerd's importer names the image after it. With only
// the OCI org.opencontainers.image.ref.name annotation, containerd 1.6 names
// the image "import-<date>:<tag>", which no pod can ask for.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type options struct {
	rootfs, ref, config, out string
	empty                    map[string]bool
	also                     []image // more images of the layer
}

// image is a reference and its config file.
type image struct{ ref, config string }

// alsoFlag reads -also REF=CONFIG, repeated.
type alsoFlag struct{ o *options }

func (a alsoFlag) String() string { return "" }

func (a alsoFlag) Set(v string) error {
	ref, config, ok := strings.Cut(v, "=")
	if !ok || ref == "" || config == "" {
		return errors.New("want REF=CONFIG")
	}
	a.o.also = append(a.o.also, image{ref, config})
	return nil
}

func main() {
	var o options
	var empty string
	flag.StringVar(&o.rootfs, "rootfs", "", "root filesystem directory (required)")
	flag.StringVar(&o.ref, "ref", "", "full image reference, e.g. localhost/trainsonnet-mpi:0123abcd (required, with a tag)")
	flag.StringVar(&o.config, "config", "", `JSON file with the image's runtime config, e.g. {"Cmd": ["/bin/sh"]} (required)`)
	flag.StringVar(&o.out, "out", "", "output archive (required)")
	flag.StringVar(&empty, "empty", "dev,proc,sys", "comma-separated top-level directories stored without their contents")
	flag.Var(alsoFlag{&o}, "also", "REF=CONFIG: one more image of the same layer, with its own config (repeatable)")
	flag.Parse()
	if o.rootfs == "" || o.ref == "" || o.config == "" || o.out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	o.empty = map[string]bool{}
	for _, d := range strings.Split(empty, ",") {
		if d = strings.Trim(strings.TrimSpace(d), "/"); d != "" {
			o.empty[d] = true
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	images := append([]image{{o.ref, o.config}}, o.also...)
	for _, im := range images {
		if _, err := tagOf(im.ref); err != nil {
			return err
		}
	}

	// The layer goes to a temporary file first: its digest names its blob.
	layerFile, err := os.CreateTemp(filepath.Dir(o.out), ".mkimage-layer-")
	if err != nil {
		return err
	}
	defer os.Remove(layerFile.Name())
	defer layerFile.Close()
	layer, err := writeLayer(layerFile, o.rootfs, o.empty)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}

	var blobs [][]byte
	var manifests []descriptor
	for _, im := range images {
		configJSON, manifestJSON, err := imageOf(im.config, layer)
		if err != nil {
			return err
		}
		tag, _ := tagOf(im.ref)
		blobs = append(blobs, configJSON, manifestJSON)
		manifests = append(manifests, descriptor{
			MediaType: mediaManifest,
			Digest:    digest(manifestJSON),
			Size:      int64(len(manifestJSON)),
			Platform:  &platform{Architecture: runtime.GOARCH, OS: "linux"},
			Annotations: map[string]string{
				"io.containerd.image.name":          im.ref,
				"org.opencontainers.image.ref.name": tag,
			},
		})
	}
	indexJSON, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaIndex,
		"manifests":     manifests,
	})
	if err != nil {
		return err
	}

	partial := o.out + ".partial"
	out, err := os.Create(partial)
	if err != nil {
		return err
	}
	defer os.Remove(partial)
	defer out.Close()
	if err := writeLayout(out, layerFile, layer, blobs, indexJSON); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(partial, o.out); err != nil {
		return err
	}
	fmt.Printf("mkimage: %s -> %s (layer %s, %d bytes)\n", o.ref, o.out, layer.Digest, layer.Size)
	return nil
}

// tagOf returns the tag of a reference and refuses references without one
// or with "latest": the kubelet would try to pull those (no registry here).
// imageOf is the config and manifest of an image of the layer, its run
// config read from the file config.
func imageOf(config string, layer descriptor) (configJSON, manifestJSON []byte, err error) {
	raw, err := os.ReadFile(config)
	if err != nil {
		return nil, nil, err
	}
	var runConfig map[string]any
	if err := json.Unmarshal(raw, &runConfig); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", config, err)
	}
	configJSON, err = json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       runConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layer.Digest}},
	})
	if err != nil {
		return nil, nil, err
	}
	manifestJSON, err = json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        descriptor{MediaType: mediaConfig, Digest: digest(configJSON), Size: int64(len(configJSON))},
		"layers":        []descriptor{layer},
	})
	return configJSON, manifestJSON, err
}

func tagOf(ref string) (string, error) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") || i == len(ref)-1 {
		return "", fmt.Errorf("reference %q has no tag", ref)
	}
	if tag := ref[i+1:]; tag != "latest" {
		return tag, nil
	}
	return "", fmt.Errorf("reference %q: the tag latest makes the kubelet pull", ref)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// writeLayout writes the OCI image layout as a tar stream: oci-layout,
// index.json and the blobs (the layer from layerFile, then the others).
func writeLayout(w io.Writer, layerFile *os.File, layer descriptor, blobs [][]byte, index []byte) error {
	tw := tar.NewWriter(w)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, Format: tar.FormatPAX})
	}
	file := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	blobName := func(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }

	if err := file("oci-layout", 30, strings.NewReader(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", int64(len(index)), bytes.NewReader(index)); err != nil {
		return err
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	if _, err := layerFile.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := file(blobName(layer.Digest), layer.Size, layerFile); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := file(blobName(digest(b)), int64(len(b)), bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return tw.Close()
}

// countingHash hashes and counts what is written through it.
type countingHash struct {
	hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.Hash.Write(p)
}

type inode struct{ dev, ino uint64 }

// writeLayer writes rootfs as an uncompressed tar layer to w and returns
// its descriptor. With an uncompressed layer the blob digest is also the
// diff ID.
func writeLayer(w io.Writer, rootfs string, empty map[string]bool) (descriptor, error) {
	sum := &countingHash{Hash: sha256.New()}
	tw := tar.NewWriter(io.MultiWriter(w, sum))
	links := map[inode]string{}
	err := filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootfs, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		hdr, skip, err := header(path, rel, links)
		if err != nil || skip {
			return err
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if hdr.Typeflag == tar.TypeReg && hdr.Size > 0 {
			if err := copyFile(tw, path, hdr.Size); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		if d.IsDir() && empty[rel] {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return descriptor{}, err
	}
	if err := tw.Close(); err != nil {
		return descriptor{}, err
	}
	return descriptor{
		MediaType: mediaLayer,
		Digest:    "sha256:" + hex.EncodeToString(sum.Sum(nil)),
		Size:      sum.n,
	}, nil
}

// header builds the tar header of one rootfs entry. skip is true for
// entries a tar layer cannot hold (sockets).
func header(path, rel string, links map[inode]string) (*tar.Header, bool, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&fs.ModeSocket != 0 {
		return nil, true, nil
	}
	target := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = os.Readlink(path); err != nil {
			return nil, false, err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, target)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", rel, err)
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Format = tar.FormatPAX
	// Numeric owners only: the host's user names mean nothing in the image.
	hdr.Uname, hdr.Gname = "", ""
	hdr.ModTime = fi.ModTime().Truncate(time.Second)
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, false, fmt.Errorf("%s: no stat data", rel)
	}
	hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		key := inode{uint64(st.Dev), st.Ino}
		if first, ok := links[key]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
		} else {
			links[key] = rel
		}
	}
	if fi.Mode().IsRegular() {
		caps, err := fileCaps(path)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", rel, err)
		}
		if caps != "" {
			hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": caps}
		}
	}
	return hdr, false, nil
}

// fileCaps returns the security.capability extended attribute, or "".
func fileCaps(path string) (string, error) {
	buf := make([]byte, 64)
	n, err := syscall.Getxattr(path, "security.capability", buf)
	if errors.Is(err, syscall.ENODATA) || errors.Is(err, syscall.ENOTSUP) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func copyFile(w io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return err
	}
	if n != size {
		return errors.New("file changed while archiving")
	}
	return nil
}
