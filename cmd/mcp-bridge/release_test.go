package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestReleaseImageMatchesDockerfile: the released image
// (deploy/release.Dockerfile, built by GoReleaser from its own binaries)
// is the image `docker build .` makes: the runtime stage of the Dockerfile,
// instruction for instruction, but for how the binary gets in.
func TestReleaseImageMatchesDockerfile(t *testing.T) {
	root := testpeers.ModuleRoot(t)
	dev := dockerfileInstructions(t, filepath.Join(root, "Dockerfile"))
	rel := dockerfileInstructions(t, filepath.Join(root, "deploy", "release.Dockerfile"))
	stage := func(instrs []string, last bool) []string {
		i := slices.IndexFunc(instrs, func(s string) bool { return strings.HasPrefix(s, "FROM ") })
		if last {
			for j, s := range instrs {
				if strings.HasPrefix(s, "FROM ") {
					i = j
				}
			}
		}
		if i < 0 {
			t.Fatalf("no FROM in %q", instrs)
		}
		var out []string
		copied := false
		for _, s := range instrs[i:] {
			switch {
			case s == "ARG TARGETPLATFORM":
				continue
			case strings.HasPrefix(s, "COPY ") && strings.HasSuffix(s, " /usr/local/bin/mcp-bridge"):
				copied = true
				continue
			}
			out = append(out, s)
		}
		if !copied {
			t.Errorf("the stage %q copies no binary to /usr/local/bin/mcp-bridge", out)
		}
		return out
	}
	if d, r := stage(dev, true), stage(rel, false); !slices.Equal(d, r) {
		t.Errorf("deploy/release.Dockerfile differs from the Dockerfile's runtime stage:\n%s\nwant\n%s", strings.Join(r, "\n"), strings.Join(d, "\n"))
	}
}

// dockerfileInstructions reads a Dockerfile's instructions, one string
// each: comments and blank lines dropped, continued lines joined, white
// space squeezed.
func dockerfileInstructions(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var instr strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		instr.WriteString(strings.TrimSuffix(line, "\\") + " ")
		if cont {
			continue
		}
		out = append(out, strings.Join(strings.Fields(instr.String()), " "))
		instr.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
