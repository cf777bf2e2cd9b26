// Command mcp-bridge-load measures an MCP Streamable HTTP endpoint, normally
// mcp-bridge running `mcp-bridge-load echo-child`, and reports it against two
// floors measured in the same run on the same machine.
//
// A bridge sits between an HTTP client and a stdio child, so no bridge can
// be faster than either half alone. The pipe floor is the child alone: the
// tool spawns the echo child itself and calls it over its stdin and stdout.
// The HTTP floor is HTTP alone: a minimal Streamable HTTP server in this
// binary (run as a subprocess, like the target) that keeps a session table
// and answers the echo tool inline. Absolute numbers depend on the machine;
// the ratios of the target to the floors are what can be compared across
// machines and commits.
//
// For each session count the tool reports, per endpoint: calls per second,
// latency percentiles, errors (any response that is not the exact echo of a
// unique message counts), server CPU per call from /proc/PID/stat (the
// target's process plus its descendants, the floor process, or the echo
// children), the load generator's own CPU per call (on a small machine it
// competes with the target for cores), and RSS from /proc/PID/status. It
// also measures session churn: a whole session (initialize,
// notifications/initialized, one call, DELETE; for the pipe floor spawn,
// initialize, one call, close stdin, wait) per second.
//
// -era picks how the target and the HTTP floor are called. In the 2025
// era (the default) each session is initialized once and its calls carry
// Mcp-Session-Id. In the 2026-07-28 era there is no initialize and no
// session: each call is a POST that stands alone, its protocol version and
// client capabilities in params._meta and its method and tool mirrored in
// the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, and its answer
// must say resultType "complete". -sessions then counts concurrent
// clients, and churn is not measured, having no session to open or close.
// The HTTP floor answers those requests too, checking the same headers
// against the body; the pipe floor is the same in both eras, as a bridge
// hands a 2025 child the same tools/call either way. -era both measures
// one era after the other for each session count, against the same floors.
//
// Usage:
//
//	mcp-bridge-load [flags]       run the benchmark
//	mcp-bridge-load echo-child    serve the echo tool on stdin/stdout
//	mcp-bridge-load http-floor    serve the HTTP floor; print its URL
//
// Example, with a bridge listening on :8080 whose pid is in $PID:
//
//	mcp-bridge -- mcp-bridge-load echo-child &
//	mcp-bridge-load -url http://127.0.0.1:8080/mcp -target-pid $PID -sessions 1,64
//	mcp-bridge-load -url http://127.0.0.1:8080/mcp -target-pid $PID -sessions 1,64 -era both
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := realMain(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// realMain runs the command line args (args[0] is the program) and returns
// the exit code. Tests call it from TestMain so the test binary can stand
// in for this one as the echo child and the HTTP floor.
func realMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		switch args[1] {
		case "echo-child":
			in, out := stdin, stdout
			if fi, ok := stdin.(*os.File); ok {
				if fo, ok := stdout.(*os.File); ok {
					in, out = fastStdio(fi, fo)
				}
			}
			if err := runEchoChild(in, out); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			return 0
		case "http-floor":
			if err := runHTTPFloor(ctx, stdin, stdout); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			return 0
		}
	}
	cfg, err := parseFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge-load: %v\n", err)
		return 2
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "mcp-bridge-load: %v\n", err)
		return 1
	}
	return 0
}

// config is the parsed command line.
type config struct {
	url         string   // "" for floors only, "floor" to target a second HTTP floor
	eras        []string // era2025, eraModern or both, in that order
	sessions    []int
	concurrency int
	duration    time.Duration
	warmup      time.Duration
	churn       time.Duration
	timeout     time.Duration
	accept      string
	child       []string // the pipe floor's child
	tools       []string // the target's tools, one per session in turn
	targetPID   int
	jsonOut     bool
	floors      bool

	self    []string // how to run this binary's subcommands
	cmdline string
	out     io.Writer
	errOut  io.Writer
}

