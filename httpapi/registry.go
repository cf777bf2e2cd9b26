package httpapi

// The registry API: /admin/servers, the set of --config servers read and
// changed at run time (docs/registry.md). This file is its HTTP surface:
// routes, authentication and the two kinds of admins, bodies, statuses,
// the audit line of every write. What a change does (validate, serve,
// persist) is the ServerRegistry's (internal/registry).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcp-bridge/mcp-bridge/auth"
)

// RegistryPath is where the registry API is served: GET and POST here,
// and /admin/servers/NAME below it.
const RegistryPath = "/admin/servers"

// MaxRegistryBody is the largest body the registry API reads (413 over
// it). An entry is a few hundred bytes.
const MaxRegistryBody = 1 << 20

// ServerRegistry is what the registry API serves: the servers as
// configured, each with its state, and the changes made to them.
type ServerRegistry interface {
	// Servers are every server, in the file's order.
	Servers(ctx context.Context) ([]ServerState, error)
	// Server is one; a *RegistryError of kind RegistryNotFound if there
	// is no such server.
	Server(ctx context.Context, name string) (ServerState, error)
	// Change makes one change, or says why not with a *RegistryError.
	Change(ctx context.Context, c ServerChange) (ChangeResult, error)
}

// ServerState is one server as the registry API shows it. It holds no
// secret: Entry shows the entry without its env values, which are
// write-only (EnvKeys names them), and with what looks secret in its
// arguments masked.
type ServerState struct {
	Name string `json:"name"`
	// Enabled: the entry is not "disabled".
	Enabled bool `json:"enabled"`
	// Entry is the entry of the file as it may be shown.
	Entry json.RawMessage `json:"entry"`
	// EnvKeys are the variables its env sets, by name.
	EnvKeys []string `json:"envKeys"`
	// Mode is the mode it runs in, the flags' when the entry gives none.
	Mode string `json:"mode"`
	// Health is how it is now.
	Health ServerHealth `json:"health"`
	// Endpoint is the path of its MCP endpoint, when it is served.
	Endpoint string `json:"endpoint,omitempty"`
	// ETag stands for the entry (If-Match of a PATCH or DELETE).
	ETag string `json:"etag"`
}

// ServerHealth is how a server is now: ready, unavailable (served, but
// could not start a session now: Reason and Message say why, as
// /readyz does), disabled, or refused (its entry is in the file but
// cannot be served: Message says why).
type ServerHealth struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Operations of a ServerChange.
const (
	OpCreate   = "create"
	OpPatch    = "patch"
	OpDelete   = "delete"
	OpEnable   = "enable"
	OpDisable  = "disable"
	OpRestart  = "restart"
	OpValidate = "validate" // a create that is only checked
)

// ServerChange is one change asked of the registry.
type ServerChange struct {
	Op string
	// Name is the server; empty for a create or validate, whose body
	// names it.
	Name string
	// Body is the entry of a create or validate, the merge patch of a
	// patch.
	Body []byte
	// IfMatch are the ETags of If-Match: required for a patch, checked
	// for a delete when given. Nil when the header is absent.
	IfMatch []string
	// Actor is who asks.
	Actor auth.Principal
}

// ChangeResult is what a change did.
type ChangeResult struct {
	// Server is the server after the change; nil once removed.
	Server *ServerState `json:"server,omitempty"`
	// Changes say what the served set did (a change may restart servers
	// it did not name: one whose environment it changes).
	Changes Changes `json:"changes"`
	// Fields are the fields the change touched, for the audit log.
	Fields []FieldChange `json:"fields,omitempty"`
	// Wait, if set, waits until the servers the change stopped are
	// stopped: the API answers a delete, disable or restart once they
	// are.
	Wait func(ctx context.Context) error `json:"-"`
}

// FieldChange is one field a change touched: which (env.NAME for a key
// of env), and how: added, removed or changed. Never a value.
type FieldChange struct {
	Field  string `json:"field"`
	Change string `json:"change"`
}

