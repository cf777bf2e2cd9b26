package stdio

import (
	"bufio"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/stdio/internal/nsinit"
)

// The init process itself is package nsinit, run as this executable again.
const (
	initArg0     = nsinit.Arg0
	initEnv      = nsinit.Env
	initReportFD = nsinit.ReportFD
)

// readInitReport reads one line of an init's report: its kind ('P', 'E',
// 'S') and the rest; kind 0 at the end of the pipe.
func readInitReport(br *bufio.Reader) (byte, string) {
	line, err := br.ReadString('\n')
	if err != nil || len(line) < 2 {
		return 0, ""
	}
	return line[0], strings.TrimSuffix(line[1:], "\n")
}
