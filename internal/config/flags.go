package config

// The command line: a flag for every field of Config, --version, the
// command after --, and the errors of parsing them. Those errors name the
// flag and its variable but never the value given. The flag package's own
// messages quote the value ("invalid value \"…\" for flag -x") and print
// the whole usage after every mistake, so they are silenced and rewritten
// here.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// ErrVersion is Load's error when --version was given; the caller prints
// the version.
var ErrVersion = errors.New("version requested")

// parseFlags sets cfg from args, over what the environment gave it: the
// flags, then the command after --. Any other word before -- is refused
// (a command given without -- used to become the command, so that
// "mcp-bridge version" served a program named version).
func parseFlags(cfg *Config, args []string, usage io.Writer) error {
	fs := flag.NewFlagSet("mcp-bridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var failed string // the field whose value did not parse
	bindFlags(fs, cfg, &failed)
	version := fs.Bool("version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			PrintUsage(usage)
			return err
		}
		return flagError(err, failed)
	}
	if *version {
		return ErrVersion
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil
	}
	if n := len(args) - len(rest); n == 0 || args[n-1] != "--" {
		return strayWord(fs, args[:n], rest[0])
	}
	cfg.Command = rest
	return nil
}

// bindFlags makes a flag of every field of cfg with a flag tag, holding
// the value the field holds (what the environment gave, or for --help the
// defaults), so flags override the environment. A pointer field that is
// nil gets a variable of its own, which the field points to once the flag
// is given. With failed set, each flag records the field it sets in
// *failed when it cannot parse what it is given.
func bindFlags(fs *flag.FlagSet, cfg *Config, failed *string) {
	v := reflect.ValueOf(cfg).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("flag")
		if name == "" || name == "-" {
			continue
		}
		help := f.Tag.Get("help") + " (env " + EnvPrefix + f.Tag.Get("env") + ")"
		target, given := v.Field(i), func() {}
		if target.Kind() == reflect.Pointer {
			if target.IsNil() {
				field, fresh := target, reflect.New(f.Type.Elem())
				given = func() { field.Set(fresh) }
				target = fresh
			}
			target = target.Elem()
		}
		value := stdValue(target.Addr().Interface(), f.Name)
		if failed != nil {
			value = recorded(value, f.Name, failed, given)
		}
		fs.Var(value, name, help)
	}
}

// stdValue is the flag package's own value for a variable at p, made on a
// scratch set: its type gives --help its "int", "duration" and defaults.
func stdValue(p any, field string) flag.Value {
	scratch := flag.NewFlagSet("", flag.ContinueOnError)
	switch p := p.(type) {
	case *string:
		scratch.StringVar(p, "v", *p, "")
	case *int:
		scratch.IntVar(p, "v", *p, "")
	case *int64:
		scratch.Int64Var(p, "v", *p, "")
	case *bool:
		scratch.BoolVar(p, "v", *p, "")
	case *float64:
		scratch.Float64Var(p, "v", *p, "")
	case *time.Duration:
		scratch.DurationVar(p, "v", *p, "")
	case *[]string:
		return &listFlag{p: p}
	default:
		panic("config: no flag type for field " + field)
	}
	return scratch.Lookup("v").Value
}

// recordedValue is a flag's value that notes which field it sets when it
// cannot parse what it is given, so that the error can name the flag and
// its variable without the value, and calls given once it has parsed.
type recordedValue struct {
	flag.Value
	field  string
	failed *string
	given  func()
}

func (r *recordedValue) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		*r.failed = r.field
		return err
	}
	r.given()
	return nil
}

func (r *recordedValue) String() string {
	if r == nil || r.Value == nil {
		return ""
	}
	return r.Value.String()
}

// recordedBool is a recordedValue of a true/false flag, which takes no
// separate argument.
type recordedBool struct{ *recordedValue }

func (recordedBool) IsBoolFlag() bool { return true }

func recorded(v flag.Value, field string, failed *string, given func()) flag.Value {
	r := &recordedValue{Value: v, field: field, failed: failed, given: given}
	if isBool(v) {
		return recordedBool{r}
	}
	return r
}

