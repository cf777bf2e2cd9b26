//go:build !windows

package stdio

import "os/exec"

// envFoldCase: environment names are case-sensitive.
const envFoldCase = false

// findExecutable is file if it is an executable file, else the problem
// with it (fs.ErrNotExist, fs.ErrPermission).
func findExecutable(file string, _ []string) (string, error) {
	if _, err := exec.LookPath(file); err != nil {
		return "", unwrapExec(err)
	}
	return file, nil
}
