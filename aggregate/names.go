package aggregate

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/internal/glob"
)

// Every name the aggregate exposes is decided here, and only here: a tool
// or a prompt is SERVER__NAME, always, even with one server, so adding a
// server never renames another's; a resource or a template is
// mcp-bridge://SERVER/ORIGINAL. Policy, approvals and the audit log see
// these names, and Resolve gives them the server behind each.

// Separator joins a server's name and its tool or prompt name.
const Separator = "__"

// MaxName is the longest name clients accept for a tool ("Claude accepts
// ^[a-zA-Z0-9_-]{1,64}$"; the specification only says SHOULD 1 to 128).
const MaxName = 64

// exposedName is what every exposed tool and prompt name must match.
var exposedName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// localName is what a name given in "rename" must match: the charset of
// exposedName, any length (the length is checked with the server's
// prefix).
var localName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// serverNameChars is the charset of a server's name in the --config file
// (a path segment: httpapi.ValidServerName); the aggregate's rule,
// ServerNameProblem, narrows it.
var serverNameChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// MaxServerName is the longest server name of an aggregate: its prefix
// and the separator must leave room for a name of one character.
const MaxServerName = MaxName - len(Separator) - 1

// ServerNameProblem says what is wrong with name as the name of a server
// of an aggregate, "" if nothing. The rule keeps SERVER__NAME split one
// way: the exposed name is cut at its first "__", which is the separator
// exactly when the server's name holds no "__" and does not end with "_"
// (a server "a_" with a tool "b" would give "a___b", cut into "a" and
// "_b"). The name's own "__" would do the same. Anything after the
// separator is the server's: a tool may hold "__" or start with "_".
func ServerNameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case !serverNameChars.MatchString(name):
		return "want letters, digits, - and _ only"
	case strings.Contains(name, Separator):
		return `it holds "` + Separator + `", which separates a server's name from its tools' in the names the aggregate exposes`
	case strings.HasSuffix(name, "_"):
		return `it ends with "_", which would run into the "` + Separator + `" after it in the names the aggregate exposes`
	case len(name) > MaxServerName:
		return fmt.Sprintf("%d characters: an aggregate's server names have at most %d, so that SERVER%sNAME fits in %d", len(name), MaxServerName, Separator, MaxName)
	}
	return ""
}

// Member is one server of an aggregate, as the configuration gives it.
type Member struct {
	// Name is the server's name, the prefix of its tools and prompts and
	// the authority of its resources' URIs.
	Name string
	// Rename maps a name the server gives a tool or a prompt to the name
	// the aggregate exposes it under, after the prefix: {"long": "short"}
	// exposes the tool "long" as SERVER__short. It applies to tools and
	// prompts alike.
	Rename map[string]string
	// Allow and Deny filter the server's tools by their own names (before
	// Rename), with the tool policy's globs (internal/glob). A tool is
	// exposed when no Deny pattern matches it and either Allow is empty
	// or one of its patterns matches it. A tool that is not exposed
	// cannot be called through the aggregate.
	Allow, Deny []string
}

// exposes says whether the member's filter lets the tool through.
func (m *Member) exposes(tool string) bool {
	for _, g := range m.Deny {
		if glob.Match(g, tool) {
			return false
		}
	}
	if len(m.Allow) == 0 {
		return true
	}
	return slices.ContainsFunc(m.Allow, func(g string) bool { return glob.Match(g, tool) })
}

// A ConfigError is one thing wrong with an aggregate's configuration: the
// server and the field it is in (Field "" for the server's name itself),
// and what is wrong, saying what fixes it. It holds tool and server names,
// which are no secrets, and nothing else of the configuration.
type ConfigError struct {
	Server, Field, Msg string
}

func (e ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("server %q: %s", e.Server, e.Msg)
	}
	return fmt.Sprintf("server %q: field %q: %s", e.Server, e.Field, e.Msg)
}

// Check returns every problem of the members as an aggregate: each
// server's name (ServerNameProblem, and no two names that differ only in
// case, since a URI's authority is compared without case), its renames,
// and the exposed names it can know of before any server runs: the
// renamed ones, and the tools its Allow names literally. A tool name a
// server only reports when it runs is checked when it is listed
// (Catalog). The errors are sorted by server, then field.
func Check(members []Member) []ConfigError {
	var names []string
	for _, m := range members {
		names = append(names, m.Name)
	}
	errs := CheckServerNames(names)
	for _, m := range members {
		errs = append(errs, m.Check()...)
	}
	slices.SortStableFunc(errs, func(a, b ConfigError) int {
		return strings.Compare(a.Server+"\x00"+a.Field, b.Server+"\x00"+b.Field)
	})
	return errs
}

