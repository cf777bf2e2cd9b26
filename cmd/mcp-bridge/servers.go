package main

// --config: the servers of the file (internal/config reads, checks and
// resolves it) served by httpapi.Mounts, and swapped on SIGHUP.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/internal/syncio"
)

// serverSet is the servers of the --config file as served: the file is
// read at start and on reload, and httpapi.Mounts serves what it says.
type serverSet struct {
	*httpapi.Mounts
	file    string
	cfg     config.Config
	environ []string
	bridge  bridge.Config   // the flags' settings, which each server's start from
	http    httpapi.Options // the same
	log     *slog.Logger

	served map[string]httpapi.MountSpec // what the last load applied, by name; owned by load
	base   string                       // the listener's URL once it listens (announce); owned by load after
}

// openServers reads the file and starts serving its servers. bc and ho
// are the settings the flags give every server; the file's servers change
// their command and what it lists.
func openServers(cfg config.Config, environ []string, bc bridge.Config, ho httpapi.Options, log *slog.Logger) (*serverSet, error) {
	if ho.Audit != nil {
		// Every server's endpoint writes to it.
		ho.Audit = syncio.NewWriter(ho.Audit)
	}
	s := &serverSet{
		Mounts: httpapi.NewMounts(cfg.MountsOptions(ho, log)),
		file:   cfg.ConfigFile, cfg: cfg, environ: environ, bridge: bc, http: ho, log: log,
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// announce logs the URLs the servers names are served at, under base,
// and remembers base for the reloads to come. Called once the listener
// is open, before reloadOn starts: load owns base from then on.
func (s *serverSet) announce(base string, names []string) {
	s.base = base
	for _, name := range names {
		for _, e := range s.Endpoints(name) {
			s.log.Info("serving "+e.Name, "server", name, "url", base+e.Path)
		}
	}
}

// reloadOn rereads the file on every signal until ctx ends. A file that
// cannot be read or is invalid changes nothing.
func (s *serverSet) reloadOn(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			s.log.Info("reloading the servers", "config", s.file)
			if err := s.load(); err != nil {
				s.log.Error("reload failed; the servers stay as they were", "err", err)
			}
		}
	}
}

// load reads the file and makes its servers the served ones.
func (s *serverSet) load() error {
	specs, err := s.cfg.LoadServers(s.environ)
	if err != nil {
		return err
	}
	mounts, refused, err := s.mounts(specs)
	if err != nil {
		return err
	}
	if s.served == nil && len(refused) > 0 && len(refused) == len(specs) {
		// At start, a file none of whose servers can start is a mistake
		// to report, not a bridge to run serving nothing.
		errs := []error{fmt.Errorf("%s: no server can start", s.file)}
		for _, r := range refused {
			errs = append(errs, fmt.Errorf("%s: server %q: %w", s.file, r.name, r.err))
		}
		return errors.Join(errs...)
	}
	ch, err := s.Apply(mounts)
	if err != nil {
		return err
	}
	s.served = make(map[string]httpapi.MountSpec, len(mounts))
	for _, ms := range mounts {
		s.served[ms.Name] = ms
	}
	s.logLoad(mounts, refused, ch)
	return nil
}

// logLoad tells what a load did: the servers refused, what changed, and
// the servers newly served without authentication where anyone may reach
// them.
func (s *serverSet) logLoad(mounts []httpapi.MountSpec, refused []refusedServer, ch httpapi.Changes) {
	var refusedNames []string
	for _, r := range refused {
		refusedNames = append(refusedNames, r.name)
		if r.kept {
			s.log.Error("server refused; it keeps its current settings", "server", r.name, "err", r.err)
		} else {
			s.log.Error("server refused; it is not served", "server", r.name, "err", r.err)
		}
	}
	s.log.Info("servers loaded", "config", s.file,
		"added", strings.Join(ch.Added, ","), "removed", strings.Join(ch.Removed, ","),
		"restarted", strings.Join(ch.Restarted, ","), "unchanged", strings.Join(ch.Unchanged, ","),
		"refused", strings.Join(refusedNames, ","))
	if len(mounts) == 0 && len(refused) == 0 {
		s.log.Warn("the config file lists no enabled server", "config", s.file)
	}
	if why := s.LiveViewRefused(); why != "" {
		s.log.Warn("the web page's live view cannot be opened", "why", why)
	}
	if s.base != "" {
		// A reload: the servers it starts, at their URLs.
		s.announce(s.base, append(slices.Clone(ch.Added), ch.Restarted...))
	}
	if closed := slices.ContainsFunc(mounts, func(ms httpapi.MountSpec) bool { return ms.HTTP.Auth != nil }); closed && metricsUnguarded(mounts) {
		s.log.Warn(httpapi.MetricsClosed)
	}
	for _, ms := range mounts {
		if ms.HTTP.Auth == nil && !s.cfg.Loopback() && !slices.Contains(ch.Unchanged, ms.Name) {
			s.log.Warn("no authentication on a non-loopback address: anyone who reaches it can start processes; set --token-env, tokenEnvs or a JWT key", "server", ms.Name)
		}
	}
}

// metricsUnguarded: the servers' /metrics have neither a scraper's token
// nor --metrics-public (every server takes both from the flags).
func metricsUnguarded(mounts []httpapi.MountSpec) bool {
	return len(mounts) > 0 && mounts[0].HTTP.MetricsAuth == nil && !mounts[0].HTTP.MetricsPublic
}

// refusedServer is a server of the file that cannot be served: its
// command cannot be found, or its sandbox cannot be enforced. kept: it is
// served already, and keeps its settings.
type refusedServer struct {
	name string
	err  error
	kept bool
}

// mounts are the servers of specs as Apply takes them, and the ones
// refused. A server whose command cannot be found is refused alone: the
// others are served. One already served keeps its current settings (and
// sessions), as a file that cannot be read changes nothing.
func (s *serverSet) mounts(specs []config.ServerSpec) ([]httpapi.MountSpec, []refusedServer, error) {
	mounts := make([]httpapi.MountSpec, 0, len(specs))
	var refused []refusedServer
	sandboxed := false
	for _, sp := range specs {
		if sp.Sandbox != nil && !sandboxed && s.served == nil {
			logSandboxSystem(s.log)
			sandboxed = true
		}
		err := config.CommandError(sp.Command[0], sp.Dir, sp.Env, `its "cwd"`)
		if err == nil {
			// A sandbox this system cannot enforce (under required)
			// refuses the server as a missing command does.
			err = checkSandbox(sp.Sandbox, sp.Name, sp.Command, sp.Dir, sp.Env, s.http.Audit, s.log)
		}
		if err != nil {
			cur, kept := s.served[sp.Name]
			if kept {
				mounts = append(mounts, cur)
			}
			refused = append(refused, refusedServer{sp.Name, err, kept})
			continue
		}
		ms, err := s.cfg.Mount(sp, s.bridge, s.http, s.environ, s.log)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: server %q: %w", s.file, sp.Name, err)
		}
		mounts = append(mounts, ms)
	}
	return mounts, refused, nil
}
