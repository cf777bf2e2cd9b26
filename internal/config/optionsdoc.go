package config

// docs/options.md, written from the flag definitions (Config's tags and
// Defaults), so that the reference never drifts from --help:
// TestOptionsDoc fails when the file is stale and rewrites it with
// -update.

import (
	"fmt"
	"io"
	"reflect"
	"strings"
)

// WriteOptionsDoc writes docs/options.md: every flag by topic, as --help
// lists them, each with its variable, its default and its help.
func WriteOptionsDoc(w io.Writer) {
	fmt.Fprint(w, `# Options

<!-- Generated from internal/config's flag definitions: do not edit. After changing a flag, run
go test ./internal/config -run TestOptionsDoc -update -->

Every option is a flag and an environment variable (`+"`MCP_BRIDGE_`"+` + name); flags override
variables. `+"`mcp-bridge --help`"+` lists the same, by topic, the common flags first. An invalid value
stops the bridge (status 2) with one line naming the flag and the variable, never the value: a
token pasted where a variable's name belongs (`+"`--token-env \"$(cat token.txt)\"`"+`) never comes
back in a terminal or a log. The flags that take the NAME of a variable (`+"`--token-env`"+`,
`+"`--jwt-secret-env`"+`, `+"`--hide-env`"+`, `+"`--claim-env`"+`) say so, and show a name only when it
names a variable that is set. An unknown flag gets one line, with the flag it most likely
meant (`+"`-p`: did you mean `--port`?"+`), not the whole help. A word before `+"`--`"+` is refused
(`+"`\"npx\" is not a flag: the MCP server's command goes after --`"+`), so a mistyped command line never
serves a program named after the word.

`)
	var toc []string
	for _, g := range Groups {
		toc = append(toc, fmt.Sprintf("[%s](#%s)", g.Title, anchor(g.Title)))
	}
	fmt.Fprintf(w, "Contents: %s · [The server's environment](#the-servers-environment) · [Version](#version)\n", strings.Join(toc, " · "))
	for _, g := range Groups {
		fmt.Fprintf(w, "\n## %s\n\n| Flag | Variable | Default | Meaning |\n|---|---|---|---|\n", g.Title)
		if g.Name == "server" {
			f, _ := reflect.TypeFor[Config]().FieldByName("Command")
			fmt.Fprintf(w, "| `-- command args…` | `%s` | the demo server | %s |\n", EnvPrefix+f.Tag.Get("env"), cell(f.Tag.Get("help")))
		}
		for _, f := range GroupFlags(g.Name) {
			def := "none"
			switch {
			case f.Default != "":
				def = "`" + f.Default + "`"
			case f.Zero != "":
				def = "`" + f.Zero + "`"
			}
			fmt.Fprintf(w, "| `%s` | `%s` | %s | %s |\n", f.Synopsis(), f.Env, def, cell(f.Help))
		}
	}
	fmt.Fprint(w, `
## The server's environment

The server gets the bridge's environment minus every `+"`MCP_BRIDGE_*`"+` variable, every `+"`--hide-env`"+`
name and every variable named by `+"`--token-env`"+`, `+"`--jwt-secret-env`"+` and `+"`--metrics-token-env`"+`
(and, with `+"`--config`"+`, by any server's `+"`envFrom`"+` or `+"`tokenEnvs`"+`), plus the `+"`--env`"+` entries,
which override. Under `+"`--containment process-group`"+` it also gets `+"`MCP_BRIDGE_CONTAINMENT_MARK`"+`,
random per process, which the bridge uses to find what the server leaves behind
([containment.md](containment.md)); it is no secret and no setting. Servers launched with `+"`npx`"+`
need `+"`PATH`"+` and `+"`HOME`"+`, so pass-through is the default; hide what the server must not see. A
command given by a bare name is looked up in the server's `+"`PATH`"+`, which is the bridge's unless
`+"`--env PATH=…`"+` (or a server's `+"`env`"+`) gives it another, as MCP clients' own spawn does.

## Version

`+"`mcp-bridge version`"+` (or `+"`--version`"+`) prints one line: the version (stamped by a release build
with `+"`-ldflags \"-X main.version=v1.2.3\"`"+`, else the module version from the build information,
else `+"`devel`"+`), the commit, `+"`modified`"+` when the tree had local changes, the Go version and the
system: `+"`mcp-bridge v1.2.3 (commit 0123abc…) go1.26.8 linux/amd64`"+`.
`)
}

// anchor is the id GitHub gives a heading.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// cell is help text as a table cell: a sentence, with | and * escaped.
func cell(help string) string {
	help = strings.NewReplacer("|", `\|`, "*", `\*`).Replace(help)
	if help != "" {
		help = strings.ToUpper(help[:1]) + help[1:]
	}
	return help + "."
}
