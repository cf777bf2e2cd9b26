package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcp-bridge/mcp-bridge/internal/glob"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-bridge/mcp-bridge/auth"
)

// The tool annotations a rule may name (MCP's ToolAnnotations). They are
// hints: "clients MUST consider tool annotations to be untrusted unless
// they come from trusted servers", so they count only for a server the
// operator marks trusted, and only ever to spare a call from approval
// that its glob alone would hold (Policy.Needs).
const (
	HintReadOnly    = "readOnlyHint"
	HintDestructive = "destructiveHint"
	HintIdempotent  = "idempotentHint"
	HintOpenWorld   = "openWorldHint"
)

var hints = []string{HintReadOnly, HintDestructive, HintIdempotent, HintOpenWorld}

// Rule marks the calls of the tools Glob matches, by the principals
// Subject names, as needing a human's yes first; with a Hint, only those
// of its tools that a trusted server marks so.
type Rule struct {
	// Subject names the principals the rule applies to, in the syntax
	// of the tool policy (auth.Subject).
	Subject auth.Subject
	// Glob matches tool names: * is any run of characters, ? one.
	Glob string
	// Hint, if set, is an annotation the tool must have (true, or
	// false with Not) for the rule to apply, on a trusted server; on
	// any other server, and for a tool the server has not described,
	// the rule applies whatever the tool claims.
	Hint string
	Not  bool
}

// ParseRule reads "SUBJECT=GLOB", "SUBJECT=GLOB@HINT" or
// "SUBJECT=GLOB@!HINT" (the tools GLOB matches that a trusted server
// marks HINT, or marks not HINT). Its errors do not repeat the rule: a
// setting's value is never echoed; the caller says which rule it was.
func ParseRule(s string) (Rule, error) {
	subject, rest, ok := strings.Cut(s, "=")
	if !ok || subject == "" || rest == "" {
		return Rule{}, errors.New("approval rule: want SUBJECT=GLOB or SUBJECT=GLOB@HINT (SUBJECT: *, scope:NAME or a principal)")
	}
	sub, err := auth.ParseSubject(subject)
	if err != nil {
		return Rule{}, fmt.Errorf("approval rule: %w", err)
	}
	r := Rule{Subject: sub, Glob: rest}
	if glob, hint, ok := strings.Cut(rest, "@"); ok {
		r.Glob = glob
		r.Hint, r.Not = strings.CutPrefix(hint, "!")
		switch {
		case glob == "":
			return Rule{}, errors.New("approval rule: the glob before @ is empty (use * for every tool)")
		case !slices.Contains(hints, r.Hint):
			return Rule{}, fmt.Errorf("approval rule: the annotation after @ must be one of %s (with ! for its absence)", strings.Join(hints, ", "))
		}
	}
	return r, nil
}

// String is the rule as it is written, for the audit log and the
// approver.
func (r Rule) String() string {
	s := string(r.Subject) + "=" + r.Glob
	if r.Hint != "" {
		s += "@"
		if r.Not {
			s += "!"
		}
		s += r.Hint
	}
	return s
}

// Annotations are what a server said of one tool; a nil field was not
// said.
type Annotations struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// Has reports whether the tool has hint, with the defaults MCP gives
// hints not said: readOnlyHint false, destructiveHint true,
// idempotentHint false, openWorldHint true; destructiveHint and
// idempotentHint are "meaningful only when readOnlyHint == false", so a
// read-only tool is neither destructive nor anything but idempotent.
func (a Annotations) Has(hint string) bool {
	or := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	readOnly := or(a.ReadOnly, false)
	switch hint {
	case HintReadOnly:
		return readOnly
	case HintDestructive:
		return !readOnly && or(a.Destructive, true)
	case HintIdempotent:
		return readOnly || or(a.Idempotent, false)
	case HintOpenWorld:
		return or(a.OpenWorld, true)
	}
	return false
}

// DefaultMaxTools is the most tools a Catalog describes.
const DefaultMaxTools = 10_000

// maxToolName is the longest tool name a Catalog keeps (MCP: 1 to 128
// characters); a longer one is not described, so no hint spares it.
const maxToolName = 256

