// Package aggregate owns the one MCP server made of several: the names
// it exposes for each server's tools, prompts, resources and templates
// (Names, the only place those names are decided), the lists it merges
// from the servers' own (Catalog), the rewriting of every message between
// a client and the servers (Table), and the coalescing of the servers'
// list changes into re-announcements (Coalescer).
//
// It knows nothing of HTTP or of processes: a server's lists are read
// through a Lister, and messages reach a Table as bytes from whatever
// carries them. It imports bridge for its error type only, and never
// net/http; package aggregate/endpoint serves it. The design, and what is
// still to wire, is in docs/aggregate.md.
package aggregate
