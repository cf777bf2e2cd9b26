package registry

// Saving the file: atomically, so that a crash at any moment leaves
// either the old file or the new one, whole.

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// tmpPattern names the temporary files of a save, beside the file: a
// dot file whose name says whose it is, so that the leftovers of a crash
// can be recognised and removed.
func tmpPattern(file string) string { return "." + filepath.Base(file) + ".mcp-bridge-*.tmp" }

// save writes data over the file: to a temporary file in the same
// directory, synced, with the file's permissions (and owner, where the
// system allows), then renamed over it, and the directory synced, so
// that the rename itself is on disk. A file given through a symbolic link
// is written where the link points, and the link kept.
func (r *Registry) save(data []byte) (err error) {
	file := r.file
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	dir := filepath.Dir(file)
	fi, statErr := os.Stat(file)
	tmp, err := os.CreateTemp(dir, tmpPattern(file))
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if statErr == nil {
		if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
			return err
		}
		keepOwner(tmp, fi)
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if r.opts.HoldBeforeRename != nil {
		r.opts.HoldBeforeRename(tmp.Name())
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	renamed = true
	return syncDir(dir)
}

// removeLeftovers removes the temporary files a save left when the
// bridge died before its rename: the file itself is whole, old or new.
func removeLeftovers(file string, log *slog.Logger) {
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), tmpPattern(file)))
	for _, tmp := range left {
		if strings.HasSuffix(tmp, ".tmp") && os.Remove(tmp) == nil {
			log.Info("removed the temporary file of a save that did not finish", "file", tmp)
		}
	}
}
