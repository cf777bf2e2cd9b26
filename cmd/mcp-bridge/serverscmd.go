package main

// mcp-bridge servers: the registry API of a running bridge, for scripts
// (internal/registry.Client). The token is never an argument: the
// command takes the NAME of a variable that holds it, as --token-env
// does, and an env value is read from this command's environment, never
// from its arguments, so that neither appears in a process list.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-bridge/mcp-bridge/httpapi"
	"github.com/mcp-bridge/mcp-bridge/internal/registry"
)

// Variables that give the command's defaults.
const (
	adminURLEnv      = "MCP_BRIDGE_ADMIN_URL"
	adminTokenEnvEnv = "MCP_BRIDGE_ADMIN_TOKEN_ENV"
)

const serversUsage = `usage: mcp-bridge servers COMMAND [flags] [NAME] [-- PROGRAM ARGS...]

Lists and changes the servers of a running bridge started with --config,
through its registry API (/admin/servers).

commands:
  list                       every server: its state, mode, endpoint and command
  add NAME [flags] -- PROGRAM [ARGS...]
                             add a server (or: add NAME --file entry.json)
  rm NAME                    remove a server, once its calls in flight are done
  enable NAME, disable NAME  serve it again, or stop serving it (kept in the file)

flags (every command):
  --url URL        the bridge (default $` + adminURLEnv + `, else http://127.0.0.1:8080)
  --token-env NAME the variable holding a registry admin's token (default $` + adminTokenEnvEnv + `)
  --timeout D      how long to wait for the bridge (default 2m)
flags of add:
  --env NAME       give the server the variable NAME, with its value in this
                   command's environment (repeatable); never NAME=value
  --env-from K=VAR give the server K with the value of the bridge's variable VAR
  --cwd DIR, --mode MODE, --disabled
  --file FILE      the entry as JSON, as the config file writes it (- for stdin)
flags of list:
  --json           the API's answer as it is
`

