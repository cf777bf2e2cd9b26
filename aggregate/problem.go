package aggregate

import (
	"encoding/json"
	"fmt"

	"github.com/mcp-bridge/mcp-bridge/bridge"
)

// Reason is why an entry of a server's list is not exposed.
type Reason string

const (
	// ReasonCollision: another entry has the same exposed name (or URI);
	// all of them are dropped, since a call could reach only one.
	ReasonCollision Reason = "collision"
	// ReasonBadName: the exposed name does not fit what clients accept
	// (^[A-Za-z0-9_-]{1,64}$); a "rename" fixes it.
	ReasonBadName Reason = "bad_name"
	// ReasonShadowed: the server's own name of this entry is the name
	// "rename" gives another of its tools or prompts, which keeps it.
	ReasonShadowed Reason = "shadowed"
)

// A Problem is an entry of a server's list that the aggregate drops, and
// why: the value the log line, the web page and /metrics are made from.
// The rest of the list is served.
type Problem struct {
	Kind    Kind   `json:"kind"`
	Server  string `json:"server"`
	Name    string `json:"name"`    // as the server lists it
	Exposed string `json:"exposed"` // the name (or URI) it would have had
	Reason  Reason `json:"reason"`
	// Other is the server of the entry it collides with or is shadowed
	// by (the same server when a server lists one name twice, or renames
	// another of its tools to it), and OtherName that entry's own name.
	Other     string `json:"other,omitempty"`
	OtherName string `json:"otherName,omitempty"`
	// Fix is a name that a "rename" of Name to it would expose it under
	// (ReasonBadName, ReasonShadowed).
	Fix string `json:"fix,omitempty"`
}

// Message says what was dropped, why, and what fixes it, naming the
// server and the entry: the log line, and the load error of a tool the
// configuration names.
func (p Problem) Message() string {
	switch p.Reason {
	case ReasonBadName:
		why := "has characters clients refuse (they accept letters, digits, _ and -)"
		if len(p.Exposed) > MaxName {
			why = fmt.Sprintf("is %d characters, over the %d clients accept", len(p.Exposed), MaxName)
		}
		return fmt.Sprintf("the %s %q of server %q would be exposed as %q, which %s: add \"rename\": {%s: %s} to the server %q",
			p.Kind, p.Name, p.Server, p.Exposed, why, quote(p.Name), quote(p.Fix), p.Server)
	case ReasonShadowed:
		return fmt.Sprintf("the %s %q of server %q is not exposed: \"rename\" gives its name to the %s %q; rename it too to expose it (\"rename\": {%s: %s})",
			p.Kind, p.Name, p.Server, p.Kind, p.OtherName, quote(p.Name), quote(p.Fix))
	default:
		return fmt.Sprintf("the %s %q of server %q collides with the %s %q of server %q, both exposed as %q: neither is exposed; rename one of them",
			p.Kind, p.Name, p.Server, p.Kind, p.OtherName, p.Other, p.Exposed)
	}
}

// key identifies a problem among a list's, for telling a new one from
// one already reported.
func (p Problem) key() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// invalidParams is the error a client gets for a request the aggregate
// cannot route (-32602, as for an unknown tool or resource).
func invalidParams(msg string) error {
	return &bridge.Error{Kind: bridge.KindInvalid, Code: bridge.CodeInvalidParams, Message: msg}
}

// unknownName is the error of a tool or prompt name the aggregate does
// not expose. A hidden tool gets the same answer as one that does not
// exist.
func unknownName(kind Kind, name, hint string) error {
	msg := fmt.Sprintf("Unknown %s: %s", kind, name)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return invalidParams(msg)
}