// FieldProblem is one thing wrong with what a change asked: the server
// and the field at fault, and why. Never a value.
type FieldProblem struct {
	Server  string `json:"server,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// RegistryErrorKind is the kind of a refusal, which decides its status
// (registryStatus).
type RegistryErrorKind int

const (
	RegistryInvalid      RegistryErrorKind = iota // 400: the entry or patch is not valid
	RegistryNotFound                              // 404: no such server
	RegistryConflict                              // 409: the name exists; the file changed on disk and cannot be read
	RegistryStale                                 // 412: If-Match names another version
	RegistryNeedsIfMatch                          // 428: a patch without If-Match
	RegistryUnavailable                           // 503: the bridge is shutting down
	RegistryFailed                                // 500: the change could not be made (not saved: undone)

	// Refusals the API decides before the registry sees the request.
	registryForbidden        // 403
	registryMethodNotAllowed // 405
	registryUnsupportedType  // 415
	registryTooLarge         // 413
)

// RegistryError is a refusal of the registry. Message and Problems are
// told to the client and written to the audit log: neither holds a
// value of what was sent.
type RegistryError struct {
	Kind     RegistryErrorKind
	Message  string
	Problems []FieldProblem
}

func (e *RegistryError) Error() string { return e.Message }

// registryStatus is the HTTP status of a refusal of the registry API:
// the one place where its kinds become HTTP.
func registryStatus(k RegistryErrorKind) int {
	switch k {
	case RegistryInvalid:
		return http.StatusBadRequest
	case RegistryNotFound:
		return http.StatusNotFound
	case RegistryConflict:
		return http.StatusConflict
	case RegistryStale:
		return http.StatusPreconditionFailed
	case RegistryNeedsIfMatch:
		return http.StatusPreconditionRequired
	case RegistryUnavailable:
		return http.StatusServiceUnavailable
	case registryForbidden:
		return http.StatusForbidden
	case registryMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case registryUnsupportedType:
		return http.StatusUnsupportedMediaType
	case registryTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// RegistryAPI configures the registry API of a Mounts.
type RegistryAPI struct {
	// Registry serves it.
	Registry ServerRegistry
	// Auth authenticates its requests: the bridge-wide verifier (the
	// flags'), never a server's own tokens. Nil: every request is
	// refused (403): a bridge without authentication has one anonymous
	// principal, and changing the servers starts any command.
	Auth auth.Verifier
	// Readers may read it (--admin); Writers may read and change it
	// (--registry-admin). An empty list names nobody.
	Readers, Writers auth.Subjects
	// Audit, if set, gets one JSON line per change asked (made or
	// refused): the actor, the server, the outcome, and which fields the
	// change touched, never a value.
	Audit io.Writer
	// Logger logs each change. Default: the Mounts'.
	Logger *slog.Logger
	// Now is the clock of the audit log. Default time.Now.
	Now func() time.Time
}

// ServeRegistry serves the registry API under RegistryPath from now on.
// Until it is called, the API's paths answer 404.
func (m *Mounts) ServeRegistry(api RegistryAPI) {
	if api.Logger == nil {
		api.Logger = m.opts.Logger
	}
	if api.Now == nil {
		api.Now = time.Now
	}
	ra := &registryAPI{RegistryAPI: api}
	ra.authn = &authn{v: api.Auth, resource: resourceURL{}, log: api.Logger}
	m.registry.Store(ra)
}

// registryAPI serves the registry API.
type registryAPI struct {
	RegistryAPI
	authn   *authn
	auditMu sync.Mutex
}

// serveRegistry routes a request under /admin/ to the API, or 404 when
// it is not served.
func (m *Mounts) serveRegistry(w http.ResponseWriter, r *http.Request) {
	ra := m.registry.Load()
	if ra == nil {
		notFound(w)
		return
	}
	if ra.Auth == nil {
		writeRegistryError(w, &RegistryError{Kind: registryForbidden, Message: "Forbidden: the registry API needs authentication (--token-env or a JWT key) and --admin or --registry-admin"})
		return
	}
	ra.authn.middleware(http.HandlerFunc(ra.serve)).ServeHTTP(w, r)
}

// registryRoute is what a request under RegistryPath asks.
type registryRoute struct {
	name   string // the server, if the path names one
	action string // enable, disable, restart, validate; "" for none
}

// parseRegistryPath reads /admin/servers, /admin/servers:validate,
// /admin/servers/NAME and /admin/servers/NAME:ACTION. A name that breaks
// the name rule is no server (ok false), and is not repeated.
func parseRegistryPath(path string) (registryRoute, bool) {
	rest, ok := strings.CutPrefix(path, RegistryPath)
	switch {
	case !ok:
		return registryRoute{}, false
	case rest == "":
		return registryRoute{}, true
	case rest == ":validate":
		return registryRoute{action: OpValidate}, true
	}
	rest, ok = strings.CutPrefix(rest, "/")
	if !ok {
		return registryRoute{}, false
	}
	name, action, hasAction := strings.Cut(rest, ":")
	if !ValidServerName(name) {
		return registryRoute{}, false
	}
	switch {
	case !hasAction:
		return registryRoute{name: name}, true
	case action == OpEnable, action == OpDisable, action == OpRestart:
		return registryRoute{name: name, action: action}, true
	}
	return registryRoute{}, false
}

func (ra *registryAPI) serve(w http.ResponseWriter, r *http.Request) {
	rt, ok := parseRegistryPath(r.URL.Path)
	if !ok {
		writeRegistryError(w, &RegistryError{Kind: RegistryNotFound, Message: "Not Found: no such server or action"})
		return
	}
	op, allow := registryOp(rt, r.Method)
	if op == "" {
		w.Header().Set("Allow", allow)
		writeRegistryError(w, &RegistryError{Kind: registryMethodNotAllowed, Message: "Method Not Allowed: " + allow + " only"})
		return
	}
	p := principal(r)
	if op == opList || op == opGet {
		if !ra.Readers.Match(p) && !ra.Writers.Match(p) {
			writeRegistryError(w, &RegistryError{Kind: registryForbidden, Message: "Forbidden: reading the servers needs --admin (or --registry-admin)"})
			return
		}
		ra.read(w, r, op, rt.name, ra.Writers.Match(p))
		return
	}
	c := ServerChange{Op: op, Name: rt.name, Actor: p}
	if !ra.Writers.Match(p) {
		// Said without naming who may: that is for the operator.
		ra.refuse(w, c, &RegistryError{Kind: registryForbidden, Message: "Forbidden: changing the servers needs registry:write (--registry-admin)"})
		return
	}
	if err := readRegistryBody(w, r, &c); err != nil {
		ra.refuse(w, c, err)
		return
	}
	ra.change(w, r, c)
}

// Operations that read.
const (
	opList = "list"
	opGet  = "get"
)

// registryOp is the operation of a method on a route, or "" and the
// methods it takes.
func registryOp(rt registryRoute, method string) (op, allow string) {
	switch {
	case rt.name == "" && rt.action == OpValidate:
		if method == http.MethodPost {
			return OpValidate, ""
		}
		return "", "POST"
	case rt.name == "":
		switch method {
		case http.MethodGet, http.MethodHead:
			return opList, ""
		case http.MethodPost:
			return OpCreate, ""
		}
		return "", "GET, POST"
	case rt.action != "":
		if method == http.MethodPost {
			return rt.action, ""
		}
		return "", "POST"
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return opGet, ""
	case http.MethodPatch:
		return OpPatch, ""
	case http.MethodDelete:
		return OpDelete, ""
	}
	return "", "GET, PATCH, DELETE"
}

// readRegistryBody reads what a change sends: the body of a create,
// validate or patch (JSON, within MaxRegistryBody), and If-Match.
func readRegistryBody(w http.ResponseWriter, r *http.Request, c *ServerChange) error {
	if v := r.Header.Values("If-Match"); v != nil {
		for _, field := range v {
			for tag := range strings.SplitSeq(field, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					c.IfMatch = append(c.IfMatch, tag)
				}
			}
		}
		if c.IfMatch == nil {
			c.IfMatch = []string{}
		}
	}
	switch c.Op {
	case OpCreate, OpValidate, OpPatch:
	default:
		return nil
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" && (c.Op != OpPatch || ct != "application/merge-patch+json") {
		want := "application/json"
		if c.Op == OpPatch {
			want = "application/merge-patch+json or application/json"
		}
		return &RegistryError{Kind: registryUnsupportedType, Message: "Unsupported Media Type: send " + want}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRegistryBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &RegistryError{Kind: registryTooLarge, Message: fmt.Sprintf("Content Too Large: a body of at most %d bytes", MaxRegistryBody)}
	case err != nil:
		return &RegistryError{Kind: RegistryInvalid, Message: "Bad Request: the body could not be read"}
	}
	c.Body = body
	return nil
}

// read answers a read; writable: the reader may change the servers too,
// which the list says, so that the web page offers changes only to those
// who may make them.
func (ra *registryAPI) read(w http.ResponseWriter, r *http.Request, op, name string, writable bool) {
	var body any
	if op == opList {
		servers, err := ra.Registry.Servers(r.Context())
		if err != nil {
			writeRegistryError(w, asRegistryError(err))
			return
		}
		body = struct {
			Servers  []ServerState `json:"servers"`
			Writable bool          `json:"writable"`
		}{servers, writable}
	} else {
		s, err := ra.Registry.Server(r.Context(), name)
		if err != nil {
			writeRegistryError(w, asRegistryError(err))
			return
		}
		w.Header().Set("ETag", s.ETag)
		body = s
	}
	writeRegistryJSON(w, http.StatusOK, body)
}

// change makes one change and answers it: 201 for a server created, 200
// otherwise, once the servers it stopped are stopped.
func (ra *registryAPI) change(w http.ResponseWriter, r *http.Request, c ServerChange) {
	res, err := ra.Registry.Change(r.Context(), c)
	if err != nil {
		ra.refuse(w, c, asRegistryError(err))
		return
	}
	if res.Wait != nil {
		// Answered once the servers it stopped are stopped, so that a
		// script's next step finds them gone; the registry is free for
		// other changes meanwhile.
		if err := res.Wait(r.Context()); err != nil {
			ra.Logger.Info("registry: the client left before the servers were stopped", "op", c.Op, "server", c.Name)
		}
	}
	status := http.StatusOK
	if res.Server != nil {
		w.Header().Set("ETag", res.Server.ETag)
		c.Name = res.Server.Name
	}
	switch c.Op {
	case OpCreate:
		status = http.StatusCreated
		w.Header().Set("Location", RegistryPath+"/"+c.Name)
	case OpValidate:
		// A dry run: nothing was changed, nothing is audited.
		writeRegistryJSON(w, status, struct {
			Valid    bool           `json:"valid"`
			Problems []FieldProblem `json:"problems"`
		}{true, []FieldProblem{}})
		return
	}
	ra.audit(c, "ok", status, nil, &res)
	ra.Logger.Info("registry: servers changed", "actor", c.Actor.String(), "op", c.Op, "server", c.Name,
		"fields", fieldList(res.Fields), "added", strings.Join(res.Changes.Added, ","), "removed", strings.Join(res.Changes.Removed, ","),
		"restarted", strings.Join(res.Changes.Restarted, ","))
	writeRegistryJSON(w, status, res)
}

// refuse answers a change refused, and audits it.
func (ra *registryAPI) refuse(w http.ResponseWriter, c ServerChange, err error) {
	re := asRegistryError(err)
	status := writeRegistryError(w, re)
	if c.Op == OpValidate && re.Kind == RegistryInvalid {
		return // a dry run that found problems: that is its answer
	}
	ra.audit(c, "refused", status, re, nil)
	ra.Logger.Info("registry: change refused", "actor", c.Actor.String(), "op", c.Op, "server", c.Name, "status", status, "reason", re.Message)
}

// registryAudit is one line of the audit log for a change of the
// registry; its first keys are those of a request's line.
type registryAudit struct {
	Time       string         `json:"time"`
	Principal  string         `json:"principal"`
	Issuer     string         `json:"issuer,omitempty"`
	Method     string         `json:"method"` // registry/create, registry/patch, ...
	Server     string         `json:"server,omitempty"`
	Outcome    string         `json:"outcome"` // ok, refused
	HTTPStatus int            `json:"http_status"`
	Reason     string         `json:"reason,omitempty"`
	Problems   []FieldProblem `json:"problems,omitempty"`
	Fields     []FieldChange  `json:"fields,omitempty"`
	Changes    *Changes       `json:"changes,omitempty"`
}

func (ra *registryAPI) audit(c ServerChange, outcome string, status int, refusal *RegistryError, res *ChangeResult) {
	if ra.Audit == nil {
		return
	}
	e := registryAudit{Time: ra.Now().UTC().Format(time.RFC3339Nano), Principal: c.Actor.String(), Issuer: c.Actor.Issuer,
		Method: "registry/" + c.Op, Server: c.Name, Outcome: outcome, HTTPStatus: status}
	if refusal != nil {
		e.Reason, e.Problems = refusal.Message, refusal.Problems
	}
	if res != nil {
		e.Fields, e.Changes = res.Fields, &res.Changes
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	ra.auditMu.Lock()
	defer ra.auditMu.Unlock()
	_, _ = ra.Audit.Write(append(b, '\n'))
}

func fieldList(fs []FieldChange) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Field + ":" + f.Change
	}
	return strings.Join(out, ",")
}

func asRegistryError(err error) *RegistryError {
	var re *RegistryError
	if errors.As(err, &re) {
		return re
	}
	return &RegistryError{Kind: RegistryFailed, Message: "internal error"}
}

// writeRegistryError answers a refusal: its status, and {"error":
// {"message", "problems"}}. It returns the status.
func writeRegistryError(w http.ResponseWriter, e *RegistryError) int {
	status := registryStatus(e.Kind)
	if e.Kind == RegistryUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	type body struct {
		Message  string         `json:"message"`
		Problems []FieldProblem `json:"problems,omitempty"`
	}
	writeRegistryJSON(w, status, struct {
		Error body `json:"error"`
	}{body{e.Message, e.Problems}})
	return status
}

func writeRegistryJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	// What the registry says changes with every write: never cached.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
