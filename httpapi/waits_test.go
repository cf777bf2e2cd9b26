package httpapi_test

// Bounded waits end to end: nothing a client sends waits for good, with the
// official Go SDK client over real HTTP and real badchild processes, in the
// modes each case names; and under chaos (crashes, a closed stdout, hung
// calls) no request goes unanswered and no process is left, in every mode.
// Waits are bounded by a safety net, never timed assertions.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitsSafety bounds every wait of these tests: reaching it means a hang.
const waitsSafety = 30 * time.Second

// mode is a session model, as the bridge and the HTTP layer set it.
type mode struct {
	name   string
	bridge bridge.Config
	http   httpapi.Options
}

var (
	perSession  = mode{name: "per-session"}
	shared      = mode{name: "shared", bridge: bridge.Config{Mode: bridge.ModeShared}}
	perIdentity = mode{name: "per-identity", bridge: bridge.Config{Mode: bridge.ModePerIdentity}}
	stateless   = mode{name: "stateless", http: httpapi.Options{Stateless: true}}
)

// modeEnv serves the badchild, run with args, in mode m with the bridge
// settings of cfg.
func modeEnv(t *testing.T, m mode, cfg bridge.Config, args ...string) *env {
	t.Helper()
	cfg.Mode = m.bridge.Mode
	return newEnv(t, envOpts{bridge: cfg, http: m.http,
		command: append([]string{testpeers.BuildGo(t, "./testdata/badchild")}, args...)})
}

// sdkConnect connects an official Go SDK client to e.
func sdkConnect(ctx context.Context, e *env) (*mcp.ClientSession, error) {
	return sdkConnectWith(ctx, e, e.client)
}

func sdkConnectWith(ctx context.Context, e *env, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "waits-test", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// noDelete is an HTTP client that never sends DELETE: a client that goes
// away without ending its session, as the Inspector CLI and mcp-remote do.
func noDelete(e *env) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodDelete {
			return nil, errors.New("this client never sends DELETE")
		}
		return e.client.Transport.RoundTrip(r)
	})}
}

// sdkCall calls tool and returns its text, or the error.
func sdkCall(ctx context.Context, cs *mcp.ClientSession, tool string) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": tool}})
	if err != nil {
		return "", err
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok && !res.IsError {
		return tc.Text, nil
	}
	return "", fmt.Errorf("%s: a tool error: %v", tool, res.Content)
}

// wantRPCError checks that err is a JSON-RPC error with code whose message
// holds contains.
func wantRPCError(t *testing.T, err error, code int64, contains string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != code || !strings.Contains(we.Message, contains) {
		t.Fatalf("got %v, want a JSON-RPC error %d mentioning %q", err, code, contains)
	}
}

// eventually polls cond, every few milliseconds, up to the safety net:
// for what the bridge does on its own and does not announce.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitsSafety)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("never: %s", what)
		case <-tick.C:
		}
	}
}

func safetyCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitsSafety)
	t.Cleanup(cancel)
	return ctx
}

// TestFirstStartFails: a shared or stateless bridge whose child dies on its
// first start and works on the next. The first client's initialize fails;
// the next client connects and calls. Before, every later request waited
// for good.
func TestFirstStartFails(t *testing.T) {
	for _, m := range []mode{shared, stateless} {
		t.Run(m.name, func(t *testing.T) {
			ctx := safetyCtx(t)
			e := modeEnv(t, m, bridge.Config{}, "-exit-first", filepath.Join(t.TempDir(), "started"))
			if cs, err := sdkConnect(ctx, e); err == nil {
				cs.Close()
				t.Fatal("the first client connected to a child that died on its initialize")
			}
			cs, err := sdkConnect(ctx, e)
			if err != nil {
				t.Fatalf("the second client: %v", err)
			}
			defer cs.Close()
			if got, err := sdkCall(ctx, cs, "echo"); err != nil || got != "echo" {
				t.Fatalf("echo: %q %v", got, err)
			}
		})
	}
}

