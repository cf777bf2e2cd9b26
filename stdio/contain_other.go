//go:build unix && !linux && !darwin

package stdio

import "os/exec"

// The portable fallback, for the Unix systems the bridge has no
// containment of its own for (FreeBSD and the other BSDs, illumos): a
// process group per child, signalled whole. What it guarantees, against
// Linux and macOS:
//
//   - Stop, Kill, the end of a session and the bridge's shutdown reach the
//     child and every process still in its process group: the same stop
//     sequence (stdin closed, grace, SIGTERM, grace, SIGKILL).
//   - A descendant that left the group (setsid, setpgid) is not found:
//     no process table is read here.
//   - The child's exit is waited for by reaping it (these systems give Go
//     no wait without reaping); what is left of its group is then killed.
//     A group id is not reused while a process of the group lives, so
//     that kill reaches the leftovers, or nothing.
//   - When the bridge dies, the child gets the end of its stdin, which
//     MCP servers exit on (see contain_darwin.go): no Pdeathsig here.

// groupWhy is what the log says of the process-group strategy here.
const groupWhy = "a process group per child (descendants that leave the group are not followed on this system)"

func groupKin() kin { return groupOnly{} }

// groupOnly finds no descendants: the group signal is all there is.
type groupOnly struct{}

func (groupOnly) below(int) []kinRef { return nil }
func (groupOnly) left() []kinRef     { return nil }
func (groupOnly) done(int)           {}

// waitExit reaps the command: there is no wait without it here.
func (groupOnly) waitExit(cmd *exec.Cmd) (bool, error) { return true, cmd.Wait() }
