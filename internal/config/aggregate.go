package config

// The aggregate endpoint in the --config file: which servers it serves
// (the top-level "aggregate", or --aggregate), and each server's part in
// it ("rename" and "tools"). The rules of the names themselves are the
// aggregate package's (aggregate.Check): here they are run at load and
// their errors given the file's name.

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcp-bridge/mcp-bridge/aggregate"
)

// toolsEntry is a server's "tools": which of its tools the aggregate
// exposes, by their own names, with the tool policy's globs.
type toolsEntry struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// aggregateSet is the enabled servers the aggregate endpoint serves, by
// name; nil when it serves none. The file's "aggregate" decides when it
// is given (true: every server; false: none; a list: those named, a
// disabled one left out); else --aggregate (flag) does, for every server.
func aggregateSet(fe *fileErrors, f serversFile, flag bool, enabled map[string]serverEntry) map[string]bool {
	all := func() map[string]bool {
		set := map[string]bool{}
		for name := range enabled {
			set[name] = true
		}
		return set
	}
	raw := f.Aggregate
	if len(raw) == 0 || string(raw) == "null" {
		if flag {
			return nonEmpty(fe, all())
		}
		return nil
	}
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		if on {
			return nonEmpty(fe, all())
		}
		return nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		fe.addField("aggregate", "want true, false or an array of the names of servers in \"mcpServers\"")
		return nil
	}
	set := map[string]bool{}
	for i, name := range names {
		_, known := f.MCPServers[name]
		switch {
		case !known:
			fe.addField("aggregate", "%sno server %q in \"mcpServers\"", entry(i, len(names)), name)
		case set[name]:
			fe.addField("aggregate", "%s%q is listed twice", entry(i, len(names)), name)
		}
		if _, on := enabled[name]; on {
			set[name] = true
		}
	}
	return nonEmpty(fe, set)
}

// nonEmpty is set, reporting an aggregate of no server.
func nonEmpty(fe *fileErrors, set map[string]bool) map[string]bool {
	if len(set) == 0 {
		fe.addField("aggregate", "no enabled server to serve at the aggregate endpoint")
		return nil
	}
	return set
}

// aggregateMember is server name's part in the aggregate.
func aggregateMember(name string, e serverEntry) *aggregate.Member {
	m := &aggregate.Member{Name: name, Rename: e.Rename}
	if e.Tools != nil {
		m.Allow, m.Deny = e.Tools.Allow, e.Tools.Deny
	}
	return m
}

// checkServerNames checks a server's "rename" and "tools", in the
// aggregate or not: a setting that waits for the server to join it is
// still one a person wrote, and a mistake in it is told now.
func checkServerNames(sc *serverCheck, bad fieldReport) {
	for _, e := range aggregateMember(sc.s.Name, sc.e).Check() {
		bad(e.Field, "%s", e.Msg)
	}
}

// checkAggregateNames checks the names of the servers of the aggregate
// as a set (aggregate.CheckServerNames).
func checkAggregateNames(fe *fileErrors, aggregated map[string]bool) {
	for _, e := range aggregate.CheckServerNames(slices.Sorted(maps.Keys(aggregated))) {
		fe.add(e.Server, e.Field, "%s", e.Msg)
	}
}

// AggregateMembers are the servers of specs the aggregate endpoint
// serves, in the order of specs (by name); none when it is off.
func AggregateMembers(specs []ServerSpec) []aggregate.Member {
	var out []aggregate.Member
	for _, s := range specs {
		if s.Aggregate != nil {
			out = append(out, *s.Aggregate)
		}
	}
	return out
}
