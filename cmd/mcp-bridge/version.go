package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release, stamped by a release build with
// -ldflags "-X main.version=v1.2.3"; empty, the build info's module
// version is used.
var version string

// versionString is what "mcp-bridge version" and --version print, one
// line: the version, the commit (and whether the tree had local changes)
// and the Go version, from what the linker and the go command recorded.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(version, bi)
}

// versionLine is versionString for a stamped version (may be empty) and
// the build info (may be nil).
func versionLine(stamped string, bi *debug.BuildInfo) string {
	v, commit, modified := stamped, "", false
	if bi != nil {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	var b strings.Builder
	b.WriteString("mcp-bridge " + v)
	switch {
	case commit == "":
		b.WriteString(" (commit unknown")
	default:
		b.WriteString(" (commit " + commit)
		if modified {
			b.WriteString(", modified")
		}
	}
	b.WriteString(") " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH)
	return b.String()
}
