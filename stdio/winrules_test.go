package stdio

import (
	"errors"
	"slices"
	"testing"
)

// The Windows rules of winrules.go, tested where CI runs.

func TestPathExts(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC", []string{".com", ".exe", ".bat", ".cmd", ".vbs", ".vbe", ".js", ".jse", ".wsf", ".wsh", ".msc"}},
		{"", []string{".com", ".exe", ".bat", ".cmd"}},
		{";;", []string{".com", ".exe", ".bat", ".cmd"}},
		{"EXE; cmd ;", []string{".exe", ".cmd"}},
		{".Cmd", []string{".cmd"}},
	}
	for _, tt := range tests {
		if got := pathExts(tt.value); !slices.Equal(got, tt.want) {
			t.Errorf("pathExts(%q) = %q, want %q", tt.value, got, tt.want)
		}
	}
}

func TestWindowsCandidates(t *testing.T) {
	exts := pathExts("")
	tests := []struct {
		name, file string
		want       []string
	}{
		{"npx finds npx.cmd", `C:\Program Files\nodejs\npx`, []string{
			`C:\Program Files\nodejs\npx.com`, `C:\Program Files\nodejs\npx.exe`,
			`C:\Program Files\nodejs\npx.bat`, `C:\Program Files\nodejs\npx.cmd`,
		}},
		{"a name with an extension is tried as given first", `C:\bin\uvx.exe`, []string{
			`C:\bin\uvx.exe`, `C:\bin\uvx.exe.com`, `C:\bin\uvx.exe.exe`, `C:\bin\uvx.exe.bat`, `C:\bin\uvx.exe.cmd`,
		}},
		{"a dot in a directory is no extension", `C:\node.js\npx`, []string{
			`C:\node.js\npx.com`, `C:\node.js\npx.exe`, `C:\node.js\npx.bat`, `C:\node.js\npx.cmd`,
		}},
		{"forward slashes separate too", `C:/tools.d/server`, []string{
			`C:/tools.d/server.com`, `C:/tools.d/server.exe`, `C:/tools.d/server.bat`, `C:/tools.d/server.cmd`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := windowsCandidates(tt.file, exts); !slices.Equal(got, tt.want) {
				t.Errorf("windowsCandidates(%q) =\n%q\nwant\n%q", tt.file, got, tt.want)
			}
		})
	}
}

func TestIsBatchFile(t *testing.T) {
	for path, want := range map[string]bool{
		`C:\nodejs\npx.cmd`: true,
		`C:\nodejs\NPX.CMD`: true,
		`C:\tools\run.bat`:  true,
		`C:\tools\run.exe`:  false,
		`C:\tools.cmd\run`:  false,
		`run.bat.exe`:       false,
		`cmd`:               false,
	} {
		if got := isBatchFile(path); got != want {
			t.Errorf("isBatchFile(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestBatchCommandLine(t *testing.T) {
	const cmdExe = `C:\Windows\System32\cmd.exe`
	const pre = `"C:\Windows\System32\cmd.exe" /d /v:off /s /c "`
	tests := []struct {
		name   string
		script string
		args   []string
		want   string // "" when refused
	}{
		{"plain arguments stay bare", `C:\nodejs\npx.cmd`, []string{"-y", "@modelcontextprotocol/server-filesystem", `C:\Users\me`},
			pre + `"C:\nodejs\npx.cmd" -y @modelcontextprotocol/server-filesystem C:\Users\me"`},
		{"the script's path is quoted, spaces and all", `C:\Program Files\nodejs\npx.cmd`, nil,
			pre + `"C:\Program Files\nodejs\npx.cmd""`},
		{"spaces are quoted", `C:\x.cmd`, []string{"a b"}, pre + `"C:\x.cmd" "a b""`},
		{"cmd.exe's operators are quoted, so they are text", `C:\x.cmd`, []string{"https://h/?a=1&b=2", "a|b", "<in", "out>", "x^y", "(z)"},
			pre + `"C:\x.cmd" "https://h/?a=1&b=2" "a|b" "<in" "out>" "x^y" "(z)""`},
		{"an empty argument is kept", `C:\x.cmd`, []string{""}, pre + `"C:\x.cmd" """`},
		{"backslashes before a closing quote are doubled", `C:\x.cmd`, []string{`C:\My Dir\`}, pre + `"C:\x.cmd" "C:\My Dir\\""`},
		{"backslashes elsewhere are kept", `C:\x.cmd`, []string{`a\b c\d`}, pre + `"C:\x.cmd" "a\b c\d""`},
		{"a percent sign is refused: cmd.exe expands it even quoted", `C:\x.cmd`, []string{"%PATH%"}, ""},
		{"a URL-encoded argument is refused too", `C:\x.cmd`, []string{"a%20b"}, ""},
		{"a double quote is refused", `C:\x.cmd`, []string{`say "hi"`}, ""},
		{"a line break is refused", `C:\x.cmd`, []string{"a\r\nb"}, ""},
		{"a script path with a percent sign is refused", `C:\100%\x.cmd`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := batchCommandLine(cmdExe, tt.script, tt.args)
			if tt.want == "" {
				if !errors.Is(err, errBatchArg) {
					t.Fatalf("batchCommandLine(%q) = %q, %v; want errBatchArg", tt.args, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("batchCommandLine(%q) =\n%s, %v\nwant\n%s", tt.args, got, err, tt.want)
			}
		})
	}
}

func TestLookupEnvFold(t *testing.T) {
	env := []string{"Path=C:\\a", "HOME=/h", "PATH=C:\\b", "path=C:\\c", "X"}
	tests := []struct {
		name   string
		fold   bool
		key    string
		want   string
		wantOK bool
	}{
		{"exact, case-sensitive", false, "PATH", `C:\b`, true},
		{"Windows: any case, the last wins", true, "PATH", `C:\c`, true},
		{"case-sensitive misses another case", false, "Home", "", false},
		{"Windows finds another case", true, "Home", "/h", true},
		{"an entry without = is no variable", true, "X", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := lookupEnvFold(env, tt.key, tt.fold)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("lookupEnvFold(%q, fold %v) = %q, %v; want %q, %v", tt.key, tt.fold, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