// Catalog is what one server said of its tools, learnt from the
// tools/list results the bridge relays from it: the annotations of each
// tool, the latest list's. It is bounded (DefaultMaxTools): a tool
// learnt past the bound is not described, which only ever holds more
// calls for approval. Safe for concurrent use.
type Catalog struct {
	mu    sync.Mutex
	tools map[string]Annotations
	max   int
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog { return &Catalog{tools: map[string]Annotations{}, max: DefaultMaxTools} }

// Learn records the tools of a tools/list result (the result object of
// one page: {"tools": [...], "nextCursor": ...}). A tool already known
// takes the annotations it has now, none included. What does not parse
// is ignored.
func (c *Catalog) Learn(result []byte) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.Tools {
		if t.Name == "" || len(t.Name) > maxToolName {
			continue
		}
		if _, known := c.tools[t.Name]; !known && len(c.tools) >= c.max {
			continue
		}
		c.tools[t.Name] = annotationsOf(t.Annotations)
	}
}

// annotationsOf reads the hints of an annotations object; a hint that is
// not a boolean is not said.
func annotationsOf(raw json.RawMessage) Annotations {
	var m map[string]json.RawMessage
	var a Annotations
	if json.Unmarshal(raw, &m) != nil {
		return a
	}
	for name, p := range map[string]**bool{HintReadOnly: &a.ReadOnly, HintDestructive: &a.Destructive, HintIdempotent: &a.Idempotent, HintOpenWorld: &a.OpenWorld} {
		var b bool
		if v, ok := m[name]; ok && json.Unmarshal(v, &b) == nil && (string(v) == "true" || string(v) == "false") {
			*p = &b
		}
	}
	return a
}

// Lookup returns what the server said of tool, if it described it.
func (c *Catalog) Lookup(tool string) (Annotations, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.tools[tool]
	return a, ok
}

// Len is the number of tools described.
func (c *Catalog) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tools)
}

// Policy decides which calls to one server need a human's yes: the
// bridge's rules (--tool-approve) and the server's own, in that order,
// the first that applies naming the rule the approval is bound to. It is
// decided after the tool policy: a call the policy denies is never held.
type Policy struct {
	server  string
	rules   []Rule
	trusted bool
	catalog *Catalog
}

// NewPolicy returns the policy of server (its name, as approvals and the
// audit log show it), nil for no rules. trusted: the operator believes
// the server's tool annotations, so a rule's hint can spare one of its
// tools; the policy then keeps a Catalog for the wiring to feed.
func NewPolicy(server string, rules []Rule, trusted bool) *Policy {
	if len(rules) == 0 {
		return nil
	}
	p := &Policy{server: server, rules: slices.Clone(rules), trusted: trusted}
	if trusted && slices.ContainsFunc(rules, func(r Rule) bool { return r.Hint != "" }) {
		p.catalog = NewCatalog()
	}
	return p
}

// Server is the name of the server the policy is for.
func (p *Policy) Server() string {
	if p == nil {
		return ""
	}
	return p.server
}

// Trusted reports whether the server's annotations count.
func (p *Policy) Trusted() bool { return p != nil && p.trusted }

// Catalog is where the server's tools/list results go (Catalog.Learn),
// nil when nothing reads them: the server is not trusted, or no rule
// names a hint.
func (p *Policy) Catalog() *Catalog {
	if p == nil {
		return nil
	}
	return p.catalog
}

// Needs returns the rule that holds a call of tool by pr for approval,
// and whether one does. A nil policy holds nothing.
func (p *Policy) Needs(pr auth.Principal, tool string) (Rule, bool) {
	if p == nil {
		return Rule{}, false
	}
	for _, r := range p.rules {
		if r.Subject.Matches(pr) && glob.Match(r.Glob, tool) && p.hintHolds(r, tool) {
			return r, true
		}
	}
	return Rule{}, false
}

// hintHolds: the rule's hint, if any, holds for tool. What cannot be
// believed or is not known holds: an untrusted server's claims, a tool it
// has not described. So a hint spares a call only on the word of a
// trusted server, and never holds back one that the glob alone would
// hold.
func (p *Policy) hintHolds(r Rule, tool string) bool {
	if r.Hint == "" || p.catalog == nil {
		return true
	}
	a, ok := p.catalog.Lookup(tool)
	if !ok {
		return true
	}
	return a.Has(r.Hint) != r.Not
}
