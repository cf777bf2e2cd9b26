package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Placeholders of transcript messages. envelope is the _meta a 2026-07-28
// client puts in every request (SEP-2575), without its braces so that a
// step can add keys of its own; noCaps is the same from a client that
// declares no capability.
const (
	envelope = `"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"transcript","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{},"roots":{}}`
	noCaps = `"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"transcript","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}`
)

// transcriptStep is one message to the demo and the messages it must
// answer with. In send, $ENVELOPE and $NOCAPS stand for the _meta keys
// above, $STATE for the requestState of the last input_required result and
// $REQID for the id of the last request the demo sent.
// Each want is a JSON value that one answer must contain (objects: these
// keys at least; arrays: these elements at least, in any order), and "$ANY"
// matches any value but null; the answers may come in any order, and there
// must be exactly as many as wants.
type transcriptStep struct {
	name string
	send string
	want []string
}

// modernTranscript drives the demo as the bridge will for 2026-07-28
// clients: no initialize, every request carrying its own _meta.
var modernTranscript = []transcriptStep{
	{
		name: "discover",
		send: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{$ENVELOPE}}}`,
		want: []string{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],
			"capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true},"completions":{},"logging":{}},
			"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-bridge-demo"}}}}`},
	},
	{
		name: "progress and logs of a call that asked for them",
		send: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":1,"delay_ms":1},
			"_meta":{$ENVELOPE,"progressToken":"p2","io.modelcontextprotocol/logLevel":"info"}}}`,
		want: []string{
			`{"method":"notifications/progress","params":{"progressToken":"p2","progress":0,"total":1}}`,
			`{"method":"notifications/message","params":{"level":"info","data":"step 0 of 1"}}`,
			`{"method":"notifications/progress","params":{"progressToken":"p2","progress":1,"total":1}}`,
			`{"method":"notifications/message","params":{"level":"info","data":"step 1 of 1"}}`,
			`{"id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"Completed 1 steps"}]}}`,
		},
	},
	{
		name: "no log without logLevel",
		send: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_logging_tool","arguments":{},"_meta":{$ENVELOPE}}}`,
		want: []string{`{"id":3,"result":{"resultType":"complete"}}`},
	},
	{
		name: "sampling the client did not declare",
		send: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"},"_meta":{$NOCAPS}}}`,
		want: []string{`{"id":4,"error":{"code":-32021,"data":{"requiredCapabilities":{"sampling":{}}}}}`},
	},
	{
		name: "round 1",
		send: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"_meta":{$ENVELOPE}}}`,
		want: []string{`{"id":5,"result":{"resultType":"input_required","requestState":"$ANY",
			"inputRequests":{"step1":{"method":"elicitation/create","params":{"message":"Step 1: What is your name?"}}}}}`},
	},
	{
		name: "round 2",
		send: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"_meta":{$ENVELOPE},
			"inputResponses":{"step1":{"action":"accept","content":{"name":"Ada"}}},"requestState":"$STATE"}}`,
		want: []string{`{"id":6,"result":{"resultType":"input_required","requestState":"$ANY",
			"inputRequests":{"step2":{"method":"elicitation/create","params":{"message":"Step 2: What is your favorite color?"}}}}}`},
	},
	{
		name: "tampered state",
		send: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"_meta":{$ENVELOPE},
			"inputResponses":{"step2":{"action":"accept","content":{"color":"green"}}},"requestState":"$STATE-TAMPERED"}}`,
		want: []string{`{"id":7,"error":{"code":-32602,"message":"invalid or expired requestState"}}`},
	},
	{
		name: "state of another tool",
		send: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},"_meta":{$ENVELOPE},
			"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"$STATE"}}`,
		want: []string{`{"id":8,"error":{"code":-32602}}`},
	},
	{
		name: "round 3",
		send: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},"_meta":{$ENVELOPE},
			"inputResponses":{"step2":{"action":"accept","content":{"color":"green"}}},"requestState":"$STATE"}}`,
		want: []string{`{"id":9,"result":{"resultType":"complete","content":[{"type":"text","text":"Multi-round complete: Ada likes green"}]}}`},
	},
	{
		name: "listen",
		send: `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{$ENVELOPE}}}`,
		want: []string{`{"method":"notifications/subscriptions/acknowledged",
			"params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`},
	},
	{
		name: "a tool list change reaches the listener",
		send: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},"_meta":{$ENVELOPE}}}`,
		want: []string{
			`{"id":10,"result":{"resultType":"complete"}}`,
			`{"method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`,
		},
	},
	{
		name: "a prompt list change does not",
		send: `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"test_trigger_prompt_change","arguments":{},"_meta":{$ENVELOPE}}}`,
		want: []string{`{"id":11,"result":{"resultType":"complete"}}`},
	},
	{
		name: "cancelling the listen ends it",
		send: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1"}}`,
		want: []string{`{"id":"L1","result":{"resultType":"complete"}}`},
	},
}