// CheckServerNames is what Check finds in the names of an aggregate's
// servers: each must keep ServerNameProblem's rule, and no two may differ
// only in case (a URI's authority is compared without case).
func CheckServerNames(names []string) []ConfigError {
	var errs []ConfigError
	seen := map[string]string{} // lower case -> the name
	for _, name := range names {
		if why := ServerNameProblem(name); why != "" {
			errs = append(errs, ConfigError{name, "", "not a server name for the aggregate: " + why})
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			errs = append(errs, ConfigError{name, "", fmt.Sprintf("differs from the server %q only in case, and resource URIs (%s) do not tell case apart in a server's name", other, URIScheme+"://SERVER/…")})
		}
		seen[strings.ToLower(name)] = name
	}
	return errs
}

// Check is what Check finds in one member's renames and filter: every
// problem, each naming its field ("rename", "tools.allow" or
// "tools.deny") and saying what fixes it.
func (m *Member) Check() []ConfigError {
	var errs []ConfigError
	bad := func(field, format string, a ...any) {
		errs = append(errs, ConfigError{m.Name, field, fmt.Sprintf(format, a...)})
	}
	room := MaxName - len(m.Name) - len(Separator)
	targets := map[string]string{} // exposed -> the name renamed to it
	for _, from := range slices.Sorted(maps.Keys(m.Rename)) {
		to := m.Rename[from]
		switch {
		case from == "":
			bad("rename", "a rename of the empty name: give the server's name for the tool or prompt")
		case to == "":
			bad("rename", "%q is renamed to the empty name", from)
		case !localName.MatchString(to):
			bad("rename", "%q is renamed to %q, which has characters clients refuse in a tool's name: use letters, digits, _ and - (\"rename\": {%q: %q})", from, to, from, suggest(m.Name, to, nil))
		case len(to) > room:
			bad("rename", "%q is renamed to %q, exposed as %q: %d characters, over the %d clients accept; rename it to at most %d characters (\"rename\": {%q: %q})", from, to, m.Name+Separator+to, len(m.Name)+len(Separator)+len(to), MaxName, room, from, suggest(m.Name, to, nil))
		}
		if other, dup := targets[to]; dup && to != "" {
			bad("rename", "%q and %q are both renamed to %q: give each a name of its own", other, from, to)
		}
		targets[to] = from
	}
	for _, list := range []struct {
		field string
		globs []string
	}{{"tools.allow", m.Allow}, {"tools.deny", m.Deny}} {
		for i, g := range list.globs {
			if g == "" {
				bad(list.field, "%san empty pattern matches no tool", entryOf(i, len(list.globs)))
			}
		}
	}
	for _, name := range m.Allow {
		if name == "" || !glob.Literal(name) || m.Rename[name] != "" {
			continue
		}
		if p := badName(KindTool, m.Name, name, name); p != nil {
			bad("tools.allow", "%s", p.Message())
		}
	}
	return errs
}

// entryOf names the i-th of n entries of a list, by its place: "" for the
// only one.
func entryOf(i, n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf("entry %d: ", i+1)
}

// Kind is what an exposed name names.
type Kind string

const (
	KindTool     Kind = "tool"
	KindPrompt   Kind = "prompt"
	KindResource Kind = "resource"
	KindTemplate Kind = "template" // a resource template
)

// Names are the exposed names of an aggregate's members: made once from
// the configuration (NewNames), read by any number of goroutines.
type Names struct {
	members map[string]*serverNames
	folded  map[string]string // lower-case name -> name, for URI authorities
	order   []string          // the servers' names, sorted
}

// serverNames is one server's part of Names.
type serverNames struct {
	Member
	back map[string]string // exposed local name -> the server's own
}

// NewNames makes the names of the members, after Check finds nothing
// wrong with them; else the error joins Check's.
func NewNames(members []Member) (*Names, error) {
	if errs := Check(members); len(errs) > 0 {
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = e
		}
		return nil, errors.Join(out...)
	}
	n := &Names{members: map[string]*serverNames{}, folded: map[string]string{}}
	for _, m := range members {
		mm := &serverNames{Member: m, back: map[string]string{}}
		mm.Rename = maps.Clone(m.Rename)
		mm.Allow, mm.Deny = slices.Clone(m.Allow), slices.Clone(m.Deny)
		for from, to := range m.Rename {
			mm.back[to] = from
		}
		n.members[m.Name] = mm
		n.folded[strings.ToLower(m.Name)] = m.Name
		n.order = append(n.order, m.Name)
	}
	slices.Sort(n.order)
	return n, nil
}

// Servers are the members' names, sorted.
func (n *Names) Servers() []string { return slices.Clone(n.order) }

// Has reports whether server is a member.
func (n *Names) Has(server string) bool { _, ok := n.members[server]; return ok }

