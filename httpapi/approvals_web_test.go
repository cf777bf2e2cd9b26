package httpapi_test

// The web page's approval queue in a real Chromium (testdata/node/
// approvals.mjs). The calls are held by driving the engine directly, as a
// transport will once it holds calls: three before the page opens, and
// one while it is open (the page GETs /test/hold, a route of this test's
// own server), which the page must show without a reload.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

const chromium = "/usr/bin/chromium"

type uiBox struct {
	Visible             bool
	X, Y, Width, Height float64
}

func (b uiBox) right() float64 { return b.X + b.Width }

type approvalsPage struct {
	Approver struct {
		Cards                   []string
		Own, Live               string
		OwnButtons, CountBefore int
		Approved, Denied, Error string
		Left                    int
	}
	Layout map[string]struct {
		Panel, Approve, Deny, Reason, Args uiBox
		InnerWidth, ScrollWidth            float64
	}
	Admin struct {
		Cards, Buttons int
		Text           string
	}
	User struct {
		Panels int
		Text   string
	}
	Failed     string
	PageErrors []string
}

func TestWebApprovals(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s is not installed (test.sh installs Debian's chromium)", chromium)
	}
	nodeModules := testpeers.NodeModules(t)
	node := testpeers.Node(t)

	// The bridge, its engine and its page, and a route that holds a call.
	names := make([]string, 0, len(approvalTokens))
	for n := range approvalTokens {
		names = append(names, n)
	}
	v, err := auth.TokensFromEnv(names, func(k string) (string, bool) { s, ok := approvalTokens[k]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	a := &approvalEnv{events: make(chan approval.Event, 4096)}
	a.engine = approval.New(approval.Options{Timeout: time.Hour, Approvers: auth.Subjects{"token:OPS_TOKEN"}, SeparateApprover: true,
		Logger: testLogger(t), Observe: func(ev approval.Event) { a.events <- ev }})
	b, err := bridge.New(bridge.Config{Command: []string{testpeers.BuildGo(t, "./testdata/badchild")}, Env: os.Environ(),
		StopGrace: 500 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := httpapi.Handler(httpapi.Options{Bridge: b, Auth: v, Admins: auth.Subjects{"token:ADMIN_TOKEN"}, Approvals: a.engine,
		Web: true, LoopbackOnly: true, Context: ctx, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/test/hold", func(w http.ResponseWriter, r *http.Request) {
		a.hold(context.Background(), "CAROL_TOKEN", "drop_table", `{"table":"users"}`)
		_, _ = w.Write([]byte(a.next(t, approval.EventRequested).Approval.ID))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		a.engine.Close()
		a.wg.Wait()
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = b.Close(sctx)
	})

	const secret = "sk-live-0123456789abcdefghijkl"
	alice := a.hold(context.Background(), "ALICE_TOKEN", "delete_file", `{"path":"/srv/data/report.csv","api_key":"`+secret+`"}`)
	aliceID := a.next(t, approval.EventRequested).Approval.ID
	bob := a.hold(context.Background(), "BOB_TOKEN", "delete_dir", `{"path":"/home/bob","recursive":true}`)
	bobID := a.next(t, approval.EventRequested).Approval.ID
	a.hold(context.Background(), "OPS_TOKEN", "delete_file", `{"path":"/tmp/ops"}`)
	ownID := a.next(t, approval.EventRequested).Approval.ID

	dir := t.TempDir()
	shots := map[string]string{"1280": filepath.Join(dir, "approvals-1280.png"), "360": filepath.Join(dir, "approvals-360.png")}
	failShot := filepath.Join(os.TempDir(), "mcp-bridge-web-approvals-failed.png")
	plan, _ := json.Marshal(map[string]any{"url": srv.URL + "/", "approverToken": approvalTokens["OPS_TOKEN"], "adminToken": approvalTokens["ADMIN_TOKEN"],
		"userToken": approvalTokens["EVE_TOKEN"], "holdURL": srv.URL + "/test/hold", "ids": map[string]string{"alice": aliceID, "bob": bobID, "own": ownID},
		"shots": shots, "failShot": failShot})
	var res approvalsPage
	runNodeScript(t, node, nodeModules, "approvals.mjs", &res, string(plan))
	if res.Failed != "" {
		t.Fatalf("the page failed at %s\npage errors: %q\nscreenshot: %s", res.Failed, res.PageErrors, failShot)
	}
	if len(res.PageErrors) > 0 {
		t.Errorf("uncaught errors in the page: %q", res.PageErrors)
	}

	ap := res.Approver
	all := strings.Join(ap.Cards, "\n")
	for _, want := range []string{"delete_file", "delete_dir", "ALICE_TOKEN", "BOB_TOKEN", `"api_key":"****"`, "/srv/data/report.csv", "rule *=delete_*", "Approve", "Deny"} {
		if !strings.Contains(all, want) {
			t.Errorf("the approver's queue lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, secret) {
		t.Error("the page shows a secret argument")
	}
	if ap.OwnButtons != 0 || !strings.Contains(ap.Own, "You made this call: another approver decides") {
		t.Errorf("the approver's own call: %d buttons, %q", ap.OwnButtons, ap.Own)
	}
	if !strings.Contains(ap.Live, "drop_table") || !strings.Contains(ap.Live, "CAROL_TOKEN") || ap.CountBefore != 3 {
		t.Errorf("the call held while the page was open: %q (after %d cards)", ap.Live, ap.CountBefore)
	}
	if !strings.Contains(ap.Approved, "approved delete_file on files for ALICE_TOKEN") || !strings.Contains(ap.Denied, "denied drop_table on files for CAROL_TOKEN") || ap.Left != 1 || ap.Error != "" {
		t.Errorf("the decisions: %q, %q, %d left, error %q", ap.Approved, ap.Denied, ap.Left, ap.Error)
	}
	if o := outcome(t, alice); o.Decision != approval.Approved || o.Approver != "OPS_TOKEN" || o.Reason != "checked the path" || o.Channel != approval.ChannelOperator {
		t.Errorf("alice's call: %+v", o)
	}
	if o := outcome(t, bob); o.Decision != approval.Denied || o.Approver != "OPS_TOKEN" {
		t.Errorf("bob's call: %+v", o)
	}
	if res.Admin.Cards != 1 || res.Admin.Buttons != 0 || !strings.Contains(res.Admin.Text, "delete_file") {
		t.Errorf("the admin: %d cards, %d buttons: %q", res.Admin.Cards, res.Admin.Buttons, res.Admin.Text)
	}
	if res.User.Panels != 0 || strings.Contains(res.User.Text, "Approvals") || strings.Contains(res.User.Text, "delete_file") {
		t.Errorf("a principal who is neither: %d panels:\n%s", res.User.Panels, res.User.Text)
	}
	checkApprovalShots(t, res, shots)
}

// checkApprovalShots checks each width's screenshot (a PNG as wide as the
// window) and layout: nothing wider than the window; the reason, the
// Approve and Deny buttons and the arguments of a card visible and inside
// the panel. It copies the screenshots to
// /tmp/mcp-bridge-web-approvals-WIDTH.png, for people.
func checkApprovalShots(t *testing.T, res approvalsPage, shots map[string]string) {
	t.Helper()
	for w, path := range shots {
		l, ok := res.Layout[w]
		if !ok {
			t.Errorf("%s px: not laid out", w)
			continue
		}
		png, err := os.ReadFile(path)
		if err != nil || len(png) < 24 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s px: screenshot %s: %v", w, path, err)
			continue
		}
		if got := binary.BigEndian.Uint32(png[16:20]); float64(got) != l.InnerWidth {
			t.Errorf("%s px: the screenshot is %d px wide, the window %v", w, got, l.InnerWidth)
		}
		if copyTo := filepath.Join(os.TempDir(), "mcp-bridge-web-approvals-"+w+".png"); os.WriteFile(copyTo, png, 0o644) == nil {
			t.Logf("screenshot at %s px: %s", w, copyTo)
		}
		if l.ScrollWidth > l.InnerWidth {
			t.Errorf("%s px: the page is %v px wide, wider than the window", w, l.ScrollWidth)
		}
		for what, b := range map[string]uiBox{"reason": l.Reason, "Approve": l.Approve, "Deny": l.Deny, "arguments": l.Args} {
			if !b.Visible || b.Width == 0 || b.X < l.Panel.X || b.right() > l.Panel.right()+0.5 {
				t.Errorf("%s px: %s %+v is not visible inside the panel %+v", w, what, b, l.Panel)
			}
		}
		if l.Approve.Y != l.Deny.Y || l.Deny.X <= l.Approve.X {
			t.Errorf("%s px: Approve and Deny are not side by side: %+v %+v", w, l.Approve, l.Deny)
		}
	}
}

// runNodeScript runs a script of testdata/node with node and decodes the
// JSON its last line of output reports into res.
func runNodeScript(t *testing.T, node, nodeModules, script string, res any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety net
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(filepath.Dir(nodeModules), script)}, args...)...)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	// On a hang: SIGTERM lets the script close the browser; WaitDelay
	// then kills what is left.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal(line, res); jerr != nil {
		t.Fatalf("%s: %v (%v)\nstdout:\n%s\nstderr:\n%s", script, err, jerr, stdout.Bytes(), stderr.Bytes())
	}
}
