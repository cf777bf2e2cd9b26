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
	"slices"
	"strings"
	"time"
)

// ErrVersion is Load's error when --version was given; the caller prints
// the version.
var ErrVersion = errors.New("version requested")

// parseFlags sets cfg from args, over what the environment gave it: the
// flags, then the command after --. Any other word before -- is refused
// (a command given without -- used to become the command, so that
// "mcp-bridge version" served a program named version). --help prints
// the usage to usage: the caller's stdout, since help that was asked for
// is output, as GNU tools have it (mcp-bridge --help | grep token).
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
		return flagError(err, failed, args)
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
// quotes. failed is the field whose value did not parse, if that was it;
// args are the arguments, to name a flag as the user wrote it (-p, not
// --p).
func flagError(err error, failed string, args []string) error {
	if failed != "" {
		f, _ := reflect.TypeFor[Config]().FieldByName(failed)
		return fmt.Errorf("invalid %s: cannot parse it as %s", describe(failed), kindOf(f.Type))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if flagNameRE.MatchString(name) {
			hint := ""
			if s := suggestFlag(name); s != "" {
				hint = " (did you mean --" + s + "?)"
			}
			return fmt.Errorf("unknown flag %s%s%s", asWritten(name, args), hint, helpHint)
		}
		return errors.New("unknown flag" + helpHint)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok && flagNameRE.MatchString(name) {
		return fmt.Errorf("%s needs a value%s", asWritten(name, args), helpHint)
	}
	return errors.New("bad flag syntax" + helpHint)
}

// asWritten is the flag name as args spell it, with one dash or two (the
// flag package takes both, and reports one); two when it is not found.
func asWritten(name string, args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		for _, dashes := range []string{"-", "--"} {
			if a == dashes+name || strings.HasPrefix(a, dashes+name+"=") {
				return dashes + name
			}
		}
	}
	return "--" + name
}

// suggestFlag is the flag an unknown one was most likely meant to be, or
// "": one that begins with it (--token: --token-env), one at most two
// edits away (--tokne-env; one for a name of four letters or fewer), or, for one letter, the common flag it
// begins (-p: --port), as other tools' one-letter flags would have it.
func suggestFlag(name string) string {
	var names []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if n := t.Field(i).Tag.Get("flag"); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	names = append(names, "version", "help")
	if len(name) == 1 {
		for _, f := range CommonFlags {
			if f[0] == name[0] {
				return f
			}
		}
		// Else the one flag it begins, if only one does (-v: --version).
		var begun []string
		for _, n := range names {
			if n[0] == name[0] {
				begun = append(begun, n)
			}
		}
		if len(begun) == 1 {
			return begun[0]
		}
		return ""
	}
	// Two edits make a short name another word (--nope is not --mode).
	best, bestDist := "", 3
	if len(name) <= 4 {
		bestDist = 2
	}
	for _, n := range names {
		if len(name) >= 3 && strings.HasPrefix(n, name) {
			return n
		}
		if d := editDistance(name, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
		"(subcommands, given first: mcp-bridge help, mcp-bridge version, mcp-bridge demo-server, mcp-bridge pin -- CMD, mcp-bridge sandbox check [flags] -- CMD)", word, word)
}

// PrintUsage prints the usage, two examples, and every flag grouped by
// topic (Groups), the common ones first, GNU-style, each with its
// placeholder (meta: FILE, NAME, URL, ...), its variable and the default
// the bridge has without any MCP_BRIDGE_* variable (Defaults): the
// environment's values (an --env K=V among them) are never shown.
func PrintUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: mcp-bridge [flags] [-- command [args...]]
       mcp-bridge [flags] --config FILE
       mcp-bridge help | version | demo-server | conformance-server
       mcp-bridge pin -- command [args...]
       mcp-bridge sandbox check [flags] -- command [args...]
       mcp-bridge servers list | add | rm | enable | disable   (a running bridge's --config servers)

Serves a stdio MCP server over Streamable HTTP (and the legacy HTTP+SSE
transport), to MCP 2025 sessions and stateless 2026-07-28 clients alike.
Without a command it serves the built-in demo server. The server's
command goes after --, each argument a word of its own, with no shell.

Examples:
  mcp-bridge -- npx -y @modelcontextprotocol/server-everything
  MY_TOKEN=$(openssl rand -hex 32) mcp-bridge --host 0.0.0.0 --token-env MY_TOKEN --mode shared -- ./my-server --flag

Every flag can also be set with its variable (flags win).
`)
	for _, g := range Groups {
		fmt.Fprintf(w, "\n%s:\n", g.Title)
		for _, f := range GroupFlags(g.Name) {
			fmt.Fprintf(w, "  %s\n", f.Synopsis())
			fmt.Fprint(w, wrap(f.Help+" ("+f.tail()+")", "      ", 78))
		}
		if g.Name == "log" {
			fmt.Fprint(w, "  --version\n      print the version, commit and Go version, and exit (also: mcp-bridge version)\n")
		}
	}
}

// FlagDoc is one flag as --help and docs/options.md present it.
type FlagDoc struct {
	Name    string // without dashes: "token-env"
	Meta    string // the placeholder of its value ("NAME"); "" for a true/false flag
	Env     string // its variable: "MCP_BRIDGE_TOKEN_ENVS"
	Default string // the default as the flag prints it; "" when it has none worth showing
	Zero    string // the default when it is a zero value (false, 0, 0s); "" otherwise
	Help    string
	Bool    bool
}

// Synopsis is the flag as it is typed: --token-env NAME.
func (f FlagDoc) Synopsis() string {
	if f.Meta == "" {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + f.Meta
}

func (f FlagDoc) tail() string {
	if f.Default != "" {
		return "default " + f.Default + "; env " + f.Env
	}
	return "env " + f.Env
}

// GroupFlags are the flags of the group, in the order --help lists them:
// the common ones in CommonFlags' order, the others in Config's.
func GroupFlags(group string) []FlagDoc {
	def := Defaults()
	fs := flag.NewFlagSet("mcp-bridge", flag.ContinueOnError)
	bindFlags(fs, &def, nil)
	var out []FlagDoc
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("flag")
		if f.Tag.Get("group") != group || name == "" || name == "-" {
			continue
		}
		fl := fs.Lookup(name)
		d := FlagDoc{Name: name, Meta: f.Tag.Get("meta"), Env: EnvPrefix + f.Tag.Get("env"), Help: f.Tag.Get("help"), Bool: isBool(fl.Value)}
		if d.Bool {
			d.Meta = ""
		}
		switch v := fl.DefValue; v {
		case "", "[]":
		case "0", "false", "0s":
			d.Zero = v
		default:
			d.Default = v
		}
		out = append(out, d)
	}
	if group == "common" {
		slices.SortStableFunc(out, func(a, b FlagDoc) int {
			return slices.Index(CommonFlags, a.Name) - slices.Index(CommonFlags, b.Name)
		})
	}
	return out
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