// legacyTranscript drives the demo as a 2025 client does, and as the
// bridge will when it translates for a 2026-07-28 client in front of a
// legacy child: the capabilities in a request's _meta (without a
// protocolVersion, which would make the request a 2026-07-28 one) narrow
// what the demo asks of the client, and every question, the second round
// of multi_round included, is a request of its own.
var legacyTranscript = []transcriptStep{
	{
		name: "initialize",
		send: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
			"capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"transcript","version":"1.0.0"}}}`,
		want: []string{`{"id":1,"result":{"protocolVersion":"2025-11-25","serverInfo":{"name":"mcp-bridge-demo"}}}`},
	},
	{
		name: "initialized",
		send: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	},
	{
		name: "the request's capabilities win over the session's",
		send: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"},
			"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		want: []string{`{"id":2,"error":{"code":-32021,"data":{"requiredCapabilities":{"sampling":{}}}}}`},
	},
	{
		name: "only what the request declares is asked",
		send: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_input_required_result_capabilities","arguments":{},
			"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`,
		want: []string{`{"id":"$ANY","method":"sampling/createMessage","params":{"messages":[{"content":{"text":"Generate a short greeting"}}]}}`},
	},
	{
		name: "the answer completes the call",
		send: `{"jsonrpc":"2.0","id":$REQID,"result":{"role":"assistant","content":{"type":"text","text":"Hello!"},"model":"test-model"}}`,
		want: []string{`{"id":3,"result":{"content":[{"type":"text","text":"Capability-aware input requests fulfilled"}]}}`},
	},
	{
		name: "round 1",
		send: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{}}}`,
		want: []string{`{"id":"$ANY","method":"elicitation/create","params":{"message":"Step 1: What is your name?"}}`},
	},
	{
		name: "round 2",
		send: `{"jsonrpc":"2.0","id":$REQID,"result":{"action":"accept","content":{"name":"Ada"}}}`,
		want: []string{`{"id":"$ANY","method":"elicitation/create","params":{"message":"Step 2: What is your favorite color?"}}`},
	},
	{
		name: "complete",
		send: `{"jsonrpc":"2.0","id":$REQID,"result":{"action":"accept","content":{"color":"green"}}}`,
		want: []string{`{"id":4,"result":{"content":[{"type":"text","text":"Multi-round complete: Ada likes green"}]}}`},
	},
	{
		name: "a tool list change reaches the session",
		send: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{}}}`,
		want: []string{
			`{"id":5,"result":{"content":[{"type":"text","text":"tools_list_changed published"}]}}`,
			`{"method":"notifications/tools/list_changed"}`,
		},
	},
}

// TestStdioTranscript runs each transcript against the demo in a child
// process over stdio, the way the bridge runs it, then closes its stdin:
// the child must exit cleanly having sent nothing more.
func TestStdioTranscript(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		states := runTranscript(t, modernTranscript)
		if len(states) != 2 || states[0] == states[1] {
			t.Errorf("requestStates = %q, want two different ones", states)
		}
	})
	t.Run("2025-11-25", func(t *testing.T) { runTranscript(t, legacyTranscript) })
}

