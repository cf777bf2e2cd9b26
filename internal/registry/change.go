package registry

// The registry API's reads and changes (httpapi.ServerRegistry).

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/config"
)

// Servers are every server of the file, in its order, each with its
// state now.
func (r *Registry) Servers(context.Context) ([]httpapi.ServerState, error) {
	st := r.view.Load()
	names := st.doc.Names()
	out := make([]httpapi.ServerState, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		// A shared server's health pings its child: ask all at once.
		wg.Go(func() { out[i] = r.stateOf(st, name) })
	}
	wg.Wait()
	return out, nil
}

// Server is one server of the file, with its state now.
func (r *Registry) Server(_ context.Context, name string) (httpapi.ServerState, error) {
	st := r.view.Load()
	if _, ok := st.doc.Entry(name); !ok {
		return httpapi.ServerState{}, notFound(name)
	}
	return r.stateOf(st, name), nil
}

// stateOf is server name of st as the API shows it.
func (r *Registry) stateOf(st *state, name string) httpapi.ServerState {
	e, _ := st.doc.Entry(name)
	s := httpapi.ServerState{Name: name, Enabled: !e.Disabled(), Entry: e.View(), EnvKeys: e.EnvKeys(),
		Mode: cmp.Or(e.String("mode"), r.opts.Bridge.Mode), ETag: r.etag(name, e)}
	if sp, ok := st.specs[name]; ok {
		s.Mode = sp.Mode
	}
	h, served := r.Health(name)
	if served {
		s.Endpoint = httpapi.MountPath(name)
	}
	switch why := st.refused[name]; {
	case !s.Enabled:
		s.Health = httpapi.ServerHealth{Status: "disabled"}
	case why != "" && served:
		s.Health = httpapi.ServerHealth{Status: "refused", Message: "it cannot be started (" + why + "); it is served with its previous settings"}
	case why != "":
		s.Health = httpapi.ServerHealth{Status: "refused", Message: "it cannot be started: " + why}
	case served:
		s.Health = h
	default:
		s.Health = httpapi.ServerHealth{Status: "unavailable", Message: "not served"}
	}
	return s
}

// edit is a change worked out on the file: the file as it would be, and
// what the change is about.
type edit struct {
	doc     *config.ServersDoc
	name    string
	restart []string
	fields  []config.FieldChange
}

// Change makes one change: checked as the file is at start, served,
// announced, saved, and only then are the servers it replaced stopped.
// A change waits for the reload or change under way, or until ctx ends.
func (r *Registry) Change(ctx context.Context, c httpapi.ServerChange) (httpapi.ChangeResult, error) {
	release, err := r.acquire(ctx)
	if err != nil {
		return httpapi.ChangeResult{}, &httpapi.RegistryError{Kind: httpapi.RegistryUnavailable, Message: "Service Unavailable: the request ended while another change was under way"}
	}
	defer release()
	if c.Op == httpapi.OpValidate {
		// A dry run: the file as a create would make it, checked, and
		// nothing served or saved.
		ed, err := r.edit(r.view.Load(), c)
		if err != nil {
			return httpapi.ChangeResult{}, err
		}
		_, err = r.check(ed)
		return httpapi.ChangeResult{}, err
	}
	if err := r.syncDisk(); err != nil {
		return httpapi.ChangeResult{}, err
	}
	ed, err := r.edit(r.view.Load(), c)
	if err != nil {
		return httpapi.ChangeResult{}, err
	}
	return r.apply(ed, c.Op == httpapi.OpDelete)
}

