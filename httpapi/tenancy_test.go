package httpapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// feedView is one snapshot event of the web feed, decoded and raw.
type feedView struct {
	snap bridge.Snapshot
	raw  string
}

// watchFeed opens the web feed at url with header and reads snapshots
// until done holds for one; it returns every snapshot read, that one
// last. The feed ending first fails the test.
func watchFeed(t *testing.T, client *http.Client, url string, header map[string]string, done func(feedView) bool) []feedView {
	t.Helper()
	// A safety net for a broken feed, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("feed: status %d", resp.StatusCode)
	}
	feed := newSSEReader(resp.Body)
	var seen []feedView
	for {
		ev, ok := feed.next()
		if !ok {
			t.Fatalf("the feed ended before showing what was expected; last snapshots: %v", lastRaw(seen))
		}
		var v feedView
		v.raw = ev.data
		if ev.event != "snapshot" || json.Unmarshal([]byte(ev.data), &v.snap) != nil {
			t.Fatalf("event %+v", ev)
		}
		seen = append(seen, v)
		if done(v) {
			return seen
		}
	}
}

func lastRaw(seen []feedView) []string {
	var out []string
	for _, v := range seen[max(0, len(seen)-2):] {
		out = append(out, v.raw)
	}
	return out
}

// TestWebTenancy: who sees what of the others, at the HTTP level: in every
// session mode, the web page's feed shows each principal its own sessions
// and the children that serve them only, never another principal's session
// or stderr; the child that serves every principal (shared, stateless)
// shows that it runs but not its stderr; an admin (--admin scope:mcp:admin)
// sees everything.
func TestWebTenancy(t *testing.T) {
	for _, mode := range []string{bridge.ModePerSession, bridge.ModePerIdentity, bridge.ModeShared, "stateless"} {
		t.Run(mode, func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			t.Cleanup(stop)
			o := httpapi.Options{Web: true, Context: ctx, Admins: auth.Subjects{"scope:mcp:admin"}}
			var bc bridge.Config
			if mode == "stateless" {
				o.Stateless = true
			} else {
				bc.Mode = mode
			}
			f := newAuthFixtureBridge(t, o, bc)
			root := f.jwt(t, "root", func(c jwt.MapClaims) { c["scope"] = "mcp:tools mcp:admin" })

			// Alice and Bob each leave a secret on the stderr of the
			// child that serves them.
			type user struct {
				name, token, secret, sid string
			}
			users := []*user{
				{name: "ALICE_TOKEN", token: aliceToken, secret: "alice-stderr-secret-" + mode},
				{name: "BOB_TOKEN", token: bobToken, secret: "bob-stderr-secret-" + mode},
			}
			for _, u := range users {
				h := bearer(u.token)
				body := sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stderr","arguments":{"stderr":%q}}}`, u.secret)
				if mode != "stateless" {
					u.sid = f.initializeAs(h)
				}
				resp := f.do(req{body: body, sid: u.sid, header: h})
				if msgs := readMessages(t, resp); resp.StatusCode != 200 || len(msgs) != 1 || text(msgs[0]) != "ok" {
					t.Fatalf("%s: stderr tool: status %d, %v", u.name, resp.StatusCode, msgs)
				}
			}
			wantSessions := 2
			if mode == "stateless" {
				wantSessions = 0
			}
			multiplexed := mode == bridge.ModeShared || mode == "stateless"

			// The admin sees both sessions, every child, both secrets.
			seen := watchFeed(t, f.client, f.srv.URL+"/ui/events", bearer(root), func(v feedView) bool {
				return len(v.snap.Sessions) == wantSessions && strings.Contains(v.raw, users[0].secret) && strings.Contains(v.raw, users[1].secret)
			})
			admin := seen[len(seen)-1].snap
			if wantMode := cmp.Or(bc.Mode, "stateless"); admin.Mode != wantMode {
				t.Errorf("the page says mode %q, want %q", admin.Mode, wantMode)
			}
			wantChildren := 2
			if multiplexed {
				wantChildren = 1
			}
			if len(admin.Children) != wantChildren {
				t.Errorf("admin: %d children, want %d: %+v", len(admin.Children), wantChildren, admin.Children)
			}
			for _, c := range admin.Children {
				if c.StderrHidden {
					t.Errorf("admin: the stderr of child %d is hidden", c.Pid)
				}
			}

			// Each of them sees only their own, in every snapshot.
			for i, u := range users {
				other := users[1-i]
				seen := watchFeed(t, f.client, f.srv.URL+"/ui/events", bearer(u.token), func(v feedView) bool {
					return shows(v, u.name, u.sid, u.secret, mode, admin.Children[0].Pid)
				})
				for _, v := range seen {
					for _, leak := range []string{other.secret, other.name} {
						if strings.Contains(v.raw, leak) {
							t.Fatalf("%s's feed shows %q: %s", u.name, leak, v.raw)
						}
					}
					if other.sid != "" && strings.Contains(v.raw, other.sid[:8]) {
						t.Fatalf("%s's feed shows %s's session: %s", u.name, other.name, v.raw)
					}
				}
				mine := seen[len(seen)-1].snap
				if len(mine.Sessions) != wantSessions/2 || len(mine.Children) != 1 {
					t.Fatalf("%s: sessions %+v, children %+v: want theirs, and the child that serves them", u.name, mine.Sessions, mine.Children)
				}
				c := mine.Children[0]
				switch {
				case multiplexed && (!c.StderrHidden || len(c.StderrTail) > 0 || c.Pid != admin.Children[0].Pid):
					t.Errorf("%s: the shared child %+v: want it shown, its stderr hidden", u.name, c)
				case multiplexed && c.Sessions != wantSessions/2:
					t.Errorf("%s: the shared child counts %d sessions, want theirs only (%d)", u.name, c.Sessions, wantSessions/2)
				case !multiplexed && c.Sessions != 1:
					t.Errorf("%s: their child counts %d sessions, want 1", u.name, c.Sessions)
				}
			}
		})
	}

	t.Run("no authentication: the anonymous principal sees everything", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		t.Cleanup(stop)
		e := newEnv(t, envOpts{http: httpapi.Options{Web: true, Context: ctx}})
		var secrets []string
		for i := range 2 {
			sid := e.initialize("2025-11-25")
			secrets = append(secrets, sprintf("anonymous-secret-%d", i))
			if _, msgs := e.call(sid, 7, "stderr", map[string]any{"stderr": secrets[i]}); len(msgs) != 1 || text(msgs[0]) != "ok" {
				t.Fatalf("stderr tool: %v", msgs)
			}
		}
		watchFeed(t, e.client, e.srv.URL+"/ui/events", nil, func(v feedView) bool {
			return len(v.snap.Sessions) == 2 && len(v.snap.Children) == 2 &&
				strings.Contains(v.raw, secrets[0]) && strings.Contains(v.raw, secrets[1])
		})
	})
}

// shows reports whether v shows principal name its session (sid; none in
// stateless mode) and the child that serves it: in per-session and
// per-identity mode its own, with its secret on stderr; else the shared
// child, sharedPid.
func shows(v feedView, name, sid, secret, mode string, sharedPid int) bool {
	var s bridge.SessionSnapshot
	if sid != "" {
		i := slices.IndexFunc(v.snap.Sessions, func(s bridge.SessionSnapshot) bool { return s.ID == sid[:8] })
		if i < 0 || v.snap.Sessions[i].Principal != name {
			return false
		}
		s = v.snap.Sessions[i]
	}
	return slices.ContainsFunc(v.snap.Children, func(c bridge.ChildSnapshot) bool {
		switch mode {
		case bridge.ModeShared, "stateless":
			return c.Pid == sharedPid
		case bridge.ModePerIdentity:
			if c.Identity != name {
				return false
			}
		default:
			if c.Pid != s.ChildPid {
				return false
			}
		}
		return slices.ContainsFunc(c.StderrTail, func(l string) bool { return strings.Contains(l, secret) })
	})
}
