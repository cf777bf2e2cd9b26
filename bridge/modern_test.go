package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modernMeta is the _meta of a 2026-07-28 request from a client that
// declares no capability.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// startModern serves body, a 2026-07-28 request, with the headers that
// mirror it; the call is closed when the test ends.
func startModern(ctx context.Context, t *testing.T, b *Bridge, body string) *ModernCall {
	t.Helper()
	msgs, _, err := ParseBody([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := msgs[0]
	h := ModernHeaders{Version: ModernVersion, HasVersion: true, Method: m.Method, HasMethod: true}
	if raw := m.Param("name"); raw != nil {
		h.HasName = json.Unmarshal(raw, &h.Name) == nil
	}
	mc, err := b.Modern(ctx, ModernRequest{Message: m, Headers: h})
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	t.Cleanup(mc.Close)
	return mc
}

// next is what the call gives the client next, and whether it is the end.
func next(ctx context.Context, t *testing.T, mc *ModernCall) ([][]byte, bool) {
	t.Helper()
	evs, final, err := mc.Next(ctx, nil, nil)
	if err != nil {
		t.Fatalf("%v: %v", mc, err)
	}
	var msgs [][]byte
	for _, ev := range evs {
		msgs = append(msgs, ev.Data)
	}
	return msgs, final
}

// finalText is the text of the call's final answer, a tools/call result.
func finalText(ctx context.Context, t *testing.T, mc *ModernCall) string {
	t.Helper()
	for {
		msgs, final := next(ctx, t, mc)
		if !final {
			continue
		}
		var r struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if len(msgs) == 0 || json.Unmarshal(msgs[len(msgs)-1], &r) != nil || len(r.Result.Content) == 0 {
			t.Fatalf("%v: final answer %q", mc, msgs)
		}
		return r.Result.Content[0].Text
	}
}

// TestProbeRefusal: a legacy child refuses the era probe (server/discover);
// that is how the bridge learns it is legacy, logged as such, not warned
// of as a refused request of the bridge's.
func TestProbeRefusal(t *testing.T) {
	ctx := safety(t)
	b, logs := peerBridge(t, processPeer, Config{})
	mc := startModern(ctx, t, b, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	if msgs, final := next(ctx, t, mc); !final || len(msgs) != 1 || !strings.Contains(string(msgs[0]), `"supportedVersions":["2026-07-28"]`) {
		t.Fatalf("discover: %q", msgs)
	}
	if !strings.Contains(logs.String(), `msg="probed the MCP server's protocol era with server/discover" era="legacy`) {
		t.Errorf("the probe's verdict not logged:\n%s", logs)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a warning for an expected refusal:\n%s", logs)
	}
}

// TestModernUnroutableRequest: a request of the child's that no single
// call in flight can carry (here: two calls of clients without input
// capabilities) is refused, and the refusal tells the child, and through
// it its operator, what would carry it. In per-session and per-identity
// modes the child that serves such clients is the pool's own: advising
// --mode per-session there was wrong (the bridge already runs so), and no
// mode gives a 2026-07-28 client a child of its own; declaring the
// capability does. The shared child serves 2025 sessions too: for them
// per-session mode still helps.
func TestModernUnroutableRequest(t *testing.T) {
	for _, tc := range []struct {
		mode          string
		want, notWant []string
	}{
		{ModePerSession, []string{"declare"}, []string{"--mode per-session"}},
		{ModePerIdentity, []string{"declare"}, []string{"--mode per-session"}},
		{ModeShared, []string{"--mode per-session", "declare"}, nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx := safety(t)
			b, logs := peerBridge(t, processPeer, Config{Mode: tc.mode})
			slow := startModern(ctx, t, b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000,"steps":600},`+
				strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"progressToken":"p",`, 1)+`}}`)
			if msgs, _ := next(ctx, t, slow); len(msgs) == 0 { // its first progress: the call runs
				t.Fatal("slow: nothing")
			}
			ask := startModern(ctx, t, b, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"method":"roots/list"},`+modernMeta+`}}`)
			got := finalText(ctx, t, ask)
			if !strings.HasPrefix(got, "asked roots/list: error") {
				t.Fatalf("ask: %q, want the refusal the child got", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("the child was told %q, want %q in it", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) || strings.Contains(logs.String(), w) {
					t.Errorf("the child was told %q, or the log says:\n%s\nneither may say %q", got, logs, w)
				}
			}
		})
	}
}

// TestIdleLeaseAsks: a leased child that asks its client something while
// no call runs on it (as server-everything asks for roots after it is
// initialized; the badchild asks right after its first answer) is told at
// once that no client can answer, rather than left to wait out its own
// timeout.
func TestIdleLeaseAsks(t *testing.T) {
	ctx := safety(t)
	b, logs := peerBridge(t, processPeer, Config{}, "-ask-when-idle", "roots/list")
	roots := strings.Replace(modernMeta, `clientCapabilities":{}`, `clientCapabilities":{"roots":{}}`, 1)
	// A client that may be asked for roots: its calls run on the leased
	// child, which asks once the first is answered.
	call := func(id int) string {
		mc := startModern(ctx, t, b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"asked_when_idle","arguments":{},%s}}`, id, roots))
		defer mc.Close()
		return finalText(ctx, t, mc)
	}
	if got := call(1); got != "" {
		t.Fatalf("before it asked: %q", got)
	}
	until(t, "the bridge refused the idle child's question", func() bool {
		return regexp.MustCompile(`no client can answer; refused it".* method=roots/list why="no request of a client is in flight`).MatchString(logs.String())
	})
	// What its question got, once the child has it.
	for id := 2; ; id++ {
		if got := call(id); got != "" {
			if !strings.Contains(got, "no request of a client is in flight") {
				t.Fatalf("the child's own question got %q, want the bridge's refusal", got)
			}
			return
		}
	}
}

