package testpeers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// conformanceTimeout bounds the whole suite run; it only fires if the
// server under test or node hangs, and nothing waits for it to pass.
const conformanceTimeout = 5 * time.Minute

// conformanceCheck is one entry of a checks.json written by the conformance
// CLI (@modelcontextprotocol/conformance).
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING or INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// RunConformance runs every server scenario of the official conformance
// suite, pending ones included, against the MCP endpoint url with the Node
// 22 in testdata/node, and reports each scenario as a subtest of t.
//
// A scenario fails on any FAILURE check, on any WARNING check not named in
// allowWarnings, and when it recorded no checks at all; t fails when the CLI
// exits non-zero. Each allowed warning is written "scenario/check-id", such
// as "server-sse-polling/server-sse-retry-field"; an allowed warning is
// logged, never silently dropped. With no allowWarnings, a scenario passes
// only with zero warnings.
//
// url should be a loopback URL: the dns-rebinding-protection scenario
// requires one.
func RunConformance(t *testing.T, url string, allowWarnings ...string) {
	t.Helper()
	node := Node22(t)
	cli := filepath.Join(NodeModules(t), "@modelcontextprotocol", "conformance", "dist", "index.js")
	allowed := make(map[string]bool, len(allowWarnings))
	for _, w := range allowWarnings {
		if !strings.Contains(w, "/") {
			t.Fatalf("RunConformance: allowed warning %q is not scenario/check-id", w)
		}
		allowed[w] = true
	}

	ctx, cancel := context.WithTimeout(t.Context(), conformanceTimeout)
	defer cancel()
	run := func(args ...string) ([]byte, error) {
		// CommandContext kills node when ctx ends; the run is over, one way
		// or the other, when CombinedOutput returns.
		cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(),
			"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		)
		// Should node leave a grandchild holding its pipes, stop waiting.
		cmd.WaitDelay = 10 * time.Second
		return cmd.CombinedOutput()
	}

	out, err := run("list", "--server")
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	scenarios := parseScenarios(out)
	if !slices.Contains(scenarios, "server-initialize") {
		t.Fatalf("no server scenarios in:\n%s", out)
	}

	// One run of the whole suite ("all" includes the pending scenarios),
	// which starts node once instead of once per scenario.
	results := t.TempDir()
	out, err = run("server", "--url", url, "--suite", "all", "--output-dir", results)
	if err != nil {
		t.Errorf("conformance server: %v", err)
	}
	checks, err := readChecks(results)
	if err != nil {
		t.Fatal(err)
	}
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			if len(checks[scenario]) == 0 {
				t.Errorf("no checks recorded")
			}
			for _, c := range checks[scenario] {
				switch ok := allowed[scenario+"/"+c.ID]; {
				case c.Status == "FAILURE", c.Status == "WARNING" && !ok:
					t.Errorf("%s %s: %s: %s", c.Status, c.ID, c.Description, c.ErrorMessage)
				case c.Status == "WARNING":
					t.Logf("allowed warning %s: %s: %s", c.ID, c.Description, c.ErrorMessage)
				}
			}
		})
	}
	// A scenario the CLI ran but `list` did not name would otherwise go
	// ungraded.
	for scenario := range checks {
		if !slices.Contains(scenarios, scenario) {
			t.Errorf("checks recorded for unlisted scenario %q", scenario)
		}
	}
	if t.Failed() {
		t.Logf("conformance output:\n%s", out)
	}
}

// scenarioLine matches a scenario in the output of `conformance list`,
// such as "  - tools-list [2025-06-18,2025-11-25]".
var scenarioLine = regexp.MustCompile(`^\s+- (\S+)`)

func parseScenarios(out []byte) []string {
	var names []string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if m := scenarioLine.FindStringSubmatch(sc.Text()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// resultDir matches the directory the CLI writes a scenario's checks.json
// to, such as "server-tools-list-2025-11-22T03-38-26-413Z".
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// readChecks reads the checks the CLI wrote under dir, by scenario.
func readChecks(dir string) (map[string][]conformanceCheck, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	checks := make(map[string][]conformanceCheck)
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("unexpected result directory %q", e.Name())
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(data, &cs); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		checks[m[1]] = append(checks[m[1]], cs...)
	}
	return checks, nil
}