func parseFlags(args []string, stdout, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{out: stdout, errOut: stderr, cmdline: shellQuote(args)}
	var sessions, child, era, tools string
	fs.StringVar(&cfg.url, "url", "", `target MCP endpoint, e.g. http://127.0.0.1:8080/mcp; "floor" targets a second HTTP floor (a self-check: ratios near 1); empty measures the floors only`)
	fs.StringVar(&era, "era", era2025, `how to call the target and the HTTP floor: "2025" (initialize, then calls in a session), "`+eraModern+`" (no initialize, no session: each call stands alone with its _meta and Mcp-* headers; -sessions counts clients, churn is skipped), or "both", one after the other`)
	fs.StringVar(&sessions, "sessions", "1", "sessions to run (in the 2026-07-28 era: concurrent clients), or a comma list like 1,64 to run each")
	fs.IntVar(&cfg.concurrency, "concurrency", 1, "workers per session, each with one call in flight")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured time per endpoint and session count")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before each measurement")
	fs.DurationVar(&cfg.churn, "churn", 5*time.Second, "time per session-churn measurement; 0 skips churn")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "how long calls outstanding at the end of a phase may take before they are cancelled and counted as errors")
	fs.StringVar(&cfg.accept, "accept", "both", `Accept header: "both" (application/json, text/event-stream), "json" or "sse"`)
	fs.StringVar(&tools, "tools", "echo", "the target's echo tools, comma-separated, called by the sessions in turn (session i calls the i-th modulo their number): on mcp-bridge's aggregate endpoint, a__echo,b__echo,c__echo spreads the sessions over three servers")
	fs.StringVar(&child, "child", "", "pipe floor child command, split on spaces (default: this binary's echo-child)")
	fs.IntVar(&cfg.targetPID, "target-pid", 0, "pid of the target, to read its CPU time and RSS from /proc (default: not measured)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print results as JSON")
	fs.BoolVar(&cfg.floors, "floors", true, "also measure the HTTP and pipe floors")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n       %[1]s echo-child\n       %[1]s http-floor\n\nflags:\n", fs.Name())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	switch era {
	case era2025, eraModern:
		cfg.eras = []string{era}
	case "both":
		cfg.eras = []string{era2025, eraModern}
	default:
		return nil, fmt.Errorf("-era %q: want 2025, %s or both", era, eraModern)
	}
	for name := range strings.SplitSeq(tools, ",") {
		if name = strings.TrimSpace(name); name == "" || strings.ContainsAny(name, `"\\`) {
			return nil, fmt.Errorf("-tools %q: want tool names separated by commas", tools)
		}
		cfg.tools = append(cfg.tools, name)
	}
	for s := range strings.SplitSeq(sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sessions %q: want positive integers separated by commas", sessions)
		}
		cfg.sessions = append(cfg.sessions, n)
	}
	switch {
	case cfg.concurrency < 1:
		return nil, errors.New("-concurrency must be at least 1")
	case cfg.duration <= 0:
		return nil, errors.New("-duration must be positive")
	case cfg.warmup < 0 || cfg.churn < 0 || cfg.timeout <= 0:
		return nil, errors.New("-warmup and -churn must not be negative, -timeout must be positive")
	case cfg.url == "" && !cfg.floors:
		return nil, errors.New("nothing to measure: give -url or leave -floors on")
	}
	if _, ok := acceptValues[cfg.accept]; !ok {
		return nil, fmt.Errorf("-accept %q: want both, json or sse", cfg.accept)
	}
	if cfg.targetPID != 0 {
		if _, err := readCPU(cfg.targetPID); err != nil {
			return nil, fmt.Errorf("-target-pid: %w", err)
		}
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cfg.self = []string{exe}
	cfg.child = strings.Fields(child)
	if len(cfg.child) == 0 {
		cfg.child = []string{exe, "echo-child"}
	}
	return cfg, nil
}

// ---- orchestration ----

// endpoint is what load runs against: the target, the HTTP floor or the
// pipe floor.
type endpoint interface {
	// open starts n sessions with conc callers each.
	open(ctx context.Context, n, conc int) (*sessionSet, error)
}

// churnEndpoint is an endpoint with sessions to open and close: all but
// the modern era's.
type churnEndpoint interface {
	endpoint
	// churner returns a caller whose every call is a whole session.
	churner() caller
}

// sessionSet is the open sessions of one measurement.
type sessionSet struct {
	callers []caller
	// pids are processes serving the sessions that the load tool started
	// itself (the pipe floor's children).
	pids  []int
	close func() error
	// abort, if set, unblocks callers a context cannot: see runPhase.
	abort func()
}

// firstOf summarises the errors of opening sessions in parallel: they are
// usually n copies of one cause, so the first and a count say it all.
func firstOf(errs []error) error {
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%d of %d sessions failed, first: %w", failed, len(errs), first)
}

