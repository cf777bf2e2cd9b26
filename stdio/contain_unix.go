//go:build unix && !linux

package stdio

import (
	"fmt"
	"os/exec"
	"syscall"
)

// The process-group strategy of the Unix systems other than Linux: macOS
// (contain_darwin.go), and the portable fallback for the rest
// (contain_other.go). They differ only in how a group's descendants are
// found (groupKin) and in what the log says of it (groupWhy).

// stopSignals are Stop's steps after closing stdin, one grace period
// apart: the polite request, then the end.
var stopSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}

func probe(c Containment) (string, error) {
	switch c {
	case ContainProcessGroup:
		return groupWhy, nil
	case ContainPIDNamespace, ContainCgroup:
		return "", errOtherSystem{c, "Linux"}
	case ContainJobObject:
		return "", errOtherSystem{c, "Windows"}
	}
	return "", fmt.Errorf("unknown containment %q", c)
}

func startTree(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error) {
	if _, err := probe(s); err != nil {
		return nil, err
	}
	if sp != nil {
		if err := sp.command(cmd); err != nil {
			return nil, err
		}
	}
	// Setpgid: the child leads a group of its own, so a terminal's Ctrl-C
	// reaches only the bridge, and one signal reaches the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &groupTree{cmd: cmd, kin: groupKin()}, nil
}