// syncDisk rereads the file: if it changed on disk since the bridge last
// read or wrote it (edited from outside), it is loaded first, as a
// reload would, so that a change never overwrites an edit it has not
// seen; an ETag of a server it changed changes with it (412).
func (r *Registry) syncDisk() error {
	data, err := config.ReadServersFile(&r.opts.Config)
	if err != nil {
		return &httpapi.RegistryError{Kind: httpapi.RegistryConflict, Message: "Conflict: the config file cannot be read: " + err.Error()}
	}
	if r.sameBytes(data) {
		return nil
	}
	r.log.Warn("the config file changed on disk since the bridge last read or wrote it; loading it before the change", "config", r.file)
	if err := r.load(data, false); err != nil {
		r.log.Error("reload failed; the servers stay as they were", "err", err)
		re := &httpapi.RegistryError{Kind: httpapi.RegistryConflict, Message: "Conflict: the config file was changed on disk and is not valid now; fix it, then try again"}
		var se *config.ServersError
		if errors.As(err, &se) {
			re.Problems = problems("", se.Problems)
		}
		return re
	}
	return nil
}

// edit works c out on the file as st has it.
func (r *Registry) edit(st *state, c httpapi.ServerChange) (edit, error) {
	if c.Op == httpapi.OpCreate || c.Op == httpapi.OpValidate {
		name, e, ps := config.NewEntry(c.Body)
		if len(ps) == 0 && !httpapi.ValidServerName(name) {
			ps = []config.Problem{{Field: config.NameMember, Message: config.ServerNameRule}}
		}
		if len(ps) > 0 {
			if !httpapi.ValidServerName(name) {
				name = "" // not repeated: it may be anything
			}
			return edit{}, invalid(name, ps)
		}
		if _, exists := st.doc.Entry(name); exists {
			return edit{}, &httpapi.RegistryError{Kind: httpapi.RegistryConflict, Message: fmt.Sprintf("Conflict: server %q exists: change it with PATCH, or remove it first", name)}
		}
		return edit{doc: st.doc.With(name, e), name: name, fields: e.Diff(config.Entry{})}, nil
	}
	e, ok := st.doc.Entry(c.Name)
	if !ok {
		return edit{}, notFound(c.Name)
	}
	ed := edit{doc: st.doc, name: c.Name}
	tag := r.etag(c.Name, e)
	switch c.Op {
	case httpapi.OpPatch:
		if err := ifMatch(c.IfMatch, tag, true); err != nil {
			return edit{}, err
		}
		e2, ps := e.Patch(c.Body)
		if len(ps) > 0 {
			return edit{}, invalid(c.Name, ps)
		}
		ed.doc, ed.fields = st.doc.With(c.Name, e2), e2.Diff(e)
	case httpapi.OpDelete:
		if err := ifMatch(c.IfMatch, tag, false); err != nil {
			return edit{}, err
		}
		ed.doc, ed.fields = st.doc.Without(c.Name), config.Entry{}.Diff(e)
	case httpapi.OpEnable, httpapi.OpDisable:
		e2 := e.WithDisabled(c.Op == httpapi.OpDisable)
		ed.doc, ed.fields = st.doc.With(c.Name, e2), e2.Diff(e)
	case httpapi.OpRestart:
		if _, served := r.Health(c.Name); !served {
			return edit{}, &httpapi.RegistryError{Kind: httpapi.RegistryConflict, Message: fmt.Sprintf("Conflict: server %q is not served (disabled, or its command cannot be started): there is nothing to restart", c.Name)}
		}
		ed.restart = []string{c.Name}
	default:
		return edit{}, &httpapi.RegistryError{Kind: httpapi.RegistryNotFound, Message: "Not Found: no such action"}
	}
	return ed, nil
}

// ifMatch checks If-Match (tags; nil when absent) against the entry's
// current ETag; required for a patch.
func ifMatch(tags []string, current string, required bool) error {
	switch {
	case len(tags) == 0 && !required:
		return nil
	case len(tags) == 0, slices.Contains(tags, "*"):
		return &httpapi.RegistryError{Kind: httpapi.RegistryNeedsIfMatch, Message: "Precondition Required: send If-Match with the server's ETag (from GET), so that a change made since is not overwritten"}
	case !slices.Contains(tags, current):
		return &httpapi.RegistryError{Kind: httpapi.RegistryStale, Message: "Precondition Failed: the server changed since that ETag (another change, or the config file edited on disk): GET it again"}
	}
	return nil
}