// TestCrashLoop: a shared or stateless bridge whose child exits at every
// start. Clients connecting at once all get an error, none waits until
// shutdown; the breaker trips and /readyz says so.
func TestCrashLoop(t *testing.T) {
	for _, m := range []mode{shared, stateless} {
		t.Run(m.name, func(t *testing.T) {
			ctx := safetyCtx(t)
			e := modeEnv(t, m, bridge.Config{}, "-exit-at-start")
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					cs, err := sdkConnect(ctx, e)
					switch {
					case ctx.Err() != nil:
						t.Errorf("client %d never got an answer", i)
					case err == nil:
						cs.Close()
						t.Errorf("client %d connected to a child that never starts", i)
					}
				})
			}
			wg.Wait()
			eventually(t, "/readyz says the server is down", func() bool {
				resp, err := e.client.Get(e.srv.URL + "/readyz")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				var body struct{ Reason string }
				_ = json.NewDecoder(resp.Body).Decode(&body)
				return resp.StatusCode == http.StatusServiceUnavailable && body.Reason == "server_down"
			})
			if _, err := sdkConnect(ctx, e); err == nil || ctx.Err() != nil {
				t.Fatalf("after the breaker: %v, want a prompt error", err)
			}
			if n := e.b.Len(); n != 0 {
				t.Errorf("%d sessions left", n)
			}
		})
	}
}

// TestStdoutClosedSDK: a child that closes its stdout and runs on. The call
// gets -32005 at once; per session the process is stopped, a shared one is
// restarted and the session goes on.
func TestStdoutClosedSDK(t *testing.T) {
	for _, m := range []mode{perSession, shared} {
		t.Run(m.name, func(t *testing.T) {
			ctx := safetyCtx(t)
			e := modeEnv(t, m, bridge.Config{})
			cs, err := sdkConnect(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			before, err := sdkCall(ctx, cs, "pid")
			if err != nil {
				t.Fatal(err)
			}
			_, err = sdkCall(ctx, cs, "close_stdout")
			wantRPCError(t, err, bridge.CodeChildExited, "closed its stdout")
			if m.name == perSession.name {
				eventually(t, "the session and its process are gone", func() bool { return e.b.Len() == 0 && e.b.Children() == 0 })
				return
			}
			s, err := e.b.Session(cs.ID(), "")
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the shared child was restarted", func() bool { p := s.ChildPid(); return p != 0 && strconv.Itoa(p) != before })
			if after, err := sdkCall(ctx, cs, "pid"); err != nil || after == before {
				t.Fatalf("after the restart: pid %q (before %q), %v", after, before, err)
			}
		})
	}
}

// TestRequestTimeoutSDK: a call the child never answers gets JSON-RPC error
// -32007 naming --request-timeout, and the child is told to cancel it, with
// its own id.
func TestRequestTimeoutSDK(t *testing.T) {
	for _, m := range []mode{perSession, shared} {
		t.Run(m.name, func(t *testing.T) {
			ctx := safetyCtx(t)
			e := modeEnv(t, m, bridge.Config{RequestTimeout: 300 * time.Millisecond})
			cs, err := sdkConnect(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			_, err = sdkCall(ctx, cs, "hang")
			wantRPCError(t, err, bridge.CodeRequestTimeout, "--request-timeout")
			got, err := sdkCall(ctx, cs, "cancels")
			var ids []int64 // the child's ids are numbers; the SDK's would be too, but not these
			if err != nil || json.Unmarshal([]byte(got), &ids) != nil || len(ids) != 1 {
				t.Fatalf("the child was told to cancel %q (%v), want one request", got, err)
			}
		})
	}
}

// TestClientsGiveUpOnInitialize: four clients give up on a server that
// never answers initialize, and go without DELETE. Their sessions end and
// their processes are stopped once --init-timeout runs out, whatever
// --idle-timeout says: each client's own (per-session), or the principal's
// once its last session has ended (per-identity); a shared one (shared,
// stateless) is stopped as unresponsive and restarted. Before, all four
// stayed, each with its process: the initialize in flight kept them from
// idling.
func TestClientsGiveUpOnInitialize(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity, stateless} {
		t.Run(m.name, func(t *testing.T) {
			e := modeEnv(t, m, bridge.Config{InitTimeout: time.Second, IdleTimeout: 5 * time.Second}, "-never-init")
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					// The client's own patience is shorter than the bridge's.
					ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
					defer cancel()
					if cs, err := sdkConnectWith(ctx, e, noDelete(e)); err == nil {
						cs.Close()
						t.Error("connected to a server that never answers initialize")
					}
				})
			}
			wg.Wait()
			eventually(t, "every session ended", func() bool { return e.b.Len() == 0 })
			if m.name == perSession.name || m.name == perIdentity.name {
				eventually(t, "every process was stopped", func() bool { return e.b.Children() == 0 })
			}
			eventually(t, "a process was stopped as unresponsive", func() bool { return e.b.Stats().ChildrenUnresponsive.Load() > 0 })
		})
	}
}

