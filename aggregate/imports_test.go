package aggregate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the aggregate knows nothing of HTTP, on any system; it
// meets the transports through Lister and Table, as bridge does.
func TestImports(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
		cmd := exec.CommandContext(t.Context(), goBin, "list", "-deps", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps (%s): %v\n%s", goos, err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			if pkg == "net/http" || strings.HasSuffix(pkg, "/httpapi") || strings.HasSuffix(pkg, "/auth") {
				t.Errorf("%s: the aggregate imports %s", goos, pkg)
			}
		}
	}
}
