package main

// The README is a promise: what a newcomer reads first must work as
// written. These tests hold it to its size goal, its first screen to a
// quickstart that reaches a connected client, its client configurations
// to the one copy the web page serves, its several-servers example to a
// file the bridge takes and whose page opens, its flags to real ones, and
// every link of it and of docs/ to a page and a heading that exist.

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/mcp-bridge/mcp-bridge/web"
)

// readmeMaxBytes is the README's size goal: a page a newcomer finishes,
// as the READMEs of the bridges users compare it with are (14 to 21 KB).
const readmeMaxBytes = 40_000

// firstScreen is how many lines a newcomer sees first: one screenful.
const firstScreen = 80

// readme is README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testpeers.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeBlock is a fenced block of a Markdown file: its language and text,
// and the line it starts on.
type codeBlock struct {
	lang, text string
	line       int
}

func codeBlocks(md string) []codeBlock {
	var out []codeBlock
	var cur *codeBlock
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &codeBlock{lang: strings.TrimPrefix(l, "```"), line: i + 1}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

// snippets are the client configurations for a bridge on its default
// port without a token, by id, as the page gives them.
func snippets() map[string]string {
	out := map[string]string{}
	for _, s := range web.ClientSnippets(web.ClientTarget{URL: "http://127.0.0.1:8080/mcp"}) {
		out[s.ID] = s.Text
	}
	return out
}

func TestREADMESize(t *testing.T) {
	if n := len(readme(t)); n > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, over its goal of %d: move detail to docs/", n, readmeMaxBytes)
	}
}

// TestREADMEFirstScreen: the first screenful is a quickstart that works
// from a clone (no go install of a module not yet published), one client
// configuration and the curl sequence, the release-only ways marked as
// such, and a table of contents.
func TestREADMEFirstScreen(t *testing.T) {
	md := readme(t)
	lines := strings.Split(md, "\n")
	screen := strings.Join(lines[:min(firstScreen, len(lines))], "\n")
	sn := snippets()
	for _, want := range []string{
		"git clone https://github.com/mcp-bridge/mcp-bridge && cd mcp-bridge",
		"go run ./cmd/mcp-bridge ",
		sn["claude-desktop"],
		sn["curl"],
		"**After a release** (none is published yet",
		"**Contents:**",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the README's first %d lines lack %q", firstScreen, want)
		}
	}
	if i, j := strings.Index(screen, "go install"), strings.Index(screen, "**After a release**"); i >= 0 && i < j {
		t.Error("the first screen offers go install before saying it works only after a release")
	}
}

// TestREADMEClients: each client the README shows, under its
// <details>, is the configuration the web page gives (web.ClientSnippets),
// verbatim.
func TestREADMEClients(t *testing.T) {
	md := readme(t)
	sn := snippets()
	ids := map[string]string{"Claude Desktop": "claude-desktop", "Cursor": "cursor", "VS Code": "vscode", "MCP Inspector": "inspector"}
	sections := regexp.MustCompile("(?s)<summary>([^<]+)</summary>(.*?)</details>").FindAllStringSubmatch(md, -1)
	seen := map[string]bool{}
	for _, s := range sections {
		id, ok := ids[s[1]]
		if !ok {
			continue
		}
		seen[id] = true
		blocks := codeBlocks(s[2])
		if len(blocks) == 0 || blocks[0].text != sn[id] {
			t.Errorf("README's %s configuration differs from the page's:\n%v\nwant:\n%s", s[1], blocks, sn[id])
		}
	}
	for title, id := range ids {
		if !seen[id] {
			t.Errorf("README has no <details> for %s", title)
		}
	}
}

// TestREADMECurl runs the README's curl sequence, as a newcomer pastes it
// into a shell, against a real bridge serving the demo: initialize,
// notifications/initialized, tools/list and DELETE, and the session ends.
func TestREADMECurl(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	i := slices.IndexFunc(codeBlocks(readme(t)), func(b codeBlock) bool { return strings.Contains(b.text, "SID=$(curl") })
	if i < 0 {
		t.Fatal("README has no curl sequence")
	}
	p := startBridge(t, environWithout(envPrefix))
	script := strings.ReplaceAll(codeBlocks(readme(t))[i].text, "http://127.0.0.1:8080", p.Base)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-e", "-c", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	for _, w := range []string{"HTTP/1.1 200", "Mcp-Session-Id: ", `"serverInfo"`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("initialize: no %q in\n%s", w, stderr.Bytes())
		}
	}
	for _, tool := range []string{"echo", "slow", "elicit", "sample"} {
		if !strings.Contains(stdout.String(), `"name":"`+tool+`"`) {
			t.Errorf("tools/list: no %s in\n%s", tool, stdout.Bytes())
		}
	}
	waitLogged(t, p, `msg="session ended" session=\S+ reason="the session was deleted"`)
}

