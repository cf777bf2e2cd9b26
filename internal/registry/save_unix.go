//go:build unix

package registry

import (
	"os"
	"syscall"
)

// syncDir syncs a directory, so that a rename in it is on disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// keepOwner gives the temporary file the owner of the file it replaces,
// when the bridge may (it runs as root, or as that owner already).
func keepOwner(tmp *os.File, fi os.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = tmp.Chown(int(st.Uid), int(st.Gid))
	}
}