// subject is an endpoint with what the tool knows about its processes.
type subject struct {
	name string
	ep   endpoint
	pid  int // the serving process, 0 if unknown
	// reapedByTool is set when the serving processes are the load tool's
	// own children, so their CPU after exit shows up in the tool's cutime.
	reapedByTool bool
}

// row is one endpoint's numbers for one measurement.
type row struct {
	Mode    string  `json:"mode"`
	Calls   uint64  `json:"calls"`
	Errors  uint64  `json:"errors"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	P50US   float64 `json:"p50_us"`
	P90US   float64 `json:"p90_us"`
	P99US   float64 `json:"p99_us"`
	MaxUS   float64 `json:"max_us"`
	// CPUPerCallUS is all server-side CPU per call: the serving process
	// and its children. ChildCPUPerCallUS is the children's share.
	CPUPerCallUS      *float64 `json:"cpu_per_call_us,omitempty"`
	ChildCPUPerCallUS *float64 `json:"child_cpu_per_call_us,omitempty"`
	// GenCPUPerCallUS is the load generator's own CPU per call.
	GenCPUPerCallUS float64 `json:"gen_cpu_per_call_us"`
	// RSS in bytes, 0 if unknown: the serving process before the run and
	// at its peak during it, and the peak sum over its children.
	RSSIdle      int64  `json:"rss_idle_bytes,omitempty"`
	RSSPeak      int64  `json:"rss_peak_bytes,omitempty"`
	ChildRSSPeak int64  `json:"child_rss_peak_bytes,omitempty"`
	FirstError   string `json:"first_error,omitempty"`
}

// ratio compares the target with one floor; each value is target/floor.
type ratio struct {
	Floor string `json:"floor"`
	// FloorPerSec is the composite floor's own rate, which has no row.
	FloorPerSec float64  `json:"floor_per_sec,omitempty"`
	PerSec      float64  `json:"per_sec"`
	P50         float64  `json:"p50"`
	P99         float64  `json:"p99"`
	CPUPerCall  *float64 `json:"cpu_per_call,omitempty"`
}

// sessionResult is every measurement for one session count in one era.
type sessionResult struct {
	Era string `json:"era"`
	// Sessions is the session count; in the 2026-07-28 era, which has no
	// sessions, the number of concurrent clients.
	Sessions    int     `json:"sessions"`
	Concurrency int     `json:"concurrency"`
	Load        []row   `json:"load"`
	LoadRatios  []ratio `json:"load_ratios,omitempty"`
	Churn       []row   `json:"churn,omitempty"`
	ChurnRatios []ratio `json:"churn_ratios,omitempty"`
	// ChurnSkipped says why churn was not measured although asked for.
	ChurnSkipped string `json:"churn_skipped,omitempty"`
}

// report is the whole run, as printed by -json.
type report struct {
	Command    string          `json:"command"`
	GoVersion  string          `json:"go_version"`
	NumCPU     int             `json:"num_cpu"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Accept     string          `json:"accept"`
	Eras       []string        `json:"eras"`
	Duration   string          `json:"duration"`
	Warmup     string          `json:"warmup"`
	Churn      string          `json:"churn"`
	Results    []sessionResult `json:"results"`
}

