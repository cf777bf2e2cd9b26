package testpeers

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseScenarios(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{
			name: "0.1.16 list --server",
			out: "Server scenarios (test against a server):\n" +
				"  - server-initialize [2025-06-18,2025-11-25]\n" +
				"  - dns-rebinding-protection [2025-11-25]\n",
			want: []string{"server-initialize", "dns-rebinding-protection"},
		},
		{
			name: "alpha.12 list --requirements",
			out: "Required for 2026-07-28 (69 scenarios, frozen; run at the 2026-07-28 wire):\n\n" +
				"Server scenarios (test against a server):\n" +
				"  - server-stateless\n" +
				"  - input-required-result-validate-input\n\n" +
				"Client scenarios (test against a client):\n" +
				"  - tools_call\n" +
				"  - auth/metadata-default\n\n" +
				"Run and reported, but never scored:\n" +
				"  extension (16):\n" +
				"    - auth/dpop [client]\n" +
				"    - tasks-lifecycle [server]\n" +
				"  pending (3):\n" +
				"    - json-schema-2020-12 [server]\n",
			want: []string{"server-stateless", "input-required-result-validate-input"},
		},
		{
			name: "bare list",
			out:  "  - ping\n  - tools-list [2025-11-25]\n",
			want: []string{"ping", "tools-list"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseScenarios([]byte(tc.out)); !slices.Equal(got, tc.want) {
				t.Errorf("parseScenarios = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadChecks(t *testing.T) {
	dir := t.TempDir()
	for name, checks := range map[string]string{
		"server-tools-list-2026-11-24T05-01-02-003Z":                  `[{"id":"tools-list","status":"SUCCESS"}]`,
		"server-input-required-result-basic-2026-11-24T05-01-02-004Z": `[{"id":"a","status":"FAILURE","errorMessage":"boom"},{"id":"b","status":"WARNING"}]`,
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "checks.json"), []byte(checks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readChecks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got["tools-list"]) != 1 || len(got["input-required-result-basic"]) != 2 {
		t.Fatalf("readChecks = %+v", got)
	}
	if v := verdict(got["input-required-result-basic"]); v != "FAIL (1 failures, 1 warnings)" {
		t.Errorf("verdict = %q", v)
	}
	if v := verdict(got["tools-list"]); v != "pass" {
		t.Errorf("verdict = %q", v)
	}

	if err := os.Mkdir(filepath.Join(dir, "stray"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readChecks(dir); err == nil {
		t.Error("readChecks accepted a directory that is no scenario's")
	}
}
