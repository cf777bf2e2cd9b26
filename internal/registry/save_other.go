//go:build !unix

package registry

import "os"

// syncDir does nothing where a directory cannot be opened to be synced
// (Windows): there, the rename (MoveFileEx) is what the system makes
// durable.
func syncDir(string) error { return nil }

// keepOwner does nothing: ownership is not a uid here.
func keepOwner(*os.File, os.FileInfo) {}
