package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainsonnet/trainsonnet/generator"
)

// writeDir writes files as the directory dir, atomically as far as the
// file system allows: everything goes into a fresh directory beside dir,
// which then takes dir's place by rename. On any error dir is left exactly
// as it was. An existing dir is replaced only if it is empty or a base
// trainsonnet wrote before (its kustomization starts with
// generator.GeneratedMarker), never a directory of other files.
func writeDir(dir string, files []generator.File) error {
	dir = filepath.Clean(dir)
	existing, err := checkReplaceable(dir)
	if err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-*")
	if err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("--output-dir: %w", err)
		}
	}
	if !existing {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("--output-dir: %w", err)
		}
		return nil
	}
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("--output-dir: %w (and restoring the previous base failed: %v; it is in %s)", err, rerr, old)
		}
		return fmt.Errorf("--output-dir: %w", err)
	}
	return os.RemoveAll(old)
}

// checkReplaceable reports whether dir exists, and refuses (as a usage
// error) a dir that is a file or holds anything but a trainsonnet base.
func checkReplaceable(dir string) (bool, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--output-dir: %w", err)
	}
	if !st.IsDir() {
		return false, usagef("--output-dir %s: exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("--output-dir: %w", err)
	}
	if len(entries) == 0 {
		return true, nil
	}
	f, err := os.Open(filepath.Join(dir, generator.KustomizationFile))
	if err == nil {
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		if strings.HasPrefix(line, generator.GeneratedMarker) {
			for _, e := range entries {
				if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
					return false, usagef("--output-dir %s: holds %s, which trainsonnet did not write; refusing to replace it", dir, e.Name())
				}
			}
			return true, nil
		}
	}
	return false, usagef("--output-dir %s: is not empty and not a base trainsonnet wrote; refusing to replace it", dir)
}
