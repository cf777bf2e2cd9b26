//go:build !linux && !windows

package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// run applies what this system has of the plan (resource limits, a pin
// check) and executes the server. There is no sealed in-memory copy to
// execute here, so the pin is checked on the file, which is then executed
// by path: a swap between the two can win (stdio reports the pin as not
// enforced here, and only best-effort runs with it).
func run(p *Plan, argv, env []string, rep reporter) int {
	if p.PinSHA256 != "" {
		got, err := fileSHA256(p.Path)
		if err != nil {
			return rep.fail(KindPin, "cannot check %s against its pin: %v", p.Path, err)
		}
		if got != p.PinSHA256 {
			return rep.pinMismatch(p.Path, got, p.PinSHA256)
		}
	}
	for _, rl := range p.Rlimits {
		var r unix.Rlimit
		set(&r.Cur, rl.Cur)
		set(&r.Max, rl.Max)
		if err := unix.Setrlimit(rl.Resource, &r); err != nil {
			return rep.fail(KindSandbox, "setrlimit %d: %v", rl.Resource, err)
		}
	}
	rep.execing()
	err := syscall.Exec(p.Path, argv, env)
	return rep.fail(KindExec, "exec %s: %v", p.Path, err)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// set stores v in a field of unix.Rlimit, which is uint64 on some systems
// and int64 on others.
func set[T int64 | uint64](field *T, v uint64) { *field = T(v) }