func isBool(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// listFlag is a repeatable flag; the first use replaces what the
// environment gave, later ones append.
type listFlag struct {
	p   *[]string
	set bool
}

func (l *listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listFlag) Set(s string) error {
	if !l.set {
		*l.p, l.set = nil, true
	}
	*l.p = append(*l.p, s)
	return nil
}

// helpHint ends every command-line error: one line, then where the flags
// are listed, rather than the whole usage.
const helpHint = "; run mcp-bridge --help for the flags"

var flagNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// flagError rewrites an error of the flag package without the value it
// quotes. failed is the field whose value did not parse, if that was it.
func flagError(err error, failed string) error {
	if failed != "" {
		f, _ := reflect.TypeFor[Config]().FieldByName(failed)
		return fmt.Errorf("invalid %s: cannot parse it as %s", describe(failed), kindOf(f.Type))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if flagNameRE.MatchString(name) {
			return fmt.Errorf("unknown flag --%s%s", name, helpHint)
		}
		return errors.New("unknown flag" + helpHint)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok && flagNameRE.MatchString(name) {
		return fmt.Errorf("--%s needs a value%s", name, helpHint)
	}
	return errors.New("bad flag syntax" + helpHint)
}

// strayWord refuses a word before -- (after the flags in before): the
// server's command goes after --, and a true/false flag takes its value
// after =. The word is shown, as the command it most likely is, except
// after a true/false flag, where it stands in a value's place.
func strayWord(fs *flag.FlagSet, before []string, word string) error {
	if n := len(before); n > 0 {
		name := strings.TrimLeft(before[n-1], "-")
		if f := fs.Lookup(name); f != nil && !strings.Contains(name, "=") && isBool(f.Value) {
			// Not the word: it stands where a value would.
			return fmt.Errorf("--%s takes no separate value: a true/false flag takes it after =, as in --%s=false%s", name, name, helpHint)
		}
	}
	return fmt.Errorf("%q is not a flag: the MCP server's command goes after --, as in mcp-bridge [flags] -- %s [args...] "+
		"(subcommands, given first: mcp-bridge version, mcp-bridge demo-server, mcp-bridge pin -- CMD, mcp-bridge sandbox check [flags] -- CMD)", word, word)
}

// PrintUsage prints the usage, two examples, and every flag grouped by
// topic (Groups), GNU-style as the README writes them, each with its
// variable and the default the bridge has without any MCP_BRIDGE_*
// variable (Defaults): the environment's values (an --env K=V among them)
// are never shown.
func PrintUsage(w io.Writer) {
	def := Defaults()
	fs := flag.NewFlagSet("mcp-bridge", flag.ContinueOnError)
	bindFlags(fs, &def, nil)
	fmt.Fprint(w, `Usage: mcp-bridge [flags] [-- command [args...]]
       mcp-bridge version
       mcp-bridge demo-server
       mcp-bridge pin -- command [args...]
       mcp-bridge sandbox check [flags] -- command [args...]

Serves a stdio MCP server over Streamable HTTP (and the legacy HTTP+SSE
transport), to MCP 2025 sessions and stateless 2026-07-28 clients alike.
Without a command it serves the built-in demo server.

Examples:
  mcp-bridge -- npx -y @modelcontextprotocol/server-everything
  MY_TOKEN=$(openssl rand -hex 32) mcp-bridge --host 0.0.0.0 --token-env MY_TOKEN --mode shared -- ./my-server --flag

Every flag can also be set with its variable (flags win).
`)
	t := reflect.TypeFor[Config]()
	for _, g := range Groups {
		fmt.Fprintf(w, "\n%s:\n", g.Title)
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("flag")
			if f.Tag.Get("group") != g.Name || name == "" || name == "-" {
				continue
			}
			printFlag(w, fs.Lookup(name), f.Tag.Get("help"), EnvPrefix+f.Tag.Get("env"))
		}
		if g.Name == "log" {
			fmt.Fprint(w, "  --version\n      print the version, commit and Go version, and exit (also: mcp-bridge version)\n")
		}
	}
}

// printFlag prints one flag of PrintUsage: its name and the kind of value
// it takes, then its help, variable and default, wrapped.
func printFlag(w io.Writer, f *flag.Flag, help, env string) {
	kind, _ := flag.UnquoteUsage(f)
	if isBool(f.Value) {
		kind = ""
	}
	line := "  --" + f.Name
	if kind != "" {
		line += " " + strings.ToUpper(kind)
	}
	fmt.Fprintln(w, line)
	tail := "env " + env
	if d := f.DefValue; d != "" && d != "[]" && d != "0" && d != "false" && d != "0s" {
		tail = "default " + d + "; " + tail
	}
	fmt.Fprint(w, wrap(help+" ("+tail+")", "      ", 78))
}

// wrap breaks text into lines of at most width columns, each starting
// with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}
