// Package registry owns the servers of a --config file as they are
// served: the file read at start and on every reload (SIGHUP), the
// changes the registry API asks for (it implements
// httpapi.ServerRegistry), and the file written back after each. One
// lock serialises the reloads and the changes, so that they never
// interleave; the served set is httpapi.Mounts'.
//
// A change goes: check (the same checks as at start, by
// config.ParseServers on the file as it would be), serve (Mounts.Stage),
// announce (Options.Announce), save (the file written atomically), and
// only then stop what it replaced (Staged.Commit). If the file cannot be
// saved, the change is undone (Staged.Rollback): the servers it replaced
// serve again, with their sessions, and the API says why.
//
// Secrets are write-only: what the registry shows of an entry
// (config.Entry.View) holds no env value, and no error, log line or audit
// line holds a value of what was sent.
package registry

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/bridge"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
	"github.com/mcp-bridge/mcp-bridge/internal/syncio"
)

// Options configure a Registry.
type Options struct {
	// Config is the settings: ConfigFile names the file, the flags give
	// every server's defaults.
	Config config.Config
	// Environ is the bridge's environment (os.Environ).
	Environ []string
	// Bridge and HTTP are the settings the flags give each server's
	// bridge and endpoint, with the running parts set (Logger, Auth, the
	// audit log, Context).
	Bridge bridge.Config
	HTTP   httpapi.Options
	// Writers may change the servers through the API (--registry-admin);
	// HTTP.Admins may read them. HTTP.Auth authenticates both.
	Writers auth.Subjects
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
	// Announce, if set, is told what each change did to the served set:
	// once it is served and before it is saved, and again, reversed, if
	// it cannot be saved and is undone. Today every session is on one
	// server, whose lists a change of another leaves alone, and the
	// sessions of a server removed or restarted end; an endpoint that
	// serves every server at once would tell its sessions here that
	// their lists changed (notifications/tools/list_changed).
	Announce func(httpapi.Changes)
	// CheckSet, if set, checks the servers a change would serve, beyond
	// each server's own checks; a problem refuses the change (400). An
	// endpoint that serves every server at once checks here the names it
	// would expose, and reports their collisions.
	CheckSet func([]config.ServerSpec) []config.Problem
	// Refuses, if set, says why a server whose command can be started
	// cannot be served on this system all the same (a sandbox this
	// system cannot enforce): the field at fault and why, or "" when it
	// can be served. A server it refuses is refused as one whose command
	// cannot be found: left out by a reload, and a change about it
	// refused (400). audit is the audit log every server writes to (nil
	// without one), for the refusal's own line.
	Refuses func(sp config.ServerSpec, audit io.Writer) (field, why string)
	// HoldBeforeRename, if set, is called with the temporary file once
	// it is written and synced, before it is renamed over the file: the
	// tests kill the bridge there (TestHoldEnv).
	HoldBeforeRename func(tmp string)
}

// TestHoldEnv is the variable that makes the bridge hold each save just
// before its rename, for the test that kills it there: once the
// temporary file is written and synced, the bridge writes its name to the
// file this variable names and waits forever. Tests set it; nobody else
// should.
const TestHoldEnv = "MCP_BRIDGE_TEST_HOLD_BEFORE_RENAME"

// Registry is the --config servers as served, and the registry API over
// them. It is the httpapi.Mounts that serves them (embedded: it is the
// handler, and what the shutdown drains and closes).
type Registry struct {
	*httpapi.Mounts
	opts    Options
	file    string
	log     *slog.Logger
	etagKey []byte // keys the ETags, which must not be a digest of a secret

	// lock is held by the one reload or change under way: a channel, so
	// that a change whose client leaves stops waiting for it.
	lock chan struct{}

	// Owned by the holder of lock.
	disk    []byte                       // the file as last read or written
	served  map[string]httpapi.MountSpec // what the last load or change serves, by name
	removed []string                     // servers removed, most recent last (their 404 says so)
	base    string                       // the listener's URL once it listens (Listening)

	// view is what reads see: the state the last load or change left.
	view atomic.Pointer[state]
}

// state is the servers as the last load or change left them.
type state struct {
	doc     *config.ServersDoc
	specs   map[string]config.ServerSpec // the servers of the file that are enabled and valid
	refused map[string]string            // why a server enabled in the file is not served
}

// msgLoaded is the log's message for a load (start, reload); a change of
// the API logs "servers changed", and not again what the flags alone
// decide (the state of /metrics).
const msgLoaded = "servers loaded"

