package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

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

// goreleaserSchema is GoReleaser's own schema of its configuration, as
// `goreleaser jsonschema` (v2.15.1) prints it. To update it with
// GoReleaser: goreleaser jsonschema > deploy/goreleaser.schema.json
const goreleaserSchema = "deploy/goreleaser.schema.json"

// TestReleaseConfig checks .goreleaser.yaml as `goreleaser check` does,
// against GoReleaser's own schema (every key known, of its type, none
// misspelled: the schema forbids what it does not define), and holds it to
// what CI builds: the five targets test.sh vets and builds, the version
// stamped where `mcp-bridge version` reads it, an archive per target and a
// checksum file. GoReleaser itself is not run in CI: built from the Go
// module proxy it takes 11 to 24 minutes on a fresh 2-core machine,
// against a suite that takes under ten, and its build step is the
// cross-build test.sh does anyway.
func TestReleaseConfig(t *testing.T) {
	root := testpeers.ModuleRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	// Through JSON, so that numbers and maps are what the validator takes.
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open(filepath.Join(root, goreleaserSchema))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(sf)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("goreleaser.schema.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("goreleaser.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf(".goreleaser.yaml does not follow GoReleaser's schema: %v", err)
	}

	var cfg struct {
		Version int `json:"version"`
		Builds  []struct {
			Main    string   `json:"main"`
			Goos    []string `json:"goos"`
			Goarch  []string `json:"goarch"`
			Ldflags []string `json:"ldflags"`
			Ignore  []struct {
				Goos, Goarch string
			} `json:"ignore"`
		} `json:"builds"`
		Archives []struct {
			NameTemplate string `json:"name_template"`
		} `json:"archives"`
		Checksum struct {
			NameTemplate string `json:"name_template"`
		} `json:"checksum"`
	}
	if err := json.Unmarshal(js, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || len(cfg.Builds) != 1 || cfg.Builds[0].Main != "./cmd/mcp-bridge" {
		t.Fatalf("want one build of ./cmd/mcp-bridge in a version 2 configuration: %+v", cfg)
	}
	b := cfg.Builds[0]
	var targets []string
	for _, os := range b.Goos {
		for _, arch := range b.Goarch {
			if !slices.ContainsFunc(b.Ignore, func(i struct{ Goos, Goarch string }) bool { return i.Goos == os && i.Goarch == arch }) {
				targets = append(targets, os+"/"+arch)
			}
		}
	}
	slices.Sort(targets)
	script, err := os.ReadFile(filepath.Join(root, "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		if !bytes.Contains(script, []byte(target)) {
			t.Errorf("GoReleaser builds %s, which test.sh does not build", target)
		}
	}
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"}; !slices.Equal(targets, want) {
		t.Errorf("targets %q, want %q", targets, want)
	}
	if !slices.ContainsFunc(b.Ldflags, func(f string) bool { return strings.Contains(f, "-X main.version=") }) {
		t.Errorf("ldflags %q do not stamp main.version (cmd/mcp-bridge/version.go)", b.Ldflags)
	}
	if len(cfg.Archives) == 0 || !strings.Contains(cfg.Archives[0].NameTemplate, "{{ .Os }}") || cfg.Checksum.NameTemplate == "" {
		t.Errorf("archives %+v, checksum %+v: want one archive per target and a checksum file", cfg.Archives, cfg.Checksum)
	}
}