// TestChaos: in every mode, clients call while the child crashes, closes
// its stdout and hangs. Every call gets an answer (a result or an error),
// every client can go on (reconnecting if its session ended), and once
// the bridge is closed no process it started is left.
func TestChaos(t *testing.T) {
	for _, m := range []mode{perSession, shared, perIdentity, stateless} {
		t.Run(m.name, func(t *testing.T) {
			ctx := safetyCtx(t)
			e := modeEnv(t, m, bridge.Config{RequestTimeout: 400 * time.Millisecond, StopGrace: 200 * time.Millisecond})
			// One crash and one closed stdout in all: a shared child's
			// crash-loop breaker trips at five.
			scripts := [][]string{
				{"echo", "hang", "crash", "echo", "pid", "echo"},
				{"pid", "echo", "close_stdout", "hang", "echo"},
				{"hang", "echo", "pid", "hang", "echo"},
			}
			var (
				mu   sync.Mutex
				lost []string
				pids = map[int]bool{}
			)
			var wg sync.WaitGroup
			for i, script := range scripts {
				wg.Go(func() {
					var cs *mcp.ClientSession
					defer func() {
						if cs != nil {
							cs.Close()
						}
					}()
					run := func(tool string) error {
						if cs == nil {
							var err error
							if cs, err = sdkConnect(ctx, e); err != nil {
								return err
							}
						}
						text, err := sdkCall(ctx, cs, tool)
						if pid, perr := strconv.Atoi(text); err == nil && tool == "pid" && perr == nil {
							mu.Lock()
							pids[pid] = true
							mu.Unlock()
						}
						if err != nil && !errors.As(err, new(*jsonrpc.Error)) {
							cs.Close() // the session is gone: start another
							cs = nil
						}
						return err
					}
					for _, tool := range append(script, "pid") {
						run(tool)
						if ctx.Err() != nil {
							mu.Lock()
							lost = append(lost, fmt.Sprintf("client %d: %s", i, tool))
							mu.Unlock()
							return
						}
					}
					// After the chaos each client gets through again.
					tick := time.NewTicker(10 * time.Millisecond)
					defer tick.Stop()
					for run("echo") != nil {
						select {
						case <-ctx.Done():
							mu.Lock()
							lost = append(lost, fmt.Sprintf("client %d: the last echo", i))
							mu.Unlock()
							return
						case <-tick.C:
						}
					}
				})
			}
			wg.Wait()
			if len(lost) > 0 {
				t.Fatalf("calls never answered: %q", lost)
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), waitsSafety)
			defer cancel()
			if err := e.b.Close(closeCtx); err != nil {
				t.Fatal(err)
			}
			if n := e.b.Children(); n != 0 {
				t.Errorf("%d processes alive after Close", n)
			}
			var left []int
			for pid := range pids {
				if kill0(pid) == nil {
					left = append(left, pid)
				}
			}
			if slices.Sort(left); len(left) > 0 {
				t.Errorf("processes %v are still running", left)
			}
			if len(pids) == 0 {
				t.Error("no process answered pid")
			}
		})
	}
}
