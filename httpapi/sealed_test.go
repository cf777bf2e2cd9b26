package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
)

// wrapEnv is a bridge in front of a 2026-07-28 child whose confirm tool
// answers input_required with a requestState of its own (testdata/
// foldchild -modern), for alice and bob, with a clock the test moves.
type wrapEnv struct {
	*env
	calls string // the child's log of what it issued and received
	clock *atomic.Int64
}

func newWrapEnv(t *testing.T, m mode, ttl time.Duration) *wrapEnv {
	t.Helper()
	tokens := map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken}
	v, err := auth.TokensFromEnv([]string{"ALICE_TOKEN", "BOB_TOKEN"}, func(k string) (string, bool) { s, ok := tokens[k]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(t.TempDir(), "calls")
	clock := &atomic.Int64{}
	base := time.Now()
	cfg := m.bridge
	cfg.ReplicaID, cfg.InputTTL = "replica-a", ttl
	cfg.Env = append(os.Environ(), "FOLDCHILD_LOG="+calls)
	cfg.Now = func() time.Time { return base.Add(time.Duration(clock.Load())) }
	e := newEnv(t, envOpts{command: []string{testpeers.BuildGo(t, "./testdata/foldchild"), "-modern"}, bridge: cfg, http: httpapi.Options{Auth: v}})
	return &wrapEnv{env: e, calls: calls, clock: clock}
}

// confirmCall is a call of confirm with args; with a state, the retry that
// brings it back, accepting the confirmation.
func confirmCall(id int, token string, args map[string]any, state string) modernRequest {
	p := map[string]any{"name": "confirm", "arguments": args}
	if state != "" {
		p["requestState"] = state
		p["inputResponses"] = map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
	}
	return modernRequest{id: id, method: "tools/call", params: p, caps: map[string]any{"elicitation": map[string]any{}}, token: token}
}

// start calls confirm and returns the requestState of its input_required
// result, checked to be the bridge's wrapper, sealed: the child's own
// state cannot be read from it.
func (w *wrapEnv) start(id int, token string, args map[string]any) string {
	w.t.Helper()
	msgs := readMessages(w.t, w.do(confirmCall(id, token, args, "").req()))
	res, _ := msgs[0]["result"].(map[string]any)
	state, _ := res["requestState"].(string)
	if len(msgs) != 1 || res["resultType"] != "input_required" || !strings.HasPrefix(state, "mb1.replica-a.c.") {
		w.t.Fatalf("confirm: %v; want input_required with a wrapped requestState", msgs)
	}
	sealed, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(state, "mb1.replica-a.c."))
	if err != nil || bytes.Contains(sealed, []byte("child-state")) || bytes.Contains(sealed, []byte("alice")) {
		w.t.Fatalf("the wrapper %q is not sealed: %v", state, err)
	}
	return state
}

