package testpeers

import (
	"bufio"
	"bytes"
	"cmp"
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

// The two pinned releases of the conformance suite in testdata/node, as
// directories under node_modules. 0.1.16 grades the 2025 lifecycle only;
// 0.2.0-alpha.12, installed under the npm alias conformance-2026, grades
// 2026-07-28 as well, and has --requirements where 0.1.16 has --suite.
const (
	conformance0116    = "@modelcontextprotocol/conformance"
	conformanceAlpha12 = "conformance-2026"
)

// conformanceCheck is one entry of a checks.json written by the conformance
// CLI (@modelcontextprotocol/conformance).
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED or INFO
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// Conformance is one run of the official conformance suite's server
// scenarios. Its zero value runs every server scenario of 0.1.16, pending
// ones included, and allows no warning.
type Conformance struct {
	// Requirements, when set, runs 0.2.0-alpha.12 with
	// `--requirements Requirements` ("2026-07-28" or "2025-11-25") instead
	// of 0.1.16. The requirement set names the scored server scenarios,
	// which are graded; the CLI also runs scenarios it reports but never
	// scores (extensions such as tasks-*, pending ones such as
	// http-header-validation), which are only logged, unless named in
	// AlsoGrade.
	Requirements string

	// AllowWarnings are the WARNING checks that do not fail their scenario,
	// each written "scenario/check-id", such as
	// "server-sse-polling/server-sse-retry-field". The CLI itself never fails
	// a scenario for a warning; this runner does, so that a SHOULD the
	// server misses is a decision written down in the test.
	AllowWarnings []string

	// KnownFailures are FAILURE checks that do not fail the test, each
	// "scenario/check-id", for a check that the setup cannot pass by its
	// nature (the test says why). Each must still fail: one that passes
	// fails the test, so the list is kept true. A scenario with a known
	// failure is not counted as passed.
	KnownFailures []string

	// AlsoGrade are unscored scenarios to grade like scored ones: they must
	// run and pass. Only with Requirements.
	AlsoGrade []string
}

// RunConformance runs every server scenario of the conformance suite 0.1.16
// against url, allowing the warnings in allowWarnings; see Conformance.Run.
func RunConformance(t *testing.T, url string, allowWarnings ...string) {
	t.Helper()
	Conformance{AllowWarnings: allowWarnings}.Run(t, url)
}

// Run runs the suite against the MCP endpoint url with the Node 22 in
// testdata/node, and reports each graded scenario as a subtest of t.
//
// A graded scenario fails on any FAILURE check, on any WARNING check not
// allowed, and when it recorded no checks at all (SKIPPED checks are
// logged); t fails when the CLI exits
// non-zero (alpha.12 exits 0 when every scored scenario passes, whatever the
// unscored ones do). An allowed warning is logged, never silently dropped.
// The summary line logged at the end counts the scenarios passed.
//
// url should be a loopback URL: the dns-rebinding-protection scenario
// requires one.
func (c Conformance) Run(t *testing.T, url string) {
	t.Helper()
	node := Node22(t)
	pkg, listArgs, runArgs := conformance0116, []string{"list", "--server"}, []string{"--suite", "all"}
	if c.Requirements != "" {
		pkg = conformanceAlpha12
		listArgs = []string{"list", "--requirements", c.Requirements}
		runArgs = []string{"--requirements", c.Requirements}
	} else if len(c.AlsoGrade) > 0 {
		t.Fatalf("Conformance: AlsoGrade needs Requirements (0.1.16 grades every scenario it runs)")
	}
	cli := filepath.Join(NodeModules(t), filepath.FromSlash(pkg), "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("conformance suite %s not installed: run `npm ci --prefix testdata/node`: %v", pkg, err)
	}
	known := make(map[string]bool, len(c.KnownFailures))
	for _, k := range c.KnownFailures {
		known[k] = true
	}
	allowed := make(map[string]bool, len(c.AllowWarnings))
	for _, w := range c.AllowWarnings {
		if !strings.Contains(w, "/") {
			t.Fatalf("Conformance: allowed warning %q is not scenario/check-id", w)
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

	out, err := run(listArgs...)
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	graded := parseScenarios(out)
	scored := len(graded)
	if scored == 0 {
		t.Fatalf("no server scenarios in:\n%s", out)
	}
	for _, s := range c.AlsoGrade {
		if !slices.Contains(graded, s) {
			graded = append(graded, s)
		}
	}

	// One run of the whole selection, which starts node once instead of
	// once per scenario.
	results := t.TempDir()
	out, runErr := run(append(append([]string{"server", "--url", url}, runArgs...), "--output-dir", results)...)
	checks, err := readChecks(results)
	if err != nil {
		t.Fatal(err)
	}
	passed := make([]int, 2) // scored, also graded
	failedKnown := map[string]bool{}
	for i, scenario := range graded {
		ok := t.Run(scenario, func(t *testing.T) {
			if len(checks[scenario]) == 0 {
				t.Errorf("no checks recorded")
			}
			for _, c := range checks[scenario] {
				switch ok := allowed[scenario+"/"+c.ID]; {
				case c.Status == "FAILURE" && known[scenario+"/"+c.ID]:
					failedKnown[scenario+"/"+c.ID] = true
					t.Logf("known failure %s: %s: %s", c.ID, c.Description, c.ErrorMessage)
				case c.Status == "FAILURE", c.Status == "WARNING" && !ok:
					t.Errorf("%s %s: %s: %s", c.Status, c.ID, c.Description, c.ErrorMessage)
				case c.Status == "WARNING":
					t.Logf("allowed warning %s: %s: %s", c.ID, c.Description, c.ErrorMessage)
				case c.Status == "SKIPPED":
					// A check the server made inapplicable, such as a
					// SHOULD about a capability it does not declare.
					t.Logf("skipped %s: %s: %s", c.ID, c.Description, c.ErrorMessage)
				}
			}
		})
		if ok && hasKnown(failedKnown, scenario) {
			ok = false
		}
		if ok && i < scored {
			passed[0]++
		} else if ok {
			passed[1]++
		}
	}
	for k := range known {
		if !failedKnown[k] {
			t.Errorf("known failure %s did not fail: take it off KnownFailures", k)
		}
	}
	if runErr != nil && len(failedKnown) == 0 {
		// The CLI exits non-zero when a scored scenario fails: expected
		// only with a known failure.
		t.Errorf("conformance server: %v", runErr)
	}
	var unscored []string
	for scenario := range checks {
		if slices.Contains(graded, scenario) {
			continue
		}
		if c.Requirements == "" {
			// 0.1.16 runs exactly what `list --server` names; anything
			// else would go ungraded.
			t.Errorf("checks recorded for unlisted scenario %q", scenario)
			continue
		}
		unscored = append(unscored, scenario+" "+verdict(checks[scenario]))
	}
	slices.Sort(unscored)
	suite := "0.1.16 --suite all"
	if c.Requirements != "" {
		suite = "0.2.0-alpha.12 --requirements " + c.Requirements
	}
	t.Logf("conformance %s: %d/%d scored scenarios passed, %d/%d unscored ones graded; not graded: %s",
		suite, passed[0], scored, passed[1], len(graded)-scored, cmp.Or(strings.Join(unscored, ", "), "none"))
	if t.Failed() {
		t.Logf("conformance output:\n%s", out)
	}
}

// hasKnown reports whether scenario has a known failure among failed.
func hasKnown(failed map[string]bool, scenario string) bool {
	for k := range failed {
		if strings.HasPrefix(k, scenario+"/") {
			return true
		}
	}
	return false
}

// verdict summarises the checks of an ungraded scenario the way the CLI
// scores one: it fails on a FAILURE, and nothing else.
func verdict(checks []conformanceCheck) string {
	var failures, warnings int
	for _, c := range checks {
		switch c.Status {
		case "FAILURE":
			failures++
		case "WARNING":
			warnings++
		}
	}
	switch {
	case failures > 0:
		return fmt.Sprintf("FAIL (%d failures, %d warnings)", failures, warnings)
	case warnings > 0:
		return fmt.Sprintf("pass (%d warnings)", warnings)
	}
	return "pass"
}

// scenarioLine matches a scenario in the output of `conformance list`,
// such as "  - tools-list [2025-06-18,2025-11-25]" (0.1.16 `list --server`)
// or "  - tools-list" (alpha.12 `list --requirements`).
var scenarioLine = regexp.MustCompile(`^\s+- (\S+)`)

// parseScenarios returns the server scenarios that `conformance list`
// printed: those of its "Server scenarios" section. The alpha.12
// `list --requirements` output has more sections, for client scenarios and
// for those "Run and reported, but never scored", each opened by an
// unindented heading; 0.1.16's `list --server` has only that one. Output
// without any heading is taken as a bare list.
func parseScenarios(out []byte) []string {
	var names []string
	sections := bytes.Contains(out, []byte("Server scenarios"))
	inServer := !sections
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		line := sc.Text()
		if sections && line != "" && !strings.HasPrefix(line, " ") {
			inServer = strings.HasPrefix(line, "Server scenarios")
			continue
		}
		if m := scenarioLine.FindStringSubmatch(line); m != nil && inServer {
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