// maxRemembered bounds the names of removed servers the 404s remember.
const maxRemembered = 256

// Open reads the file, serves its servers, and serves the registry API
// on the Mounts (httpapi.Mounts.ServeRegistry). At start, a file none of
// whose servers can start is an error.
func Open(opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HTTP.Audit != nil {
		// Every server's endpoint writes to it, and the registry API.
		opts.HTTP.Audit = syncio.NewWriter(opts.HTTP.Audit)
	}
	if opts.HoldBeforeRename == nil {
		if path := lookup(opts.Environ, TestHoldEnv); path != "" {
			opts.HoldBeforeRename = holdForever(path)
		}
	}
	r := &Registry{
		Mounts: httpapi.NewMounts(opts.Config.MountsOptions(opts.HTTP, opts.Logger)),
		opts:   opts, file: opts.Config.ConfigFile, log: opts.Logger,
		etagKey: make([]byte, 32), lock: make(chan struct{}, 1),
	}
	_, _ = rand.Read(r.etagKey)
	removeLeftovers(r.file, r.log)
	data, err := config.ReadServersFile(&r.opts.Config)
	if err != nil {
		return nil, err
	}
	if err := r.load(data, true); err != nil {
		return nil, err
	}
	r.ServeRegistry(httpapi.RegistryAPI{Registry: r, Auth: opts.HTTP.Auth, Readers: opts.HTTP.Admins, Writers: opts.Writers,
		Audit: opts.HTTP.Audit, Logger: opts.Logger})
	return r, nil
}

