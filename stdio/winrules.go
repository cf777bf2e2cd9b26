package stdio

import (
	"errors"
	"fmt"
	"strings"
)

// The Windows rules for finding and running a command, as functions of
// their inputs alone, so that they are tested on every system (CI runs on
// Linux) though only contain_windows.go and lookpath_windows.go use them.

// defaultPathExt is what Windows and os/exec use when PATHEXT is unset.
var defaultPathExt = []string{".com", ".exe", ".bat", ".cmd"}

// pathExts parses a PATHEXT value (".COM;.EXE;.BAT;.CMD") into the
// extensions to try, in order, lower case, each with its dot: the parsing
// of os/exec's LookPath on Windows, applied to the child's PATHEXT rather
// than the bridge's (as PATH is the child's; see LookPath).
func pathExts(value string) []string {
	var exts []string
	for e := range strings.SplitSeq(strings.ToLower(value), ";") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	if len(exts) == 0 {
		return defaultPathExt
	}
	return exts
}

// hasWindowsExt says whether the last element of a Windows path has an
// extension.
func hasWindowsExt(file string) bool {
	i := strings.LastIndexByte(file, '.')
	return i >= 0 && strings.LastIndexAny(file, `:\/`) < i
}

// windowsCandidates lists the files that the Windows command file names,
// in the order os/exec tries them: the name as given if it has an
// extension, then the name with each of exts appended ("npx" is npx.com,
// npx.exe, npx.bat, npx.cmd; "foo.bat" may be foo.bat.exe).
func windowsCandidates(file string, exts []string) []string {
	var out []string
	if hasWindowsExt(file) || len(exts) == 0 {
		out = append(out, file)
	}
	for _, e := range exts {
		out = append(out, file+e)
	}
	return out
}

// isBatchFile says whether path is a batch file (.bat, .cmd), which
// Windows runs only through cmd.exe.
func isBatchFile(path string) bool {
	if !hasWindowsExt(path) {
		return false
	}
	ext := strings.ToLower(path[strings.LastIndexByte(path, '.'):])
	return ext == ".bat" || ext == ".cmd"
}

// errBatchArg is why an argument cannot be handed to a batch file.
var errBatchArg = errors.New("cmd.exe would read it as its own syntax, not as text")

// batchCommandLine is the command line that runs the batch file script
// with args through cmdExe, in the form CreateProcess's documentation
// asks for ("to run a batch file, you must start the command interpreter;
// set lpApplicationName to cmd.exe and set lpCommandLine to ... /c plus
// the name of the batch file"):
//
//	"C:\Windows\System32\cmd.exe" /d /v:off /s /c ""C:\...\npx.cmd" -y "a b""
//
// /d skips the AutoRun commands of the registry, /v:off keeps '!' plain,
// and /s makes cmd.exe drop exactly the outer quotes and run the rest as
// written. What cmd.exe reads next is its own syntax, not the quoting of
// CommandLineToArgvW that os/exec writes (its documentation says so of
// cmd.exe and batch files): & | < > ^ ( ) split or redirect the command
// unless quoted, and %NAME% is expanded even inside quotes. So every
// argument holding a character cmd.exe treats specially is quoted, with
// the backslashes before its closing quote doubled, as the program the
// batch file runs (node, for npx.cmd) reads its command line with the
// rules of CommandLineToArgvW. An argument holding what no quoting
// protects (" % and line breaks) is refused with errBatchArg rather than
// run as something else (BatBadBut, CVE-2024-24576).
func batchCommandLine(cmdExe, script string, args []string) (string, error) {
	var b strings.Builder
	b.WriteString(`"` + cmdExe + `" /d /v:off /s /c "`)
	for i, a := range append([]string{script}, args...) {
		if strings.ContainsAny(a, "\"%\r\n\x00") {
			what := "argument " + fmt.Sprint(i)
			if i == 0 {
				what = "the batch file's path"
			}
			return "", fmt.Errorf("%s %q: %w", what, a, errBatchArg)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if i > 0 && a != "" && !strings.ContainsAny(a, " \t&|<>^(),;=!'`") {
			b.WriteString(a)
			continue
		}
		b.WriteByte('"')
		b.WriteString(a)
		// Backslashes before the closing quote are doubled, or the
		// program behind the batch file reads \" as a quote.
		b.WriteString(strings.Repeat(`\`, len(a)-len(strings.TrimRight(a, `\`))))
		b.WriteByte('"')
	}
	b.WriteByte('"')
	return b.String(), nil
}
