#!/bin/sh
# Draws docs/packages.svg: the import graph of mcp-bridge's packages (their
# non-test files, as built on Linux) and the third-party modules each one
# imports directly, read from `go list`. Needs Graphviz's dot (Debian:
# apt-get install graphviz). Run from the repository root:
#
#	sh docs/packages.sh
set -e
mod=$(go list -m)
{
	cat <<'HEAD'
digraph packages {
  rankdir=TB; nodesep=0.25; ranksep=0.5;
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];
  edge [color="#555555", arrowsize=0.6];
HEAD
	go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... | awk -v mod="$mod" '
	function name(p) { sub("^" mod "/", "", p); return p }
	# A third-party import as its module (the first three path elements:
	# github.com/owner/repo, golang.org/x/name); "" for the standard library.
	function module(p,   n, e) {
		n = split(p, e, "/")
		if (e[1] !~ /\./) return ""
		return n >= 3 ? e[1] "/" e[2] "/" e[3] : p
	}
	{
		from = name($1)
		extra = (from ~ /test/) ? ", style=\"rounded,dashed\", fillcolor=white" : ""
		printf "  \"%s\" [label=\"%s\"%s];\n", from, from, extra
		for (i = 2; i <= NF; i++) {
			if (index($i, mod "/") == 1) {
				printf "  \"%s\" -> \"%s\";\n", from, name($i)
			} else if ((m = module($i)) != "") {
				printf "  \"%s\" [shape=plaintext, style=\"\", fontcolor=\"#777777\", fontsize=9];\n", m
				printf "  \"%s\" -> \"%s\" [color=\"#c8c8c8\"];\n", from, m
			}
		}
	}' | sort -u
	echo "}"
} | dot -Tsvg -o docs/packages.svg
