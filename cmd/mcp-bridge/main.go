// Command mcp-bridge serves a stdio MCP server over Streamable HTTP, one
// child process per MCP session. This file only wires the packages
// together; see README.md for the options.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/demo"
	"github.com/mcp-bridge/mcp-bridge/stdio"
)

func main() {
	// Subcommands come alone, first; any other word before -- is refused
	// (flags.go), so a subcommand is never taken for the server's command.
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Println(versionString())
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "demo-server" {
		if err := demo.Run(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "demo-server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, envMap(environ), stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errVersion):
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	// The JWKS, if any, is refreshed until the bridge exits.
	authCtx, stopAuth := context.WithCancel(context.Background())
	defer stopAuth()
	vars := envMap(environ)
	verifier, err := cfg.verifier(authCtx, func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, log)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
		return 2
	}
	metricsAuth, err := cfg.metricsAuth(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
		return 2
	}
	policy, _ := cfg.toolPolicy() // validated by loadConfig
	var audit io.Writer
	switch cfg.AuditLog {
	case "":
	case "-":
		audit = stdout
	default:
		f, err := os.OpenFile(cfg.AuditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "mcp-bridge: invalid %s: cannot open the file: %v\n", describe("AuditLog"), pathless(err))
			return 2
		}
		defer f.Close()
		audit = f
	}
	if verifier == nil && cfg.ConfigFile == "" && !isLoopback(cfg.Host) { // --config: warned per server
		log.Warn("no authentication on a non-loopback address: anyone who reaches it can start processes; set --token-env or a JWT key")
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
	cont, why, err := stdio.SetContainment(stdio.Containment(cfg.Containment))
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge: --containment / MCP_BRIDGE_CONTAINMENT: %v\n", err)
		return 2
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

	bcfg := bridge.Config{
		Command:        command,
		Mode:           cfg.Mode,
		Prespawn:       cfg.Prespawn,
		MaxChildren:    cfg.MaxChildren,
		SpawnQueue:     cfg.SpawnQueue,
		Dir:            cfg.Dir,
		Env:            stdio.Environ(environ, cfg.hiddenFromChild(), cfg.Env),
		MaxLineBytes:   cfg.MaxMessageBytes,
		StopGrace:      cfg.StopGrace,
		MaxSessions:    cfg.MaxSessions,
		IdleTimeout:    cfg.IdleTimeout,
		RequestTimeout: orOff(cfg.RequestTimeout),
		InitTimeout:    orOff(cfg.InitTimeout),
		QueueLimit:     cfg.QueueLimit,
		EventLogEvents: cfg.EventLogEvents,
		EventLogBytes:  cfg.EventLogBytes,
		Logger:         log,
	}
	if cfg.ConfigFile == "" {
		// Found now, or never: a bridge that listens with a command it
		// cannot start would answer every client with an error.
		if err := commandError(command[0], cfg.Dir, bcfg.Env, "--cwd"); err != nil {
			fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
			return 2
		}
	}
	hopts := httpapi.Options{
		Path:             cfg.Path,
		SSEPath:          cfg.SSEPath,
		MessagePath:      cfg.MessagePath,
		DisableLegacySSE: !cfg.LegacySSE,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		ResponseMode:     cfg.ResponseMode,
		Stateless:        cfg.Stateless,
		ClaimEnv:         cfg.claimEnv(),
		SSEDelay:         cfg.SSEDelay,
		KeepAlive:        cfg.KeepAlive,
		SSEMaxDuration:   cfg.SSEMaxDuration,
		AllowedOrigins:   cfg.AllowOrigins,
		LoopbackOnly:     isLoopback(cfg.Host),
		Web:              cfg.Web,
		Context:          ctx, // its end starts the shutdown: the web page's feed closes then
		Logger:           log,

		Auth:                    verifier,
		PublicURL:               cfg.PublicURL,
		AuthorizationServers:    cfg.authServers(),
		Scopes:                  cfg.RequireScopes,
		MaxSessionsPerPrincipal: cfg.MaxSessionsPerPrincipal,
		MaxInFlightPerPrincipal: cfg.MaxInFlightPerPrincipal,
		RateLimit:               cfg.RateLimit,
		RateBurst:               cfg.RateBurst,
		ToolPolicy:              policy,
		Admins:                  cfg.admins(),
		MetricsAuth:             metricsAuth,
		Audit:                   audit,
		AuditArguments:          cfg.AuditArguments,
	}
	if cfg.ConfigFile != "" {
		// Several servers (servers.go): the flags' settings are each
		// server's defaults; SIGHUP rereads the file.
		set, err := openServers(cfg, environ, bcfg, hopts, log)
		if err != nil {
			fmt.Fprintf(stderr, "mcp-bridge: %v\n", err)
			return 2
		}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go set.reloadOn(ctx, hup)
		return serve(ctx, cfg, log, set, set, httpapi.MountPath("{name}"), "servers", strings.Join(set.Names(), ","))
	}
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
	return serve(ctx, cfg, log, h, b, cfg.Path, "command", strings.Join(command, " "))
}

// served is what serve stops at shutdown: one bridge, or the --config
// servers.
type served interface {
	Drain()
	Close(context.Context) error
}

// serve listens with h, serving path (for the log), until ctx ends, then
// shuts down: the HTTP server and the children of b.
func serve(ctx context.Context, cfg Config, log *slog.Logger, h http.Handler, b served, path string, what ...any) int {
	srv := &httpapi.Server{Addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), Handler: h, ReadTimeout: cfg.ReadTimeout}
	if err := srv.Open(); err != nil {
		log.Error("cannot listen", "err", err)
		_ = b.Close(context.Background())
		return 1
	}
	log.Info("mcp-bridge listening", append([]any{"url", srv.URL() + path}, what...)...)

	<-ctx.Done()
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	// Stop accepting; end the GET streams; give requests in flight until
	// the deadline; then stop every child with the full stop sequence.
	// The HTTP server keeps serving while the children stop: stopping a
	// child answers each request still in flight on it with a JSON-RPC
	// error ("the bridge is shutting down"), and its client should read
	// that rather than a cut connection.
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
	}
	deadline.Stop()
	cctx, cancel := context.WithTimeout(context.Background(), 2*cfg.StopGrace+time.Second)
	defer cancel()
	if err := b.Close(cctx); err != nil {
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

// commandError says, naming the command, why a server's command (argv0,
// run in dir with env) cannot be started, as the spawn would find it
// (stdio.LookPath); nil when it can. cwd names the setting of dir.
func commandError(argv0, dir string, env []string, cwd string) error {
	_, err := stdio.LookPath(argv0, dir, env)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Errorf("command %q not found: no executable of that name in the server's PATH", argv0)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("command %q is not an executable file", argv0)
	case !filepath.IsAbs(argv0) && dir != "":
		return fmt.Errorf("command %q not found: no such file (relative to %s)", argv0, cwd)
	}
	return fmt.Errorf("command %q not found: no such file", argv0)
}

// answerGrace is how long, once every child is stopped at shutdown, the
// HTTP server waits for its handlers to write the errors that answer the
// requests that were still in flight.
const answerGrace = time.Second

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
