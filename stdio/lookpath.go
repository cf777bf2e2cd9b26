package stdio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LookPath finds the executable that Start runs for a child's argv[0]
// name, with the child's working directory dir and environment env, the
// way an MCP client's own spawn does:
//
//   - a name with a path separator is that file; a relative one is taken
//     from dir (the kernel resolves it after the child's chdir);
//   - a bare name is looked up in the child's PATH, the PATH of env,
//     which is the bridge's own unless the settings give the child
//     another (node's child_process, with which most MCP clients start
//     servers, searches the PATH of the environment it is given too);
//     without PATH in env, the bridge's;
//   - either way it must be an executable file.
//
// Relative PATH entries, "" and "." among them, are skipped, as os/exec
// refuses them (exec.ErrDot): a command is never picked up from a working
// directory by accident. The error is an *exec.Error wrapping
// exec.ErrNotFound, or the file's problem (fs.ErrNotExist,
// fs.ErrPermission for a file that is not executable).
func LookPath(name, dir string, env []string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, err := exec.LookPath(p); err != nil {
			return "", &exec.Error{Name: name, Err: unwrapExec(err)}
		}
		return p, nil
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// unwrapExec is the cause inside an *exec.Error, so the caller's error
// names the command as given rather than the path it was looked for at.
func unwrapExec(err error) error {
	if ee, ok := err.(*exec.Error); ok {
		return ee.Err
	}
	return err
}

// lookupEnv is the value of name in env ("K=V" entries); the last entry
// wins, as it does for the child.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