// Expose is the name the aggregate lists server's tool or prompt name
// under; a Problem instead when it lists it under none: a tool the
// server's filter hides (nil Problem, "" name), a name renamed away from
// by another's rename (ReasonShadowed), or an exposed name clients would
// refuse (ReasonBadName, with the rename that fixes it).
func (n *Names) Expose(kind Kind, server, name string) (string, *Problem) {
	m := n.members[server]
	if m == nil {
		return "", nil
	}
	if kind == KindTool && !m.exposes(name) {
		return "", nil
	}
	local := name
	if to, ok := m.Rename[name]; ok {
		local = to
	} else if from, taken := m.back[name]; taken {
		// The configuration gave this name to another of the server's
		// tools or prompts: that one has it, as routing (Resolve) says.
		taken := func(s string) bool { _, t := m.back[s]; return t || s == name }
		return "", &Problem{Kind: kind, Server: server, Name: name, Exposed: server + Separator + name,
			Reason: ReasonShadowed, Other: server, OtherName: from, Fix: suggest(server, name, taken)}
	}
	if p := badName(kind, server, name, local); p != nil {
		return "", p
	}
	return server + Separator + local, nil
}

// badName is the problem of exposing server's name as local, nil if none.
func badName(kind Kind, server, name, local string) *Problem {
	exposed := server + Separator + local
	if exposedName.MatchString(exposed) {
		return nil
	}
	return &Problem{Kind: kind, Server: server, Name: name, Exposed: exposed, Reason: ReasonBadName,
		Fix: suggest(server, local, nil)}
}

// Resolve is the server and the server's own name behind an exposed tool
// or prompt name. A name that is not exposed, or is a tool the server's
// filter hides, is an error for the client (-32602): a hidden tool cannot
// be called.
func (n *Names) Resolve(kind Kind, exposed string) (server, name string, err error) {
	server, local, ok := strings.Cut(exposed, Separator)
	m := n.members[server]
	switch {
	case !ok || m == nil:
		return "", "", unknownName(kind, exposed, fmt.Sprintf("the names here are SERVER%sNAME, of the servers %s", Separator, strings.Join(n.order, ", ")))
	case !exposedName.MatchString(exposed):
		return "", "", unknownName(kind, exposed, "")
	}
	name = local
	if from, ok := m.back[local]; ok {
		name = from
	} else if _, renamed := m.Rename[local]; renamed {
		return "", "", unknownName(kind, exposed, "")
	}
	if kind == KindTool && !m.exposes(name) {
		return "", "", unknownName(kind, exposed, "")
	}
	return server, name, nil
}

// URIScheme is the scheme of the URIs the aggregate exposes for its
// servers' resources and templates.
const URIScheme = "mcp-bridge"

// ExposeURI is the URI the aggregate lists server's resource URI (or
// template) under: mcp-bridge://SERVER/ then the original, unchanged. A
// prefix, not an encoding, so a template stays a template: a client that
// expands mcp-bridge://fs/file:///{path} gets the prefix and what the
// server's own template would have expanded to, which ResolveURI cuts
// apart again.
func (n *Names) ExposeURI(server, uri string) string {
	return URIScheme + "://" + server + "/" + uri
}

// ResolveURI is the server and its own URI behind an exposed resource
// URI, template, or URI expanded from an exposed template. The scheme
// and the server's name are matched without case (a URI's scheme and
// authority are case-insensitive, and some clients normalise them); the
// rest is the server's, byte for byte.
func (n *Names) ResolveURI(uri string) (server, original string, err error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !strings.EqualFold(scheme, URIScheme) {
		return "", "", invalidParams(fmt.Sprintf("resource %q is not one of this server's: its resources are listed as %s://SERVER/URI", uri, URIScheme))
	}
	authority, original, ok := strings.Cut(rest, "/")
	server, known := n.folded[strings.ToLower(authority)]
	if !ok || !known {
		return "", "", invalidParams(fmt.Sprintf("resource %q names no server of this aggregate (%s)", uri, strings.Join(n.order, ", ")))
	}
	return server, original, nil
}

// suggest is a name that fits where local does not: what clients refuse
// replaced by _, cut to the room left by the server's prefix, made
// unique against taken (the server's other exposed names) by a number.
func suggest(server, local string, taken func(string) bool) string {
	var b strings.Builder
	for _, r := range local {
		switch {
		case r < 128 && localName.MatchString(string(r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" {
		s = "tool"
	}
	room := max(MaxName-len(server)-len(Separator), 1)
	cut := func(s string, n int) string {
		if len(s) > n {
			return strings.TrimRight(s[:n], "_-")
		}
		return s
	}
	out := cut(s, room)
	for i := 2; taken != nil && taken(out); i++ {
		num := fmt.Sprintf("_%d", i)
		out = cut(s, room-len(num)) + num
	}
	return out
}