// acquire takes the lock, or gives up when ctx ends.
func (r *Registry) acquire(ctx context.Context) (release func(), err error) {
	select {
	case r.lock <- struct{}{}:
		return func() { <-r.lock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Reload rereads the file and serves what it says (SIGHUP). A file that
// cannot be read or is invalid changes nothing.
func (r *Registry) Reload() error {
	release, _ := r.acquire(context.Background())
	defer release()
	data, err := config.ReadServersFile(&r.opts.Config)
	if err != nil {
		return err
	}
	return r.load(data, false)
}

// Listening logs the URLs every server is served at, under base, and
// has the reloads and changes to come log those of the servers they
// start. Called once the listener is open.
func (r *Registry) Listening(base string) {
	release, _ := r.acquire(context.Background())
	defer release()
	r.base = base
	r.logURLs(r.Names())
}

func (r *Registry) logURLs(names []string) {
	for _, name := range names {
		for _, e := range r.Endpoints(name) {
			r.log.Info("serving "+e.Name, "server", name, "url", r.base+e.Path)
		}
	}
}

// load makes the file's bytes data the served set: at start (first), on
// a reload, or when a change finds the file changed on disk. Its holder
// holds the lock.
func (r *Registry) load(data []byte, first bool) error {
	specs, err := config.ParseServers(r.file, data, &r.opts.Config, r.opts.Environ)
	if err != nil {
		return err
	}
	doc, err := config.ParseServersDoc(data)
	if err != nil {
		return fmt.Errorf("%s: %w", r.file, err)
	}
	p, err := r.plan(specs, "")
	if err != nil {
		return err
	}
	if first && len(p.refused) > 0 && len(p.refused) == len(specs) {
		// At start, a file none of whose servers can start is a mistake
		// to report, not a bridge to run serving nothing.
		errs := []error{fmt.Errorf("%s: no server can start", r.file)}
		for _, rs := range p.refused {
			errs = append(errs, fmt.Errorf("%s: server %q: %w", r.file, rs.name, rs.err))
		}
		return errors.Join(errs...)
	}
	st, err := r.Stage(p.mounts, httpapi.StageOptions{Absent: r.absent(doc, p, nil)})
	if err != nil {
		return err
	}
	r.announce(st.Changes)
	st.Commit()
	r.commit(data, doc, p, st.Changes)
	r.logLoad(msgLoaded, p, st.Changes)
	return nil
}

// plan is what a set of servers is served as.
type plan struct {
	mounts  []httpapi.MountSpec
	specs   []config.ServerSpec
	refused []refusedServer
}

// refusedServer is a server of the file that cannot be served: its
// command cannot be found (or Options.Refuses refuses it). kept: it is
// served already, and keeps its settings.
type refusedServer struct {
	name string
	err  error  // for the log: names the command
	why  string // for the API: the field, and why, without a value
	kept bool
}

// plan resolves specs into the mounts Stage takes. A server whose command
// cannot be found (or that Options.Refuses refuses) is refused alone (the
// others are served), and one
// already served keeps its current settings and sessions, as a file that
// cannot be read changes nothing; but the server a change is about
// (strict) is refused as a change, with a problem that names its field.
func (r *Registry) plan(specs []config.ServerSpec, strict string) (plan, error) {
	p := plan{mounts: make([]httpapi.MountSpec, 0, len(specs)), specs: specs}
	for _, sp := range specs {
		field, why := "command", config.CommandProblem(sp.Command[0], sp.Dir, sp.Env)
		logged := func() error { return config.CommandError(sp.Command[0], sp.Dir, sp.Env, `its "cwd"`) }
		if why == "" && r.opts.Refuses != nil {
			field, why = r.opts.Refuses(sp, r.opts.HTTP.Audit)
			logged = func() error { return fmt.Errorf("field %q: %s", field, why) }
		}
		if why != "" {
			if sp.Name == strict {
				return plan{}, &httpapi.RegistryError{Kind: httpapi.RegistryInvalid, Message: "Bad Request: the server cannot be started",
					Problems: []httpapi.FieldProblem{{Server: sp.Name, Field: field, Message: why}}}
			}
			cur, kept := r.served[sp.Name]
			if kept {
				p.mounts = append(p.mounts, cur)
			}
			p.refused = append(p.refused, refusedServer{sp.Name, logged(), field + ": " + why, kept})
			continue
		}
		ms, err := r.opts.Config.Mount(sp, r.opts.Bridge, r.opts.HTTP, r.opts.Environ, r.log)
		if err != nil {
			return plan{}, fmt.Errorf("%s: server %q: %w", r.file, sp.Name, err)
		}
		p.mounts = append(p.mounts, ms)
	}
	return p, nil
}

// absent says why each server of doc that p does not serve is not, and
// of the servers removed: the 404 of a request for one.
func (r *Registry) absent(doc *config.ServersDoc, p plan, removed []string) map[string]string {
	out := map[string]string{}
	for _, name := range append(slices.Clone(r.removed), removed...) {
		out[name] = fmt.Sprintf("server %q was removed", name)
	}
	for _, name := range doc.Names() {
		delete(out, name)
		if e, _ := doc.Entry(name); e.Disabled() {
			out[name] = fmt.Sprintf("server %q is disabled", name)
		}
	}
	for _, rs := range p.refused {
		if !rs.kept {
			out[rs.name] = fmt.Sprintf("server %q is not served: it cannot be started", rs.name)
		}
	}
	return out
}

// commit records what a load or change left: the file's bytes, what is
// served, the view reads see.
func (r *Registry) commit(data []byte, doc *config.ServersDoc, p plan, ch httpapi.Changes) {
	r.disk = data
	r.served = make(map[string]httpapi.MountSpec, len(p.mounts))
	for _, ms := range p.mounts {
		r.served[ms.Name] = ms
	}
	for _, name := range ch.Removed {
		if _, inFile := doc.Entry(name); !inFile {
			r.removed = append(slices.DeleteFunc(r.removed, func(n string) bool { return n == name }), name)
		}
	}
	for _, name := range doc.Names() {
		r.removed = slices.DeleteFunc(r.removed, func(n string) bool { return n == name })
	}
	if over := len(r.removed) - maxRemembered; over > 0 {
		r.removed = slices.Delete(r.removed, 0, over)
	}
	r.serveAggregate(p.specs)
	st := &state{doc: doc, specs: map[string]config.ServerSpec{}, refused: map[string]string{}}
	for _, sp := range p.specs {
		st.specs[sp.Name] = sp
	}
	for _, rs := range p.refused {
		st.refused[rs.name] = rs.why
	}
	r.view.Store(st)
}

// serveAggregate serves the aggregate endpoint of specs' names (none:
// it is not served), or gives it the new names: a reload renames without
// restarting a server, and tells the endpoint's sessions.
func (r *Registry) serveAggregate(specs []config.ServerSpec) {
	o := httpapi.AggregateOptions{HTTP: r.opts.HTTP, IdleTimeout: r.opts.Bridge.IdleTimeout}
	if t := r.opts.Config.AggregateListTimeout; t != nil {
		o.ListTimeout = *t
	}
	if members := config.AggregateMembers(specs); len(members) > 0 {
		names, err := aggregate.NewNames(members)
		if err != nil {
			// ParseServers checked them: a bug if it happens.
			r.log.Error("the aggregate's names are refused; it keeps its own", "err", err)
			return
		}
		o.Names = names
	}
	if err := r.ServeAggregate(o); err != nil {
		r.log.Error("the aggregate endpoint cannot be served", "err", err)
	}
}

// aggregatePath is where the aggregate endpoint is served.
func (r *Registry) aggregatePath() string {
	return cmp.Or(r.opts.HTTP.Path, httpapi.DefaultPath)
}

func (r *Registry) announce(ch httpapi.Changes) {
	if r.opts.Announce != nil && len(ch.Added)+len(ch.Removed)+len(ch.Restarted) > 0 {
		r.opts.Announce(ch)
	}
}

// logLoad tells what a load or change did: the servers refused, what
// changed, and the servers newly served without authentication where
// anyone may reach them.
func (r *Registry) logLoad(msg string, p plan, ch httpapi.Changes) {
	var refusedNames []string
	for _, rs := range p.refused {
		refusedNames = append(refusedNames, rs.name)
		if rs.kept {
			r.log.Error("server refused; it keeps its current settings", "server", rs.name, "err", rs.err)
		} else {
			r.log.Error("server refused; it is not served", "server", rs.name, "err", rs.err)
		}
	}
	r.log.Info(msg, "config", r.file,
		"added", strings.Join(ch.Added, ","), "removed", strings.Join(ch.Removed, ","),
		"restarted", strings.Join(ch.Restarted, ","), "unchanged", strings.Join(ch.Unchanged, ","),
		"refused", strings.Join(refusedNames, ","))
	if len(p.mounts) == 0 && len(p.refused) == 0 {
		r.log.Warn("the config file lists no enabled server", "config", r.file)
	}
	if why := r.LiveViewRefused(); why != "" {
		r.log.Warn("the web page's live view cannot be opened", "why", why)
	}
	if r.base != "" {
		// After start: the servers it starts, at their URLs.
		r.logURLs(append(slices.Clone(ch.Added), ch.Restarted...))
	}
	if closed := slices.ContainsFunc(p.mounts, func(ms httpapi.MountSpec) bool { return ms.HTTP.Auth != nil }); closed && metricsUnguarded(p.mounts) && msg == msgLoaded {
		r.log.Warn(httpapi.MetricsClosed)
	}
	if m := config.AggregateMembers(p.specs); len(m) > 0 && msg == msgLoaded {
		r.log.Info("the aggregate endpoint serves these servers as one", "path", r.aggregatePath(), "servers", len(m))
	}
	for _, ms := range p.mounts {
		if ms.HTTP.Auth == nil && !r.opts.Config.Loopback() && !slices.Contains(ch.Unchanged, ms.Name) {
			r.log.Warn("no authentication on a non-loopback address: anyone who reaches it can start processes; set --token-env, tokenEnvs or a JWT key", "server", ms.Name)
		}
	}
}

// metricsUnguarded: the servers' /metrics have neither a scraper's token
// nor --metrics-public (every server takes both from the flags).
func metricsUnguarded(mounts []httpapi.MountSpec) bool {
	return len(mounts) > 0 && mounts[0].HTTP.MetricsAuth == nil && !mounts[0].HTTP.MetricsPublic
}

// etag stands for server name's entry: an HMAC under a key of this
// process, so that it is no digest of the secrets the entry holds (an
// ETag is shown to every reader; a digest of a short secret could be
// guessed). It changes when the bridge restarts, which a client sees as
// 412 and answers with a GET.
func (r *Registry) etag(name string, e config.Entry) string {
	mac := hmac.New(sha256.New, r.etagKey)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write(e.Canonical())
	return `"` + hex.EncodeToString(mac.Sum(nil)[:16]) + `"`
}

// lookup is the value of variable k in environ.
func lookup(environ []string, k string) string {
	for _, kv := range slices.Backward(environ) {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// holdForever is the hold of TestHoldEnv: it writes the temporary file's
// name to path and waits forever (the test kills the bridge).
func holdForever(path string) func(string) {
	return func(tmp string) {
		_ = os.WriteFile(path, []byte(tmp), 0o600)
		select {}
	}
}

// sameBytes reports whether the file on disk is what the registry last
// read or wrote.
func (r *Registry) sameBytes(data []byte) bool { return bytes.Equal(data, r.disk) }