// received is how many states the child was given back.
func (w *wrapEnv) received() []string {
	b, _ := os.ReadFile(w.calls)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(l, "received "); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestWrappedStateAttacks: a 2026-07-28 child's own requestState, relayed
// by the bridge, holds against what a handle for a legacy child holds
// against: it is sealed and bound to the principal, method, tool and
// arguments it was given for, single use and short lived. Every forged,
// foreign, replayed, altered or expired state, and the child's state sent
// unwrapped, gets -32602 and never reaches the child.
func TestWrappedStateAttacks(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity} {
		t.Run(m.name, func(t *testing.T) {
			w := newWrapEnv(t, m, time.Minute)
			args := map[string]any{"n": json64(9007199254740993)}
			st := w.start(1, aliceToken, args)
			rest := strings.TrimPrefix(st, "mb1.replica-a.c.")
			flipped := []byte(st)
			flipped[len(flipped)-2] ^= 1
			const notOurs = "requestState was not issued by this bridge"
			const gone = "requestState is invalid, expired or already used"
			const foreign = "requestState does not belong to this request"
			for _, tc := range []struct {
				name string
				r    modernRequest
				want string
			}{
				{"the child's state, unwrapped", confirmCall(2, aliceToken, args, "child-state-1"), notOurs},
				{"the child's state, unwrapped, by another principal", confirmCall(3, bobToken, args, "child-state-1"), notOurs},
				{"forged", confirmCall(4, aliceToken, args, "mb1.replica-a.c."+strings.Repeat("A", len(rest))), gone},
				{"tampered", confirmCall(5, aliceToken, args, string(flipped)), gone},
				{"a legacy child's handle", confirmCall(6, aliceToken, args, "mb1.replica-a.0123456789abcdef0123456789abcdef"), gone},
				{"another principal's", confirmCall(7, bobToken, args, st), foreign},
				{"other arguments", confirmCall(8, aliceToken, map[string]any{"n": 2}, st), foreign},
				// 2^53+1 and 2^53 are one float64: the digest reads them as written.
				{"an integer that differs above 2^53", confirmCall(9, aliceToken, map[string]any{"n": json64(9007199254740992)}, st), foreign},
				{"another tool", func() modernRequest {
					r := confirmCall(10, aliceToken, args, st)
					r.params["name"] = "echo"
					return r
				}(), foreign},
				{"another method", modernRequest{id: 11, method: "tools/list", token: aliceToken,
					params: map[string]any{"requestState": st}}, foreign},
				{"another replica's", confirmCall(12, aliceToken, args, "mb1.replica-b.c."+rest), `issued by the bridge replica "replica-b" and this is "replica-a"`},
			} {
				t.Run(tc.name, func(t *testing.T) { w.refused(tc.r, tc.want) })
			}
			if got := w.received(); len(got) != 0 {
				t.Fatalf("the child was given back %v by refused retries", got)
			}
			// The genuine retry: the child gets its own state back, once.
			msgs := readMessages(t, w.do(confirmCall(13, aliceToken, args, st).req()))
			if len(msgs) != 1 || !strings.HasPrefix(text(msgs[0]), "confirmed child-state-1 ") {
				t.Fatalf("genuine retry: %v", msgs)
			}
			t.Run("replayed", func(t *testing.T) { w.refused(confirmCall(14, aliceToken, args, st), gone) })
			// Expired: a wrapper past --input-ttl finds nothing.
			late := w.start(15, aliceToken, args)
			w.clock.Add(int64(time.Minute))
			t.Run("expired", func(t *testing.T) { w.refused(confirmCall(16, aliceToken, args, late), gone) })
			if got := w.received(); len(got) != 1 || got[0] != "child-state-1" {
				t.Fatalf("the child was given back %v; want child-state-1 once", got)
			}
		})
	}
}

// TestWrappedStateRace: the same wrapper sent twice at once reaches the
// child once; the other retry gets -32602.
func TestWrappedStateRace(t *testing.T) {
	w := newWrapEnv(t, shared, time.Minute)
	const rounds = 10
	for i := range rounds {
		args := map[string]any{"round": i}
		st := w.start(100*i, aliceToken, args)
		out := make(chan *http.Response, 2)
		for j := range 2 {
			go func() {
				resp, err := w.try(t.Context(), confirmCall(100*i+1+j, aliceToken, args, st).req())
				if err != nil {
					t.Error(err)
				}
				out <- resp
			}()
		}
		var answered, refused int
		for range 2 {
			resp := <-out
			if resp == nil {
				t.FailNow()
			}
			switch msgs := readMessages(t, resp); {
			case len(msgs) == 1 && strings.HasPrefix(text(msgs[0]), "confirmed "):
				answered++
			case len(msgs) == 1 && msgs[0]["error"] != nil:
				refused++
			default:
				t.Errorf("round %d: %v", i, msgs)
			}
		}
		if answered != 1 || refused != 1 {
			t.Fatalf("round %d: %d answered, %d refused; want one of each", i, answered, refused)
		}
	}
	if got := w.received(); len(got) != rounds {
		t.Fatalf("the child was given back %d states, want %d", len(got), rounds)
	}
}

// json64 is an integer that JSON carries exactly, whatever a float64 can.
type json64 int64

func (n json64) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprint(int64(n))), nil }