// serversCommand runs mcp-bridge servers ARGS; it returns the exit
// status: 2 for a command line it cannot run, 1 when the bridge refuses.
func serversCommand(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, serversUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub, rest := args[0], args[1:]
	env := envOf(environ)
	fs := flag.NewFlagSet("mcp-bridge servers "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	baseURL := fs.String("url", cmpOr(env[adminURLEnv], "http://127.0.0.1:8080"), "")
	tokenEnv := fs.String("token-env", env[adminTokenEnvEnv], "")
	timeout := fs.Duration("timeout", 2*time.Minute, "")
	asJSON := fs.Bool("json", false, "")
	var envNames, envFrom listFlag
	fs.Var(&envNames, "env", "")
	fs.Var(&envFrom, "env-from", "")
	cwd := fs.String("cwd", "", "")
	mode := fs.String("mode", "", "")
	disabled := fs.Bool("disabled", false, "")
	file := fs.String("file", "", "")
	// The server's own command comes after --; flags may come before or
	// after the name.
	var names, command []string
	if i := slices.Index(rest, "--"); i >= 0 {
		rest, command = rest[:i], rest[i+1:]
	}
	for {
		if err := fs.Parse(rest); err != nil {
			return usageError(stderr, "%v", flagError(err))
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		names, rest = append(names, rest[0]), rest[1:]
	}
	token, err := adminToken(*tokenEnv, env)
	if err != nil {
		return usageError(stderr, "%v", err)
	}
	c := &registry.Client{URL: *baseURL, Token: token}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	needName := func() (string, bool) {
		if len(names) != 1 {
			return "", false
		}
		return names[0], true
	}
	switch sub {
	case "list":
		if len(names) > 0 {
			return usageError(stderr, "list takes no name")
		}
		return printList(ctx, c, *asJSON, stdout, stderr)
	case "add":
		name, ok := needName()
		if !ok {
			return usageError(stderr, "add takes one NAME")
		}
		entry, err := addEntry(name, command, envNames, envFrom, *cwd, *mode, *disabled, *file, env, stdin)
		if err != nil {
			return usageError(stderr, "%v", err)
		}
		res, err := c.Add(ctx, entry)
		return report(stdout, stderr, err, "added %s: %s", name, strings.TrimSuffix(*baseURL, "/")+endpointOf(res))
	case "rm", "enable", "disable":
		name, ok := needName()
		if !ok || command != nil {
			return usageError(stderr, "%s takes one NAME", sub)
		}
		if sub == "rm" {
			_, err = c.Remove(ctx, name)
			return report(stdout, stderr, err, "removed %s", name)
		}
		_, err = c.Act(ctx, name, sub)
		return report(stdout, stderr, err, "%sd %s", sub, name)
	}
	return usageError(stderr, "unknown command %q: want list, add, rm, enable or disable", sub)
}

// adminToken reads the token from the variable named name. The name is
// told in an error only once it is known to be a variable's name: else it
// may be the token itself, given in its place.
func adminToken(name string, env map[string]string) (string, error) {
	switch tok, set := env[name]; {
	case name == "":
		return "", fmt.Errorf("give --token-env NAME (or %s=NAME): the variable that holds a registry admin's token, never the token", adminTokenEnvEnv)
	case !varName.MatchString(name):
		return "", errors.New("--token-env takes the NAME of a variable that holds the token, never the token")
	case !set || tok == "":
		return "", fmt.Errorf("--token-env %s: the variable is not set in this command's environment", name)
	default:
		return tok, nil
	}
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// addEntry is the entry add sends: from --file, or from the flags and
// the command after --.
func addEntry(name string, command, envNames, envFrom []string, cwd, mode string, disabled bool, file string, env map[string]string, stdin io.Reader) (map[string]any, error) {
	entry := map[string]any{}
	if file != "" {
		var data []byte
		var err error
		if file == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, httpapi.MaxRegistryBody+1))
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if err := json.Unmarshal(data, &entry); err != nil {
			return nil, errors.New("--file: not a JSON object of fields (command, args, env, ...)")
		}
	}
	if len(command) > 0 {
		entry["command"], entry["args"] = command[0], command[1:]
	}
	if entry["command"] == nil {
		return nil, errors.New("add needs the server's command, after --: add NAME -- PROGRAM ARGS...")
	}
	if len(envNames) > 0 {
		vals := map[string]any{}
		if m, ok := entry["env"].(map[string]any); ok {
			vals = m
		}
		for _, k := range envNames {
			if strings.Contains(k, "=") || !varName.MatchString(k) {
				return nil, errors.New("--env takes a variable's NAME, whose value is read from this command's environment (so that it never shows in a process list), never NAME=value")
			}
			v, set := env[k]
			if !set {
				return nil, fmt.Errorf("--env %s: the variable is not set in this command's environment", k)
			}
			vals[k] = v
		}
		entry["env"] = vals
	}
	if len(envFrom) > 0 {
		m := map[string]any{}
		for _, kv := range envFrom {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, errors.New("--env-from takes CHILD_VAR=BRIDGE_VAR: the NAME of a variable of the bridge's environment")
			}
			m[k] = v
		}
		entry["envFrom"] = m
	}
	for k, v := range map[string]string{"cwd": cwd, "mode": mode} {
		if v != "" {
			entry[k] = v
		}
	}
	if disabled {
		entry["disabled"] = true
	}
	entry["name"] = name
	return entry, nil
}

func printList(ctx context.Context, c *registry.Client, asJSON bool, stdout, stderr io.Writer) int {
	servers, err := c.List(ctx)
	if err != nil {
		return report(stdout, stderr, err, "")
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Servers []httpapi.ServerState `json:"servers"`
		}{servers})
		return 0
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tMODE\tENDPOINT\tCOMMAND")
	for _, s := range servers {
		var e struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		_ = json.Unmarshal(s.Entry, &e)
		// The API masked the arguments already; the program is shown
		// as it is.
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Health.Status, s.Mode, cmpOr(s.Endpoint, "-"), strings.Join(append([]string{e.Command}, e.Args...), " "))
	}
	_ = w.Flush()
	return 0
}

// endpointOf is the path of the server a change created.
func endpointOf(res httpapi.ChangeResult) string {
	if res.Server == nil {
		return ""
	}
	return res.Server.Endpoint
}

// report prints what a call did, or why the bridge refused it: status 1.
func report(stdout, stderr io.Writer, err error, format string, a ...any) int {
	if err != nil {
		fmt.Fprintf(stderr, "mcp-bridge servers: %v\n", err)
		return 1
	}
	if format != "" {
		fmt.Fprintf(stdout, format+"\n", a...)
	}
	return 0
}

func usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "mcp-bridge servers: "+format+"\n(mcp-bridge servers --help for the usage)\n", a...)
	return 2
}

// flagError is a flag package error without the value it quotes (a
// token given where a name belongs).
func flagError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "invalid value"); i >= 0 {
		if j := strings.Index(msg, " for flag "); j > i {
			return errors.New("invalid value" + msg[j:])
		}
	}
	return err
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// envOf is environ as a map.
func envOf(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
