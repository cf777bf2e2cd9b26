// Command mcp-bridge serves a stdio MCP server over Streamable HTTP, one
// child process per MCP session. It only wires the packages together:
// the settings (internal/config) into a bridge, its HTTP handler and a
// server, then the shutdown. See README.md, and docs/options.md for the options.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/internal/demo"
	"github.com/mcp-bridge/mcp-bridge/internal/registry"
	"github.com/mcp-bridge/mcp-bridge/internal/syncio"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

func main() {
	// Subcommands come alone, first; any other word before -- is refused
	// (internal/config), so a subcommand is never taken for the server's command.
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(versionString())
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "help" {
		config.PrintUsage(os.Stdout)
		return
	}
	// The demo servers ignore what follows their name.
	if len(os.Args) > 1 && (os.Args[1] == "demo-server" || os.Args[1] == "conformance-server") {
		srv := demo.NewServer()
		if os.Args[1] == "conformance-server" {
			srv = demo.NewConformanceServer()
		}
		if err := demo.Run(context.Background(), srv); err != nil {
			fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "pin" {
		os.Exit(runPin(os.Args[2:], os.Environ(), os.Stdout, os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "sandbox" && os.Args[2] == "check" {
		os.Exit(runSandboxCheck(os.Args[3:], os.Environ(), os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "servers" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := serversCommand(ctx, os.Args[2:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	ctx, force, stop := shutdownSignals()
	code := run(ctx, force, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// shutdownSignals: the first SIGINT or SIGTERM ends ctx, which starts the
// graceful shutdown; the second ends force, which stops at once (every
// server process killed, its requests answered, nothing left behind), as
// a second Ctrl-C does in the servers people know. stop ends the
// signal watcher.
func shutdownSignals() (ctx, force context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	force, cancelForce := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends with the second signal, or stop
		for _, end := range []context.CancelFunc{cancel, cancelForce} {
			select {
			case <-sigs:
				end()
			case <-done:
				return
			}
		}
	}()
	return ctx, force, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		cancelForce()
	}
}

// run is the bridge's life: its settings, then the packages wired
// together, served, and shut down when ctx ends (at once when force ends
// too). It returns the exit
// status: 2 for settings the bridge cannot start with, 1 when it cannot
// run. --help, asked for, is output: it goes to stdout.
func run(ctx, force context.Context, args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, environ, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, config.ErrVersion):
		fmt.Fprintln(stdout, versionString())
		return 0
	case err != nil:
		return refuse(stderr, err)
	}
	log := cfg.Logger(stderr)
	// The JWKS, if any, is refreshed until the bridge exits.
	authCtx, stopAuth := context.WithCancel(context.Background())
	defer stopAuth()
	hopts, closeAudit, err := endpoint(authCtx, &cfg, environ, stdout, log)
	if err != nil {
		return refuse(stderr, err)
	}
	defer closeAudit()
	hopts.Context = ctx // its end starts the shutdown: the web page's feed closes then
	// At shutdown every call still waiting for a human is denied, and the
	// operators' streams end.
	defer context.AfterFunc(ctx, hopts.Approvals.Close)()
	defer hopts.Approvals.Close()

	cont, why, err := cfg.Contain()
	if err != nil {
		return refuse(stderr, err)
	}
	log.Info("process containment", "strategy", cont, "why", why)
	// Orphans of children are re-parented to the bridge and reaped here,
	// not left as zombies where PID 1 does not reap. The reaper outlives
	// ctx: most orphans die while the children are stopped at shutdown.
	reapCtx, stopReaping := context.WithCancel(context.Background())
	defer stopReaping()
	if err := stdio.EnableSubreaper(reapCtx, log); err != nil {
		log.Warn("cannot reap orphaned grandchildren", "err", err)
	}
	if cfg.ConfigFile != "" {
		return serveServers(ctx, force, &cfg, environ, hopts, log, stderr)
	}
	return serveCommand(ctx, force, &cfg, environ, hopts, log, stderr)
}

// endpoint is the HTTP settings with what they name read and opened: the
// authentication, the metrics token, the audit log (closed by the
// function returned).
func endpoint(authCtx context.Context, cfg *config.Config, environ []string, stdout io.Writer, log *slog.Logger) (httpapi.Options, func() error, error) {
	hopts, err := cfg.HTTP()
	if err != nil {
		return hopts, nil, err
	}
	if hopts.Auth, err = cfg.Verifier(authCtx, environ, log); err != nil {
		return hopts, nil, err
	}
	if hopts.MetricsAuth, err = cfg.MetricsAuth(environ); err != nil {
		return hopts, nil, err
	}
	audit, closeAudit, err := cfg.OpenAuditLog(stdout)
	if err != nil {
		return hopts, nil, err
	}
	if audit != nil {
		// The endpoints' lines, and the sandbox's refusals (sandbox.go).
		audit = syncio.NewWriter(audit)
	}
	hopts.Audit, hopts.Logger = audit, log
	aopts, err := cfg.Approvals()
	if err != nil {
		return hopts, nil, err
	}
	aopts.Logger = log
	if audit != nil {
		aopts.Observe = httpapi.ApprovalAudit(audit, nil)
	}
	if aopts.FailOpen {
		log.Warn("--approval-fail-open: a call that needs approval runs without one when nobody can be asked (its client cannot be asked, and no --approver is set)")
	}
	hopts.Approvals = approval.New(aopts)
	return hopts, closeAudit, nil
}

// serveCommand serves one MCP server, the command's (or the demo's).
func serveCommand(ctx, force context.Context, cfg *config.Config, environ []string, hopts httpapi.Options, log *slog.Logger, stderr io.Writer) int {
	if hopts.Auth == nil && !cfg.Loopback() {
		log.Warn("no authentication on a non-loopback address: anyone who reaches it can start processes; set --token-env or a JWT key")
	}
	if hopts.Auth != nil && hopts.MetricsAuth == nil && !hopts.MetricsPublic {
		log.Warn(httpapi.MetricsClosed)
	}
	command := []string(cfg.Command)
	if len(command) == 0 {
		self, err := os.Executable()
		if err != nil {
			log.Error("cannot find this executable to run the demo server", "err", err)
			return 1
		}
		command = []string{self, "demo-server"}
	}
	bcfg := cfg.Bridge(command, environ)
	bcfg.Logger = log
	// Found now, or never: a bridge that listens with a command it cannot
	// start would answer every client with an error.
	if err := config.CommandError(command[0], bcfg.Dir, bcfg.Env, "--cwd"); err != nil {
		return refuse(stderr, err)
	}
	// The same for a sandbox this system cannot enforce (under required).
	sb, err := cfg.SandboxFor("default", bcfg.Dir, nil, "", environ)
	if err != nil {
		return refuse(stderr, err)
	}
	if sb != nil {
		logSandboxSystem(log)
	}
	if err := checkSandbox(sb, "default", command, bcfg.Dir, bcfg.Env, hopts.Audit, log); err != nil {
		return refuse(stderr, err)
	}
	bcfg.Sandbox = sb
	b, err := bridge.New(bcfg)
	if err != nil {
		log.Error("bridge", "err", err)
		return 1
	}
	hopts.Bridge = b
	h, err := httpapi.Handler(hopts)
	if err != nil {
		log.Error("http", "err", err)
		return 1
	}
	// Arguments may carry secrets (--api-key=...): the log shows them as
	// the web page does, masked.
	shown := strings.Join(bridge.RedactArgv(command), " ")
	return serve(ctx, force, cfg.Serving(), log, h, b, func(base string) {
		log.Info("mcp-bridge listening", "url", base+hopts.Path, "command", shown)
		for _, e := range hopts.Endpoints() {
			log.Info("also serving "+e.Name, "url", base+e.Path)
		}
	})
}

// serveServers serves the servers of the --config file (internal/registry,
// servers.go): the flags' settings are each server's defaults; SIGHUP
// rereads the file, and the registry API changes it.
func serveServers(ctx, force context.Context, cfg *config.Config, environ []string, hopts httpapi.Options, log *slog.Logger, stderr io.Writer) int {
	bcfg := cfg.Bridge(nil, environ) // each server has its own command
	bcfg.Logger = log
	writers, err := cfg.RegistryWriters()
	if err != nil {
		return refuse(stderr, err)
	}
	var probed sync.Once
	refuses := func(sp config.ServerSpec, audit io.Writer) (string, string) {
		if sp.Sandbox == nil {
			return "", ""
		}
		probed.Do(func() { logSandboxSystem(log) })
		// A sandbox this system cannot enforce (under required) refuses
		// the server as a missing command does.
		if err := checkSandbox(sp.Sandbox, sp.Name, sp.Command, sp.Dir, sp.Env, audit, log); err != nil {
			return "sandbox", err.Error()
		}
		return "", ""
	}
	reg, err := registry.Open(registry.Options{Config: *cfg, Environ: environ, Bridge: bcfg, HTTP: hopts, Writers: writers, Logger: log, Refuses: refuses})
	if err != nil {
		return refuse(stderr, err)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serve(ctx, force, cfg.Serving(), log, reg, reg, func(base string) {
		log.Info("mcp-bridge listening", "addr", strings.TrimPrefix(base, "http://"), "servers", strings.Join(reg.Names(), ","))
		reg.Listening(base)
		if hopts.Web {
			log.Info("also serving web page", "url", base+"/")
		}
		log.Info("also serving metrics (Prometheus), every server's", "url", base+"/metrics")
		if len(writers) > 0 {
			log.Info("also serving the registry API (--registry-admin)", "url", base+httpapi.RegistryPath)
		}
		if hopts.Auth != nil && hopts.Approvals.Operators() {
			log.Info("also serving the approvals API (--approver)", "url", base+httpapi.ApprovalsPath)
		}
		// From now on a reload logs the URLs of the servers it starts.
		go reloadOn(ctx, reg, hup, cfg.ConfigFile, log)
	})
}

// refuse reports a configuration the bridge cannot start with: exit
// status 2.
func refuse(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
	return 2
}

// served is what serve stops at shutdown: one bridge, or the --config
// servers.
type served interface {
	Drain()
	Close(context.Context) error
	Busy() bridge.Busy
}

// serve listens with h as cfg says until ctx ends, then shuts down: the
// HTTP server and the children of b, at once if force ends. Once it
// listens, announce logs what is served, as full URLs under base
// (http://127.0.0.1:8080), each of which answers.
func serve(ctx, force context.Context, cfg config.Serving, log *slog.Logger, h http.Handler, b served, announce func(base string)) int {
	srv := &httpapi.Server{Addr: cfg.Addr, Handler: h, ReadTimeout: cfg.ReadTimeout}
	if err := srv.Open(); err != nil {
		log.Error("cannot listen", "err", err, "hint", config.ListenHint(err))
		_ = b.Close(context.Background())
		return 1
	}
	announce(srv.URL())

	<-ctx.Done()
	// Whoever pressed Ctrl-C is told what the bridge waits for, and how
	// not to.
	if busy := b.Busy(); busy.Requests > 0 {
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout, "waiting_for", requestsInFlight(busy),
			"hint", "signal again (Ctrl-C) to stop at once")
	} else {
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	}
	// Stop accepting; end the GET streams; give requests in flight until
	// the deadline; then stop every child with the full stop sequence.
	// The HTTP server keeps serving while the children stop: stopping a
	// child answers each request still in flight on it with a JSON-RPC
	// error ("the bridge is shutting down"), and its client should read
	// that rather than a cut connection. A second signal skips the wait
	// and the stop sequence: the children are killed, and their requests
	// answered the same way.
	forced := context.AfterFunc(force, func() { log.Warn("second signal: stopping at once; the servers are killed") })
	defer forced()
	b.Drain()
	httpCtx, cutHTTP := context.WithCancel(context.Background())
	defer cutHTTP()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(httpCtx) }()
	deadline := time.NewTimer(cfg.ShutdownTimeout)
	var httpErr error
	httpOpen := true
	select {
	case httpErr = <-httpDone:
		httpOpen = false
	case <-deadline.C:
		if busy := b.Busy(); busy.Requests > 0 {
			log.Info("--shutdown-timeout passed; stopping the servers, which answers what is in flight", "in_flight", requestsInFlight(busy))
		}
	case <-force.Done():
	}
	deadline.Stop()
	cctx, cancel := context.WithTimeout(force, cfg.StopTimeout())
	defer cancel()
	if err := b.Close(cctx); err != nil && force.Err() == nil {
		log.Warn("some children had to be killed", "err", err)
	}
	// Their groups are killed; what is left of them must be reaped before
	// the bridge exits, or it becomes a zombie of PID 1.
	rctx, cancel3 := context.WithTimeout(context.Background(), cfg.StopGrace)
	defer cancel3()
	if err := stdio.ReapOrphans(rctx); err != nil {
		log.Warn("orphaned descendants outlive the bridge", "err", err)
	}
	if httpOpen {
		// Every request has its answer now; a handler still busy after
		// answerGrace is writing to a client that does not read.
		cut := time.AfterFunc(answerGrace, cutHTTP)
		httpErr = <-httpDone
		cut.Stop()
	}
	if httpErr != nil {
		log.Warn("requests still in flight after the children stopped were cut", "err", httpErr)
	}
	log.Info("stopped")
	return 0
}

// requestsInFlight says busy for a person: "2 requests (tools/call×2)".
func requestsInFlight(busy bridge.Busy) string {
	n := strconv.Itoa(busy.Requests) + " requests"
	if busy.Requests == 1 {
		n = "1 request"
	}
	return n + " (" + busy.String() + ")"
}

// answerGrace is how long, once every child is stopped at shutdown, the
// HTTP server waits for its handlers to write the errors that answer the
// requests that were still in flight.
const answerGrace = time.Second
