package main

import (
	"testing"

	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// TestConformance2025ThroughBridge runs the 30 scored server scenarios of
// the conformance suite 0.2.0-alpha.12 for MCP 2025-11-25 (--requirements
// 2025-11-25) against the demo server behind the real bridge, and the
// three that release runs without scoring (server-session-lifecycle,
// json-schema-2020-12, server-sse-polling). Unlike 0.1.16 in
// TestConformanceThroughBridge, alpha.12 checks every message against the
// 2025-11-25 JSON schema (wire-schema-valid), and the DNS rebinding
// scenario sends notifications/initialized too. No warning is allowed.
func TestConformance2025ThroughBridge(t *testing.T) {
	testpeers.NodeModules(t) // skip before starting a bridge for nothing
	p := startBridge(t, nil)
	testpeers.Conformance{
		Requirements: "2025-11-25",
		AlsoGrade:    []string{"server-session-lifecycle", "json-schema-2020-12", "server-sse-polling"},
	}.Run(t, p.URL)
}

// TestConformanceModernThroughBridge runs the 37 scored server scenarios
// of the conformance suite 0.2.0-alpha.12 for MCP 2026-07-28
// (--requirements 2026-07-28) against the demo server behind the real
// bridge: the stateless era on the same endpoint as the 2025 sessions.
// The demo answers server/discover, so the bridge passes its requests
// through (validating headers and _meta itself, which a child behind stdio
// never sees); the translation for legacy children has its own tests.
// Three scenarios the release runs without scoring are graded too:
// json-schema-2020-12, and the header validation of SEP-2243
// (http-header-validation, http-custom-header-server-validation), which the
// bridge does itself. The tasks extension is not served.
func TestConformanceModernThroughBridge(t *testing.T) {
	testpeers.NodeModules(t)
	p := startBridge(t, nil)
	testpeers.Conformance{
		Requirements: "2026-07-28",
		AlsoGrade:    []string{"json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"},
	}.Run(t, p.URL)
}