// TestLeaseChangesReachListens: a list change a leased child announces
// while it serves a call reaches the listens of its pool; what it says on
// its own as it starts (server-everything announces its lists once
// initialized) does not, as it is no news.
func TestLeaseChangesReachListens(t *testing.T) {
	ctx := safety(t)
	b, _ := peerBridge(t, processPeer, Config{}, "-notify-at-init", "notifications/tools/list_changed")
	// The base child announces at start too: a call first, whose answer
	// comes after that announcement, so the listen opens after it.
	finalText(ctx, t, startModern(ctx, t, b, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"},`+modernMeta+`}}`))
	listen := startModern(ctx, t, b, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://m"]},`+modernMeta+`}}`)
	methods := func(msgs [][]byte) (out []string) {
		for _, m := range msgs {
			var v struct{ Method string }
			_ = json.Unmarshal(m, &v)
			out = append(out, v.Method)
		}
		return out
	}
	var got []string
	if msgs, _ := next(ctx, t, listen); len(msgs) > 0 {
		got = append(got, methods(msgs)...)
	}
	sampling := strings.Replace(modernMeta, `clientCapabilities":{}`, `clientCapabilities":{"sampling":{}}`, 1)
	// On a leased child (it announced tools at start): a change in a call.
	finalText(ctx, t, startModern(ctx, t, b, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/tools/list_changed"},`+sampling+`}}`))
	// On the base, after it: an update, the marker of the end.
	finalText(ctx, t, startModern(ctx, t, b, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify","arguments":{"method":"notifications/resources/updated","params":{"uri":"test://m"}},`+modernMeta+`}}`))
	for !slices.Contains(got, "notifications/resources/updated") {
		msgs, final := next(ctx, t, listen)
		if final {
			t.Fatalf("the listen ended: %q", got)
		}
		got = append(got, methods(msgs)...)
	}
	want := []string{"notifications/subscriptions/acknowledged", "notifications/tools/list_changed", "notifications/resources/updated"}
	if !slices.Equal(got, want) {
		t.Errorf("the listen got %q, want %q", got, want)
	}
}