// check checks the file as ed would make it, as at start: every rule of
// every server (config.ParseServers), the set (Options.CheckSet), and
// that the command of the server ed is about can be started. It returns
// what would be served.
func (r *Registry) check(ed edit) (plan, error) {
	specs, err := config.ParseServers(r.file, ed.doc.Bytes(), &r.opts.Config, r.opts.Environ)
	var se *config.ServersError
	switch {
	case errors.As(err, &se):
		return plan{}, invalid(ed.name, se.Problems)
	case err != nil:
		return plan{}, &httpapi.RegistryError{Kind: httpapi.RegistryInvalid, Message: "Bad Request: the server is not valid"}
	}
	if r.opts.CheckSet != nil {
		if ps := r.opts.CheckSet(specs); len(ps) > 0 {
			return plan{}, invalid(ed.name, ps)
		}
	}
	strict := ""
	if slices.ContainsFunc(specs, func(sp config.ServerSpec) bool { return sp.Name == ed.name }) {
		strict = ed.name
	}
	return r.plan(specs, strict)
}

// apply makes ed the served set, and saves it. removing: the change
// removes ed.name, whose 404 says so at once.
func (r *Registry) apply(ed edit, removing bool) (httpapi.ChangeResult, error) {
	p, err := r.check(ed)
	if err != nil {
		return httpapi.ChangeResult{}, err
	}
	var removed []string
	if removing {
		removed = []string{ed.name}
	}
	staged, err := r.Stage(p.mounts, httpapi.StageOptions{Restart: ed.restart, Absent: r.absent(ed.doc, p, removed)})
	if err != nil {
		r.log.Error("registry: the change could not be served", "err", err)
		return httpapi.ChangeResult{}, &httpapi.RegistryError{Kind: httpapi.RegistryUnavailable, Message: "Service Unavailable: the change could not be served (the bridge may be shutting down); nothing changed"}
	}
	r.announce(staged.Changes)
	data := ed.doc.Bytes()
	if !bytes.Equal(data, r.disk) {
		if err := r.save(data); err != nil {
			_ = staged.Rollback()
			r.announce(httpapi.Changes{Added: staged.Changes.Removed, Removed: staged.Changes.Added, Restarted: staged.Changes.Restarted})
			r.log.Error("registry: the config file could not be written; the change is undone", "config", r.file, "err", err)
			return httpapi.ChangeResult{}, &httpapi.RegistryError{Kind: httpapi.RegistryFailed,
				Message: "Internal Server Error: the change is undone: the config file could not be written: " + err.Error()}
		}
	}
	staged.Commit()
	r.commit(data, ed.doc, p, staged.Changes)
	r.logLoad("servers changed", p, staged.Changes)
	res := httpapi.ChangeResult{Changes: staged.Changes, Fields: fieldChanges(ed.fields)}
	if _, ok := ed.doc.Entry(ed.name); ok {
		s := r.stateOf(r.view.Load(), ed.name)
		res.Server = &s
	}
	if len(staged.Changes.Removed)+len(staged.Changes.Restarted) > 0 {
		res.Wait = staged.Wait
	}
	return res, nil
}

func notFound(name string) error {
	return &httpapi.RegistryError{Kind: httpapi.RegistryNotFound, Message: fmt.Sprintf("Not Found: no server %q", name)}
}

// invalid is a 400 with the problems, those without a server given
// server's.
func invalid(server string, ps []config.Problem) error {
	return &httpapi.RegistryError{Kind: httpapi.RegistryInvalid, Message: "Bad Request: the server is not valid", Problems: problems(server, ps)}
}

func problems(server string, ps []config.Problem) []httpapi.FieldProblem {
	out := make([]httpapi.FieldProblem, len(ps))
	for i, p := range ps {
		out[i] = httpapi.FieldProblem{Server: cmp.Or(p.Server, server), Field: p.Field, Message: p.Message}
	}
	return out
}

func fieldChanges(fs []config.FieldChange) []httpapi.FieldChange {
	out := make([]httpapi.FieldChange, len(fs))
	for i, f := range fs {
		out[i] = httpapi.FieldChange{Field: f.Field, Change: f.Change}
	}
	return out
}
