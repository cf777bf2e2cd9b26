//go:build !windows

package stdio

// The launcher's report pipe, as every system with a launcher (all but
// Windows, whose Job Object needs none) reads it: one copy for Linux and
// the other Unix systems.

import (
	"bufio"
	"io"
	"log/slog"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/stdio/internal/launch"
)

// started closes the bridge's copy of the launcher's end of the report
// pipe, once the launcher has its own (or failed to start).
func (sp *sandboxSpawn) started() {
	if sp != nil {
		sp.reportW.Close()
	}
}

// close closes the report pipe of a launcher that did not start.
func (sp *sandboxSpawn) close() {
	if sp != nil {
		sp.reportR.Close()
	}
}

// await reads the launcher's report to its end: the server runs (nil),
// or the launcher says why it does not. Warnings go to log.
func (sp *sandboxSpawn) await(log *slog.Logger) *StartError {
	if sp == nil {
		return nil
	}
	defer sp.reportR.Close()
	br := bufio.NewReader(sp.reportR)
	execing := false
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "X":
			execing = true
		case strings.HasPrefix(line, "W"):
			log.Warn("sandbox", "warning", line[1:])
		case strings.HasPrefix(line, "E"):
			kind, detail, _ := strings.Cut(line[1:], "\t")
			se := &StartError{Kind: startKinds[kind], Detail: detail, Program: sp.plan.launch.Path}
			if se.Kind == StartPin {
				se.Detail, se.SHA256, _ = strings.Cut(detail, "\t")
				se.Pinned = sp.plan.launch.PinSHA256
			}
			return se
		}
		switch {
		case err == io.EOF && execing:
			return nil
		case err == io.EOF:
			return &StartError{Kind: StartSandbox, Detail: "the sandbox launcher died before it could run the server"}
		case err != nil:
			return &StartError{Kind: StartSandbox, Detail: "reading the launcher's report: " + err.Error()}
		}
	}
}

// startKinds are the StartError kinds of the launcher's.
var startKinds = map[string]string{launch.KindPin: StartPin, launch.KindSandbox: StartSandbox, launch.KindExec: StartExec}
