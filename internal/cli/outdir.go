package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator"
)

// writeDir writes files as the directory dir, atomically as far as the
// file system allows: everything goes into a fresh directory beside dir,
// which then takes dir's place by rename. On any error dir is left exactly
// as it was.
//
// Nothing trainsonnet did not write is ever deleted. An existing dir is
// replaced only if it is empty or a base trainsonnet wrote before and
// holds nothing else: its kustomization.yaml exactly as trainsonnet wrote
// it (generator.GeneratedResources) and the object files it lists, each a
// regular file. Anything else (a patch of the user's, a subdirectory, a
// symlink, an edited kustomization) is refused, by name, as a usage error.
//
// A symlink given as dir is followed, never replaced: its target directory
// is what gets replaced (beside itself), so the link stays and points at
// the fresh base. A dangling link is refused.
func writeDir(dir string, files []generator.File) error {
	dir, err := absDir(dir)
	if err != nil {
		return err
	}
	target, err := followLink(dir)
	if err != nil {
		return err
	}
	existing, mode, err := checkReplaceable(dir, target)
	if err != nil {
		return err
	}
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(target)+".new-*")
	if err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }() // a no-op once renamed; a leftover is a hidden .new-* directory
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("--output-dir: %w", err)
		}
	}
	if existing && holdsWorkingDir(target) {
		return replaceInPlace(tmp, target, files)
	}
	if !existing {
		if err := os.Rename(tmp, target); err != nil {
			return fmt.Errorf("--output-dir: %w", err)
		}
		return nil
	}
	old := tmp + ".old"
	if err := os.Rename(target, old); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	if err := os.Rename(tmp, target); err != nil {
		if rerr := os.Rename(old, target); rerr != nil {
			return fmt.Errorf("--output-dir: %w (and restoring the previous base failed: %w; it is in %s)", err, rerr, old)
		}
		return fmt.Errorf("--output-dir: %w", err)
	}
	return os.RemoveAll(old)
}

// checkOutputDir refuses a --output-dir that writeDir would refuse, so
// that gen can say so before rendering (writeDir checks again).
func checkOutputDir(dir string) error {
	dir, err := absDir(dir)
	if err != nil {
		return err
	}
	target, err := followLink(dir)
	if err != nil {
		return err
	}
	_, _, err = checkReplaceable(dir, target)
	return err
}

// absDir is dir cleaned, and absolute when it ends in . or .. (".",
// "base/.."): the fresh directory is made beside it, in its parent.
func absDir(dir string) (string, error) {
	clean := filepath.Clean(dir)
	if b := filepath.Base(clean); b != "." && b != ".." {
		return clean, nil
	}
	abs, err := filepath.Abs(clean)
	if err != nil {
		return "", usagef("--output-dir %s: %v", dir, err)
	}
	return abs, nil
}

// followLink returns the directory that dir names: dir itself, or, if dir
// is a symlink, the path it resolves to (so that the link is kept and the
// directory it points at is replaced). A link whose target does not exist
// is refused: creating a directory at the end of a dangling link would be
// a guess at what the user meant.
func followLink(dir string) (string, error) {
	st, err := os.Lstat(dir)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return dir, nil // a missing dir is created; other errors come from checkReplaceable
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		to, _ := os.Readlink(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return "", usagef("--output-dir %s: is a symlink to %s, which does not exist; create that directory or point --output-dir elsewhere", dir, to)
		}
		return "", usagef("--output-dir %s: is a symlink to %s, which cannot be followed: %v", dir, to, errors.Unwrap(err))
	}
	return resolved, nil
}

// checkReplaceable reports whether target (the directory --output-dir dir
// names) exists and the mode a fresh one should have, and refuses (as a
// usage error) a target that is a file or holds anything trainsonnet did
// not write.
func checkReplaceable(dir, target string) (bool, fs.FileMode, error) {
	const fresh = 0o755
	shown := dir
	if target != dir {
		shown = dir + " (a symlink to " + target + ")"
	}
	st, err := os.Stat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fresh, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("--output-dir: %w", err)
	}
	if !st.IsDir() {
		return false, 0, usagef("--output-dir %s: exists and is not a directory", shown)
	}
	entries, err := os.ReadDir(target)
	if err != nil {
		return false, 0, fmt.Errorf("--output-dir: %w", err)
	}
	if len(entries) == 0 {
		return true, st.Mode().Perm(), nil
	}
	notABase := usagef("--output-dir %s: is not empty and not a base trainsonnet wrote; refusing to replace it (choose another directory, or empty this one)", shown)
	kfile := filepath.Join(target, generator.KustomizationFile)
	if kst, err := os.Lstat(kfile); err != nil || !kst.Mode().IsRegular() {
		return false, 0, notABase
	}
	data, err := os.ReadFile(kfile)
	if err != nil {
		return false, 0, fmt.Errorf("--output-dir: %w", err)
	}
	resources, ok := generator.GeneratedResources(data)
	if !ok && strings.HasPrefix(string(data), generator.GeneratedMarker) {
		return false, 0, usagef("--output-dir %s: %s was edited since trainsonnet wrote it and regenerating would lose the edit; refusing to replace it (put the change in an overlay, or delete the directory to start over)", shown, generator.KustomizationFile)
	}
	if !ok {
		return false, 0, notABase
	}
	ours := map[string]bool{generator.KustomizationFile: true}
	for _, r := range resources {
		ours[r] = true
	}
	var foreign, links []string
	for _, e := range entries {
		switch {
		case !ours[e.Name()]:
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			foreign = append(foreign, name)
		case e.Type()&fs.ModeSymlink != 0:
			links = append(links, e.Name())
		case !e.Type().IsRegular():
			foreign = append(foreign, e.Name())
		}
	}
	slices.Sort(foreign)
	slices.Sort(links)
	if len(foreign) > 0 {
		return false, 0, usagef("--output-dir %s: holds %s, which trainsonnet did not write; refusing to replace the base (move %s to an overlay, or delete %s, and run again)",
			shown, strings.Join(foreign, ", "), them(len(foreign), "it", "them"), them(len(foreign), "it", "them"))
	}
	if len(links) > 0 {
		return false, 0, usagef("--output-dir %s: %s %s a symlink where trainsonnet wrote a file; refusing to replace the base (remove the %s, or point --output-dir at a directory of its own, and run again)",
			shown, strings.Join(links, ", "), them(len(links), "is", "are"), them(len(links), "link", "links"))
	}
	return true, st.Mode().Perm(), nil
}

func them(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// holdsWorkingDir reports whether dir is the working directory or holds
// it: replacing dir by rename would leave the shell that ran trainsonnet
// in a deleted directory (--output-dir .).
func holdsWorkingDir(dir string) bool {
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, wd)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// replaceInPlace replaces the base in dir file by file, each by rename
// from tmp: the object files, then the kustomization that lists them,
// then the files of the previous base that the new one does not have.
// (checkReplaceable made sure dir holds nothing else.)
func replaceInPlace(tmp, dir string, files []generator.File) error {
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Name] = true
	}
	old, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	for _, last := range []bool{false, true} {
		for _, f := range files {
			if (f.Name == generator.KustomizationFile) != last {
				continue
			}
			if err := os.Rename(filepath.Join(tmp, f.Name), filepath.Join(dir, f.Name)); err != nil {
				return fmt.Errorf("--output-dir: %w", err)
			}
		}
	}
	for _, e := range old {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("--output-dir: %w", err)
			}
		}
	}
	return nil
}