func run(ctx context.Context, cfg *config) (err error) {
	conns := 0
	for _, n := range cfg.sessions {
		conns = max(conns, n*cfg.concurrency)
	}
	subjects := map[string][]subject{} // by era
	stderr := childStderr(cfg.errOut)

	// Every process started here is stopped on return, on success, error
	// and Ctrl-C alike (the signal cancels ctx, which ends the runs).
	var stops []func() error
	defer func() {
		for _, stop := range slices.Backward(stops) {
			err = errors.Join(err, stop())
		}
	}()
	if cfg.url != "" {
		s := subject{name: "target", pid: cfg.targetPID}
		url := cfg.url
		if url == "floor" {
			fp, err := startFloorProcess(cfg.self, stderr)
			if err != nil {
				return fmt.Errorf("target: %w", err)
			}
			stops = append(stops, fp.stop)
			url, s.pid = fp.url, fp.pid()
		}
		t, err := newHTTPTarget(url, cfg.accept, conns)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		if len(cfg.tools) > 0 {
			t.tools = cfg.tools
		}
		defer t.close()
		for _, era := range cfg.eras {
			s.ep = httpEndpointFor(t, era)
			subjects[era] = append(subjects[era], s)
		}
	}
	if cfg.floors {
		fp, err := startFloorProcess(cfg.self, stderr)
		if err != nil {
			return err
		}
		stops = append(stops, fp.stop)
		t, err := newHTTPTarget(fp.url, cfg.accept, conns)
		if err != nil {
			return fmt.Errorf("http floor: %w", err)
		}
		defer t.close()
		pipe := subject{name: "pipe-floor", ep: &pipeEndpoint{argv: cfg.child, stderr: stderr}, reapedByTool: true}
		for _, era := range cfg.eras {
			subjects[era] = append(subjects[era],
				subject{name: "http-floor", ep: httpEndpointFor(t, era), pid: fp.pid()}, pipe)
		}
	}

	rep := report{
		Command:    cfg.cmdline,
		GoVersion:  runtime.Version(),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Accept:     acceptValues[cfg.accept],
		Eras:       cfg.eras,
		Duration:   cfg.duration.String(),
		Warmup:     cfg.warmup.String(),
		Churn:      cfg.churn.String(),
	}
	if !cfg.jsonOut {
		printHeader(cfg.out, &rep)
	}
	for _, n := range cfg.sessions {
		// The pipe floor's work is the same in every era: measured once
		// per session count, its row is each era's.
		var pipe *row
		for _, era := range cfg.eras {
			res := sessionResult{Era: era, Sessions: n, Concurrency: cfg.concurrency}
			for _, s := range subjects[era] {
				if s.name == "pipe-floor" && pipe != nil {
					res.Load = append(res.Load, *pipe)
					continue
				}
				r := measureLoad(ctx, cfg, s, n)
				if s.name == "pipe-floor" {
					pipe = &r
				}
				res.Load = append(res.Load, r)
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("interrupted: %w", err)
				}
			}
			switch {
			case cfg.churn == 0:
			case era == eraModern:
				res.ChurnSkipped = "a " + eraModern + " client opens no session, so there is none to churn"
			default:
				for _, s := range subjects[era] {
					res.Churn = append(res.Churn, measureChurn(ctx, cfg, s, n))
					if err := ctx.Err(); err != nil {
						return fmt.Errorf("interrupted: %w", err)
					}
				}
			}
			res.LoadRatios = ratios(res.Load)
			res.ChurnRatios = ratios(res.Churn)
			rep.Results = append(rep.Results, res)
			if !cfg.jsonOut {
				printResult(cfg.out, &res)
			}
		}
	}
	if cfg.jsonOut {
		enc := json.NewEncoder(cfg.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&rep); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// httpEndpointFor is t called in era.
func httpEndpointFor(t *httpTarget, era string) endpoint {
	if era == eraModern {
		return &modernEndpoint{t: t}
	}
	return &httpEndpoint{t: t}
}

// openTimeout bounds opening all sessions of a measurement, so a target or
// child that never answers initialize cannot hang the run. Generous: 64
// sessions may mean 64 child processes starting on two cores.
const openTimeout = 30 * time.Second

// measureLoad opens n sessions on s, warms them up, and measures calls for
// cfg.duration.
func measureLoad(ctx context.Context, cfg *config, s subject, n int) (r row) {
	r.Mode = s.name
	var mainPIDs []int
	if s.pid > 0 {
		mainPIDs = []int{s.pid}
		r.RSSIdle = rssSum(mainPIDs)
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	set, err := s.ep.open(octx, n, cfg.concurrency)
	cancel()
	if err != nil {
		r.FirstError = fmt.Sprintf("open: %v", err)
		return r
	}
	defer func() {
		if err := set.close(); err != nil && r.FirstError == "" {
			r.FirstError = fmt.Sprintf("close sessions: %v", err)
		}
	}()
	if cfg.warmup > 0 {
		runPhase(ctx, set.callers, cfg.warmup, cfg.timeout, set.abort)
	}
	children := set.pids
	if s.pid > 0 {
		// Found after open, so children a target spawns per session are
		// in; the error only means /proc is unreadable, leaving no children.
		d, _ := descendants(s.pid)
		children = append(children, d...)
	}
	m := startMeter(mainPIDs, children)
	res := runPhase(ctx, set.callers, cfg.duration, cfg.timeout, set.abort)
	m.stop(&r, s, res)
	return r
}

// measureChurn runs n workers that each open and close sessions back to
// back for cfg.churn.
func measureChurn(ctx context.Context, cfg *config, s subject, n int) (r row) {
	r.Mode = s.name
	var mainPIDs, children []int
	if s.pid > 0 {
		mainPIDs = []int{s.pid}
		r.RSSIdle = rssSum(mainPIDs)
		children, _ = descendants(s.pid) // as in measureLoad
	}
	ce, ok := s.ep.(churnEndpoint)
	if !ok {
		r.FirstError = "churn: no sessions to open and close"
		return r
	}
	callers := make([]caller, n)
	for i := range callers {
		callers[i] = ce.churner()
	}
	m := startMeter(mainPIDs, children)
	res := runPhase(ctx, callers, cfg.churn, cfg.timeout, nil)
	m.stop(&r, s, res)
	return r
}

// meter reads CPU and RSS around one phase.
type meter struct {
	mainPIDs, children  []int
	main0, child0, gen0 []cpuSample
	rss                 *rssWatch
}

func startMeter(mainPIDs, children []int) *meter {
	return &meter{
		mainPIDs: mainPIDs,
		children: children,
		main0:    readCPUs(mainPIDs),
		child0:   readCPUs(children),
		gen0:     readCPUs([]int{os.Getpid()}),
		rss:      watchRSS(mainPIDs, children),
	}
}

// stop ends the measurement and fills r from it and the phase result.
func (m *meter) stop(r *row, s subject, res phaseResult) {
	r.RSSPeak, r.ChildRSSPeak = m.rss.stop()
	mainD := cpuDelta(m.main0, readCPUs(m.mainPIDs))
	childD := cpuDelta(m.child0, readCPUs(m.children))
	genD := cpuDelta(m.gen0, readCPUs([]int{os.Getpid()}))

	r.Calls, r.Errors = res.calls, res.errors
	r.Seconds = res.elapsed.Seconds()
	if r.Seconds > 0 {
		r.PerSec = float64(res.calls) / r.Seconds
	}
	r.P50US = us(res.hist.quantile(0.50))
	r.P90US = us(res.hist.quantile(0.90))
	r.P99US = us(res.hist.quantile(0.99))
	r.MaxUS = us(res.hist.max)
	if res.firstErr != nil && r.FirstError == "" {
		r.FirstError = res.firstErr.Error()
	}
	if res.calls == 0 {
		return
	}
	perCall := func(d time.Duration) *float64 {
		v := us(d) / float64(res.calls)
		return &v
	}
	r.GenCPUPerCallUS = *perCall(genD.self)
	if len(m.mainPIDs)+len(m.children) == 0 && !s.reapedByTool {
		return // nothing known about the server side
	}
	// Children reaped during the phase land in their parent's cutime:
	// the target's for children it spawns per session, the load tool's
	// for the pipe floor's churn.
	child := childD.self + mainD.reaped
	if s.reapedByTool {
		child += genD.reaped
	}
	r.CPUPerCallUS = perCall(mainD.self + child)
	if len(m.children) > 0 || mainD.reaped > 0 || s.reapedByTool {
		r.ChildCPUPerCallUS = perCall(child)
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ratios compares the target row, if any, with each floor row, and with
// the composite floor when both floors were measured.
func ratios(rows []row) []ratio {
	if len(rows) == 0 || rows[0].Mode != "target" {
		return nil
	}
	t := rows[0]
	var out []ratio
	for _, f := range rows[1:] {
		r := ratio{
			Floor:  f.Mode,
			PerSec: div(t.PerSec, f.PerSec),
			P50:    div(t.P50US, f.P50US),
			P99:    div(t.P99US, f.P99US),
		}
		if t.CPUPerCallUS != nil && f.CPUPerCallUS != nil {
			v := div(*t.CPUPerCallUS, *f.CPUPerCallUS)
			r.CPUPerCall = &v
		}
		out = append(out, r)
	}
	if c, ok := composite(rows[1:]); ok {
		out = append(out, ratio{
			Floor:       c.Mode,
			FloorPerSec: c.PerSec,
			PerSec:      div(t.PerSec, c.PerSec),
			P50:         div(t.P50US, c.P50US),
		})
	}
	return out
}

// composite is the floor of a bridge that cost nothing itself: every call
// crosses HTTP and then the pipe, one after the other, so their times add
// up. Its rate is 1/(1/http + 1/pipe) and its median latency the sum of
// the two medians (an estimate: medians do not add exactly). The tail has
// no such formula, so the composite has no p99.
func composite(floors []row) (row, bool) {
	var h, p *row
	for i := range floors {
		switch floors[i].Mode {
		case "http-floor":
			h = &floors[i]
		case "pipe-floor":
			p = &floors[i]
		}
	}
	if h == nil || p == nil || h.PerSec == 0 || p.PerSec == 0 {
		return row{}, false
	}
	return row{Mode: "composite", PerSec: 1 / (1/h.PerSec + 1/p.PerSec), P50US: h.P50US + p.P50US}, true
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ---- output ----

func printHeader(w io.Writer, rep *report) {
	fmt.Fprintf(w, "# %s\n", rep.Command)
	fmt.Fprintf(w, "# %s, %d CPUs, GOMAXPROCS=%d, accept=%q, duration=%s warmup=%s churn=%s era=%s\n",
		rep.GoVersion, rep.NumCPU, rep.GOMAXPROCS, rep.Accept, rep.Duration, rep.Warmup, rep.Churn, strings.Join(rep.Eras, ","))
	fmt.Fprintln(w, "# cpu/call: server processes (child: the part in child processes); gen: this tool")
}

func printResult(w io.Writer, res *sessionResult) {
	if res.Era == eraModern {
		fmt.Fprintf(w, "\nera=%s clients=%d concurrency=%d (no sessions: each call stands alone)\n", res.Era, res.Sessions, res.Concurrency)
	} else {
		fmt.Fprintf(w, "\nera=%s sessions=%d concurrency=%d\n", res.Era, res.Sessions, res.Concurrency)
	}
	printRows(w, "calls/s", res.Load, res.LoadRatios)
	if len(res.Churn) > 0 {
		fmt.Fprintln(w)
		printRows(w, "sess/s", res.Churn, res.ChurnRatios)
	}
	if res.ChurnSkipped != "" {
		fmt.Fprintf(w, "  churn not measured: %s\n", res.ChurnSkipped)
	}
}

func printRows(w io.Writer, rate string, rows []row, rs []ratio) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	kind := "load"
	if rate == "sess/s" {
		kind = "churn"
	}
	fmt.Fprintf(tw, "%s\t%s\tp50\tp90\tp99\terrors\tcpu/call\t(child)\tgen/call\trss idle\trss peak\t(child)\t\n", kind, rate)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Mode, r.PerSec, fmtUS(r.P50US), fmtUS(r.P90US), fmtUS(r.P99US), r.Errors,
			fmtUSPtr(r.CPUPerCallUS), fmtUSPtr(r.ChildCPUPerCallUS), fmtUS(r.GenCPUPerCallUS),
			fmtBytes(r.RSSIdle), fmtBytes(r.RSSPeak), fmtBytes(r.ChildRSSPeak))
	}
	for _, r := range rs {
		cpu := "-"
		if r.CPUPerCall != nil {
			cpu = fmt.Sprintf("%.2fx", *r.CPUPerCall)
		}
		p99 := "-"
		if r.P99 != 0 {
			p99 = fmt.Sprintf("%.2fx", r.P99)
		}
		fmt.Fprintf(tw, "target/%s\t%.2fx\t%.2fx\t\t%s\t\t%s\t\t\t\t\t\t\n", r.Floor, r.PerSec, r.P50, p99, cpu)
	}
	_ = tw.Flush() // errors surface on the underlying writer's next use, if ever
	for _, r := range rs {
		if r.FloorPerSec != 0 {
			// The composite floor has no row of its own: say what it is.
			fmt.Fprintf(w, "  composite floor (1/(1/http-floor + 1/pipe-floor)): %.0f %s\n", r.FloorPerSec, rate)
		}
	}
	for _, r := range rows {
		msg := strings.ReplaceAll(r.FirstError, "\n", "; ") // joined errors
		switch {
		case r.FirstError == "":
		case r.Errors == 0:
			fmt.Fprintf(w, "  %s %s: %s\n", r.Mode, kind, msg)
		default:
			fmt.Fprintf(w, "  %s %s: %d errors, first: %s\n", r.Mode, kind, r.Errors, msg)
		}
	}
}

func fmtUS(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 1000:
		return fmt.Sprintf("%.1fµs", v)
	case v < 1e6:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.2fs", v/1e6)
}

func fmtUSPtr(v *float64) string {
	switch {
	case v == nil:
		return "-"
	case *v == 0:
		return "0" // measured, but under the 10ms tick of /proc
	}
	return fmtUS(*v)
}

func fmtBytes(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
}

// shellQuote renders args as a command line a POSIX shell reads back as
// the same words, so the header line can be pasted to reproduce a run.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:@+%") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