// runTranscript runs steps against a new demo child and returns the
// requestStates it received.
func runTranscript(t *testing.T, steps []transcriptStep) (states []string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := startStdioChild(t)
	var reqID string
	for _, step := range steps {
		send := strings.NewReplacer("$ENVELOPE", envelope, "$NOCAPS", noCaps, "$REQID", reqID).Replace(step.send)
		if len(states) > 0 {
			send = strings.ReplaceAll(send, "$STATE", states[len(states)-1])
		}
		c.send(t, send)
		var got []string
		for range step.want {
			msg := c.receive(ctx, t, step.name)
			got = append(got, string(msg))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result struct {
					RequestState string `json:"requestState"`
				} `json:"result"`
			}
			if json.Unmarshal(msg, &m) != nil {
				continue // matchAll reports it
			}
			if m.Result.RequestState != "" {
				states = append(states, m.Result.RequestState)
			}
			if m.Method != "" && m.ID != nil {
				reqID = string(m.ID)
			}
		}
		if err := matchAll(got, step.want); err != nil {
			t.Fatalf("%s: %v\nsent: %s\ngot:\n%s", step.name, err, send, strings.Join(got, "\n"))
		}
	}
	c.stdin.Close()
	if msg, ok := <-c.lines; ok {
		t.Errorf("after the transcript: %s", msg)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("child exit: %v\nstderr:\n%s", err, &c.stderr)
	}
	return states
}

// stdioChild is the demo server in a child process: this test binary run
// again with childEnv set (see TestMain).
type stdioChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // stdout, one message per line; closed at EOF
	stderr bytes.Buffer
}

func startStdioChild(t *testing.T) *stdioChild {
	t.Helper()
	c := &stdioChild{lines: make(chan []byte, 100)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"=conformance")
	c.cmd.Stderr = &c.stderr
	c.cmd.WaitDelay = 5 * time.Second
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// An os.Pipe we own, rather than StdoutPipe, so that reading to EOF
	// does not race with Wait closing the pipe.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout = w
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the child has its copy; ours would keep EOF from coming
	// The reader ends at EOF: when the child exits, or is killed below.
	go func() {
		defer close(c.lines)
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			c.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil { // the test ended before Wait
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
		for range c.lines { // lets the reader reach EOF and exit
		}
	})
	return c
}

func (c *stdioChild) send(t *testing.T, msg string) {
	t.Helper()
	// One line per message, as the stdio transport requires; the
	// transcript's messages are wrapped for reading.
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(msg)); err != nil {
		t.Fatalf("bad transcript message %s: %v", msg, err)
	}
	buf.WriteByte('\n')
	if _, err := c.stdin.Write(buf.Bytes()); err != nil {
		t.Fatalf("write to the demo: %v", err)
	}
}

func (c *stdioChild) receive(ctx context.Context, t *testing.T, step string) []byte {
	t.Helper()
	select {
	case msg, ok := <-c.lines:
		if !ok {
			t.Fatalf("%s: the demo closed stdout\nstderr:\n%s", step, &c.stderr)
		}
		return msg
	case <-ctx.Done():
		t.Fatalf("%s: no answer: %v", step, ctx.Err())
		return nil
	}
}

// matchAll pairs every message of got with a distinct pattern of want
// that it contains, in any order.
func matchAll(got, want []string) error {
	used := make([]bool, len(got))
	for _, w := range want {
		var pattern any
		if err := json.Unmarshal([]byte(w), &pattern); err != nil {
			return fmt.Errorf("bad pattern %s: %w", w, err)
		}
		found := false
		for i, g := range got {
			var msg any
			if used[i] || json.Unmarshal([]byte(g), &msg) != nil {
				continue
			}
			if contains(msg, pattern) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return fmt.Errorf("no message contains %s", w)
		}
	}
	return nil
}

// contains reports whether got contains want: see transcriptStep.
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !contains(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false
		}
		used := make([]bool, len(g))
		for _, wv := range w {
			found := false
			for i, gv := range g {
				if !used[i] && contains(gv, wv) {
					used[i], found = true, true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case string:
		if w == "$ANY" {
			return got != nil
		}
	}
	return reflect.DeepEqual(got, want)
}
