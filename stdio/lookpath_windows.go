package stdio

import (
	"io/fs"
	"os"
	"os/exec"
)

// envFoldCase: Windows compares environment names without regard to case
// (the system's is usually "Path"; os/exec dedups the child's that way).
const envFoldCase = true

// findExecutable is the file that file names on Windows: file itself if
// it has an extension, or file with one of the child's PATHEXT extensions
// (windowsCandidates), the first that is a regular file. This is the rule
// of os/exec's LookPath, which would read the bridge's PATHEXT; Windows
// has no executable bit to check. The error is exec.ErrNotFound for a
// name without an extension, as in os/exec, else fs.ErrNotExist, or
// fs.ErrPermission for a directory.
func findExecutable(file string, env []string) (string, error) {
	pathext, _ := lookupEnv(env, "PATHEXT")
	if pathext == "" {
		pathext = os.Getenv("PATHEXT")
	}
	isDir := false
	for _, f := range windowsCandidates(file, pathExts(pathext)) {
		fi, err := os.Stat(f)
		switch {
		case err != nil:
		case fi.IsDir():
			isDir = true
		default:
			return f, nil
		}
	}
	switch {
	case isDir:
		return "", fs.ErrPermission
	case hasWindowsExt(file):
		return "", fs.ErrNotExist
	}
	return "", exec.ErrNotFound
}
