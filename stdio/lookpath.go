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
//   - either way it must be an executable file: on Windows, a file with
//     an extension of PATHEXT (the child's), tried in its order when the
//     name has none, so "npx" finds npx.cmd as cmd.exe would.
//
// Relative PATH entries, "" and "." among them, are skipped, as os/exec
// refuses them (exec.ErrDot): a command is never picked up from a working
// directory by accident. The error is an *exec.Error wrapping
// exec.ErrNotFound, or the file's problem (fs.ErrNotExist,
// fs.ErrPermission for a file that is not executable).
func LookPath(name, dir string, env []string) (string, error) {
	if hasPathSep(name) {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		found, err := findExecutable(p, env)
		if err != nil {
			return "", &exec.Error{Name: name, Err: err}
		}
		return found, nil
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p, err := findExecutable(filepath.Join(d, name), env); err == nil {
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
// wins, as it does for the child. Names are compared as the system does
// (envFoldCase: on Windows, Path is PATH).
func lookupEnv(env []string, name string) (string, bool) {
	return lookupEnvFold(env, name, envFoldCase)
}

// lookupEnvFold is lookupEnv, with names compared without regard to case
// when fold is set.
func lookupEnvFold(env []string, name string, fold bool) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && (k == name || fold && strings.EqualFold(k, name)) {
			return v, true
		}
	}
	return "", false
}

// hasPathSep says whether name is a path rather than a name to look up:
// it holds a separator ('/' everywhere, '\\' too on Windows).
func hasPathSep(name string) bool {
	return strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/')
}