// TestREADMESeveralServers: the README's --config example, as written
// (two npx servers, one with tokens of its own, and --token-env in the
// command), is a file the bridge takes, and its web page opens with the
// bridge-wide token.
func TestREADMESeveralServers(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("no npx: the example's servers run with it")
	}
	md := readme(t)
	_, section, _ := strings.Cut(md, "\n## Several servers\n")
	blocks := codeBlocks(section)
	if len(blocks) < 2 || blocks[0].lang != "json" || !strings.Contains(blocks[1].text, "mcp-bridge --config servers.json --token-env MCP_TOKEN") {
		t.Fatalf("the Several servers section lacks its file and command: %v", blocks)
	}
	file := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(file, []byte(blocks[0].text), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpToken, filesToken := randomToken(), randomToken()
	env := append(environWithout(envPrefix), "MCP_TOKEN="+mcpToken, "FILES_TOKEN="+filesToken)
	p := startBridge(t, env, "--config", file, "--token-env", "MCP_TOKEN")
	p.waitLog(`msg="also serving metrics`)
	for _, name := range []string{"everything", "files"} {
		if !strings.Contains(p.Stderr(), `msg="serving MCP endpoint" server=`+name+` url=`+p.Base+`/servers/`+name+`/mcp`) {
			t.Errorf("the log does not name %s's URL:\n%s", name, p.Stderr())
		}
	}
	if strings.Contains(p.Stderr(), "live view cannot be opened") {
		t.Errorf("the README's example leaves the page unopenable:\n%s", p.Stderr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+"/ui/events", nil)
	req.Header.Set("Authorization", "Bearer "+mcpToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the page's live feed with MCP_TOKEN: status %d, want 200", resp.StatusCode)
	}
}

// TestREADMEFlags: every flag the README names, in its prose and in the
// bridge's command lines, is one of the bridge's.
func TestREADMEFlags(t *testing.T) {
	known := map[string]bool{"help": true, "version": true}
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		known[ct.Field(i).Tag.Get("flag")] = true
	}
	flagRE := regexp.MustCompile(`(?:^|[\s(` + "`" + `])--([a-z][a-z0-9-]+)`)
	var named []string
	md := readme(t)
	for _, b := range codeBlocks(md) {
		for _, l := range strings.Split(b.text, "\n") {
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(l), "mcp-bridge "); ok {
				cmd, _, _ = strings.Cut(cmd, " -- ") // the server's own flags follow
				for _, m := range flagRE.FindAllStringSubmatch(" "+cmd, -1) {
					named = append(named, m[1])
				}
			}
		}
	}
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(md, "")
	for _, m := range regexp.MustCompile("`--([a-z][a-z0-9-]+)").FindAllStringSubmatch(prose, -1) {
		named = append(named, m[1])
	}
	// Other programs' flags the README names in its prose.
	others := map[string]bool{"cli": true, "transport": true, "server-url": true, "header": true}
	for _, f := range named {
		if !known[f] && !others[f] {
			t.Errorf("README names --%s, which the bridge does not have", f)
		}
	}
	if len(named) < 10 {
		t.Fatalf("found %d flags in the README: has its format changed?", len(named))
	}
}

// TestDocLinks: every link of the README and docs/ to a file of the
// repository reaches it, and its heading (#anchor) exists there.
func TestDocLinks(t *testing.T) {
	root := testpeers.ModuleRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence := regexp.MustCompile("(?s)```.*?```")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue // a URL
			}
			path, anchor, _ := strings.Cut(target, "#")
			to := f
			if path != "" {
				to = filepath.Join(filepath.Dir(f), path)
			}
			rel, _ := filepath.Rel(root, f)
			if _, err := os.Stat(to); err != nil {
				t.Errorf("%s links to %s: no such file", rel, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(to, ".md") && !slices.Contains(headingAnchors(t, to), anchor) {
				t.Errorf("%s links to %s: no such heading", rel, target)
			}
		}
	}
}

// headingAnchors are the ids GitHub gives the headings of a Markdown file.
func headingAnchors(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fence := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if fence || !strings.HasPrefix(l, "#") || !ok {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				a.WriteRune(r)
			case r == ' ':
				a.WriteByte('-')
			}
		}
		out = append(out, a.String())
	}
	return out
}
