// Command switchboard is the gateway: `switchboard serve` (the default) runs it; the other commands administer
// it. Every command accepts --config PATH (or SWITCHBOARD_CONFIG) and -h/--help, which prints the command's help
// and does nothing else. Usage errors exit with 2, failures with 1.
//
// This package parses the command line and prints; every operation is a function of the wire package.
package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	sbwire "github.com/switchboard-ai/switchboard/wire"
)

// Set at build time: go build -ldflags "-X main.version=... -X main.commit=... -X main.date=..." (see the Makefile).
var version, commit, date string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	code := run(ctx, os.Args, env, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command line that does not parse: the message, then the usage, exit code 2.
type usageError struct {
	msg, usage string
}

func (e *usageError) Error() string { return e.msg }

// cli is what a command was given and where it prints.
type cli struct {
	ctx            context.Context
	self           string // how the binary was invoked, for hints
	configPath     string
	env            map[string]string // the environment
	stdout, stderr io.Writer
}

// command is one command: its words, its synopsis and flags, and what it does once they are parsed.
type command struct {
	name    string // "keys create"
	args    string // synopsis after the name
	summary string
	// nargs is how many positional arguments follow the flags.
	nargs int
	// define declares the flags and returns the action, which runs once they parsed.
	define func(fs *flag.FlagSet) func(c *cli, pos []string) error
}

func commands() []*command {
	return []*command{
		{name: "serve", summary: "run the gateway (the default): migrates the database (an SQLite file is created), then listens; SIGINT/SIGTERM drain",
			define: func(*flag.FlagSet) func(*cli, []string) error { return serve }},
		{name: "migrate", summary: "bring the database's schema up to date (an SQLite file is created; a PostgreSQL database must exist)",
			define: func(*flag.FlagSet) func(*cli, []string) error { return migrate }},
		{name: "config check", summary: "run every check serve runs on the configuration, and print what it would serve",
			define: func(*flag.FlagSet) func(*cli, []string) error { return configCheck }},
		{name: "health", args: "[--url URL]", define: health,
			summary: "exit 0 when the gateway on this host answers /readyz with 200, 1 otherwise (the container health check)"},
		{name: "version", summary: "print the version, commit, build date and Go version",
			define: func(*flag.FlagSet) func(*cli, []string) error { return printVersion }},
		{name: "keys create", args: "--name NAME [--management] [--workspace ID] [--limit USD]",
			summary: "create an API key; prints only the key, shown this once", define: keysCreate},
		{name: "keys list", args: "[--include-disabled] [--workspace ID]", summary: "list the API keys, newest first", define: keysList},
		{name: "keys disable", args: "HASH", nargs: 1, summary: "disable an API key by its hash (see keys list)", define: keysDisable},
		{name: "members add", args: "--email EMAIL [--first-name F] [--last-name L] [--role org:admin|org:member]",
			summary: "add an organization member; prints the member id", define: membersAdd},
		{name: "members list", summary: "list the organization's members", define: membersList},
		{name: "workspaces create", args: "--name NAME [--slug SLUG]", summary: "create a workspace; prints its id", define: workspacesCreate},
		{name: "credits add", args: "USD", nargs: 1, summary: "top up the organization's credits (credits.enabled); prints the balance",
			define: creditsAdd},
		{name: "spool requeue", summary: "put the generation entries the database refused (quarantine.log) back in the spool " +
			"for the next serve; with that gateway stopped",
			define: func(*flag.FlagSet) func(*cli, []string) error { return spoolRequeue }},
	}
}

func globalUsage(cmds []*command) string {
	var b strings.Builder
	b.WriteString("usage: switchboard [--config PATH] [command] [flags]\n\ncommands:\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\t%s\n", c.name, c.summary)
	}
	_ = w.Flush()
	b.WriteString("\n`switchboard COMMAND --help` describes a command. --config PATH (or SWITCHBOARD_CONFIG) names the\n" +
		"configuration file; without one, the defaults and the SWITCHBOARD_* environment apply.\n")
	return b.String()
}

func (c *command) usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", strings.TrimSpace("switchboard "+c.name+" "+c.args), c.summary)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	b.WriteString("  --config PATH\n    \tthe configuration file (or SWITCHBOARD_CONFIG)\n")
	return b.String()
}

func run(ctx context.Context, argv []string, env map[string]string, stdout, stderr io.Writer) int {
	self := "switchboard"
	if len(argv) > 0 {
		self = invokedAs(argv[0])
	}
	c := &cli{ctx: ctx, self: self, env: env, stdout: stdout, stderr: stderr}
	err := c.dispatch(commands(), argv[1:])
	var ue *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "switchboard: %s\n\n%s", ue.msg, cmp.Or(ue.usage, "`switchboard --help` lists the commands.\n"))
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// dispatch finds the command, parses its flags, loads the configuration and runs it. Help, anywhere on the
// line, prints and returns flag.ErrHelp before anything else happens.
func (c *cli) dispatch(cmds []*command, args []string) error {
	args, err := c.extractConfig(args)
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	if len(args) == 0 {
		args = []string{"serve"}
	}
	if args[0] == "help" || isHelp(args[0]) {
		if len(args) > 1 && !isHelp(args[0]) { // help COMMAND
			args = append(args[1:], "--help")
		} else {
			fmt.Fprint(c.stdout, globalUsage(cmds))
			return flag.ErrHelp
		}
	}
	cmd, rest := find(cmds, args)
	if cmd == nil {
		if members := group(cmds, args[0]); len(members) > 0 && slices.ContainsFunc(args[1:], isHelp) {
			fmt.Fprint(c.stdout, groupUsage(members))
			return flag.ErrHelp
		}
		return unknown(cmds, args)
	}
	fs := flag.NewFlagSet("switchboard "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	action := cmd.define(fs)
	if slices.ContainsFunc(rest, isHelp) {
		fmt.Fprint(c.stdout, cmd.usage(fs))
		return flag.ErrHelp
	}
	if err := fs.Parse(rest); err != nil {
		return &usageError{msg: cmd.name + ": " + err.Error(), usage: cmd.usage(fs)}
	}
	if fs.NArg() != cmd.nargs {
		msg := fmt.Sprintf("%s: takes %d argument(s) (%s), got %d", cmd.name, cmd.nargs, cmd.args, fs.NArg())
		if cmd.nargs == 0 {
			msg = fmt.Sprintf("%s: unexpected argument %q", cmd.name, fs.Arg(0))
		}
		return &usageError{msg: msg, usage: cmd.usage(fs)}
	}
	if err := missingFlags(cmd, fs); err != nil {
		return err
	}
	if err := notUTF8(cmd, fs); err != nil {
		return err
	}
	return action(c, fs.Args())
}

// notUTF8 refuses a flag's value or an argument that is not UTF-8, as the API refuses such a string: SQLite would
// keep it as it came, and PostgreSQL refuse it with an error of its own.
func notUTF8(cmd *command, fs *flag.FlagSet) error {
	var bad string
	fs.Visit(func(f *flag.Flag) {
		if bad == "" && !utf8.ValidString(f.Value.String()) {
			bad = "--" + f.Name
		}
	})
	for i, a := range fs.Args() { // as many as the synopsis names (nargs)
		if bad == "" && !utf8.ValidString(a) {
			bad = strings.Fields(cmd.args)[i]
		}
	}
	if bad == "" {
		return nil
	}
	return &usageError{msg: fmt.Sprintf("%s: %s is not valid UTF-8", cmd.name, bad), usage: cmd.usage(fs)}
}

// invokedAs is how the operator runs the binary, for the hints that name a command: the path it was run by
// ("/switchboard" in the container image, ./bin/switchboard, /tmp/switchboard), `go run ./cmd/switchboard` for a
// binary go run built (make run), and switchboard otherwise.
func invokedAs(argv0 string) string {
	switch {
	case filepath.Base(argv0) != "switchboard" || !strings.Contains(argv0, "/"):
		return "switchboard"
	case builtByGoRun(filepath.Dir(argv0)):
		return "go run ./cmd/switchboard"
	}
	return argv0
}

// builtByGoRun says whether dir is where go run puts the binary it runs, told by its shape rather than by a
// folder it may be under: its work folder, $GOTMPDIR/go-build<n>/b001/exe (the temporary folder by default; gone
// once it stops), or since Go 1.24 its build cache, $GOCACHE/<2 hex>/<64 hex>-d, where a second go run of the
// same build runs it from.
func builtByGoRun(dir string) bool {
	if filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build") {
		return true
	}
	h, ok := strings.CutSuffix(filepath.Base(dir), "-d")
	_, err := hex.DecodeString(h)
	return ok && err == nil && len(h) == 64 && filepath.Base(filepath.Dir(dir)) == h[:2]
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// find matches the longest command name at the start of args.
func find(cmds []*command, args []string) (*command, []string) {
	for _, cmd := range cmds {
		words := strings.Fields(cmd.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return cmd, args[len(words):]
		}
	}
	return nil, nil
}

// group is the commands whose first word is name ("keys": keys create, keys list, keys disable).
func group(cmds []*command, name string) []*command {
	var out []*command
	for _, cmd := range cmds {
		if first, _, ok := strings.Cut(cmd.name, " "); ok && first == name {
			out = append(out, cmd)
		}
	}
	return out
}

// groupUsage is the help of a group: each of its commands' synopsis and summary.
func groupUsage(members []*command) string {
	var b strings.Builder
	b.WriteString("usage:\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range members {
		fmt.Fprintf(w, "  %s\t%s\n", strings.TrimSpace("switchboard "+c.name+" "+c.args), c.summary)
	}
	_ = w.Flush()
	b.WriteString("\n`switchboard COMMAND --help` describes a command.\n")
	return b.String()
}

// unknown says what was not understood: a command, or a verb of a known group.
func unknown(cmds []*command, args []string) error {
	var verbs []string
	for _, cmd := range group(cmds, args[0]) {
		_, verb, _ := strings.Cut(cmd.name, " ")
		verbs = append(verbs, verb)
	}
	switch {
	case len(verbs) == 0:
		return &usageError{msg: fmt.Sprintf("unknown command %q", args[0])}
	case len(args) == 1:
		return &usageError{msg: fmt.Sprintf("%s: which one? %s", args[0], strings.Join(verbs, ", "))}
	}
	return &usageError{msg: fmt.Sprintf("unknown command %q; %s takes %s", args[0]+" "+args[1], args[0], strings.Join(verbs, ", "))}
}

// missingFlags refuses a command whose required flags (shown without brackets in its synopsis) are absent.
func missingFlags(cmd *command, fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, word := range strings.Fields(cmd.args) {
		if name, ok := strings.CutPrefix(word, "--"); ok && !set[name] {
			return &usageError{msg: fmt.Sprintf("%s: --%s is required", cmd.name, name), usage: cmd.usage(fs)}
		}
	}
	return nil
}

// extractConfig takes --config PATH (or --config=PATH) from anywhere on the command line.
func (c *cli) extractConfig(args []string) ([]string, error) {
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config" || a == "-config":
			if i+1 >= len(args) {
				return nil, errors.New("--config needs a path")
			}
			c.configPath = args[i+1]
			i++
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			_, c.configPath, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	if c.configPath == "" {
		c.configPath = c.env["SWITCHBOARD_CONFIG"]
	}
	return rest, nil
}

func (c *cli) config() (sbwire.Config, error) {
	return sbwire.LoadStartConfig(c.configPath, func(k string) string { return c.env[k] })
}

// unknownEnv is the SWITCHBOARD_* variables of the environment that nothing reads (typos, most likely).
func (c *cli) unknownEnv() []string { return sbwire.UnknownEnv(maps.Keys(c.env)) }

// withConfig loads the configuration and the logger, then runs f.
func (c *cli) withConfig(f func(cfg sbwire.Config, log *slog.Logger) error) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	log := sbwire.NewLogger(cfg.Log, c.stderr)
	for _, name := range c.unknownEnv() {
		log.Warn("no setting reads this environment variable: a typo?", "name", name)
	}
	return f(cfg, log)
}

// withAdmin opens the existing database for an administrative command, saying which one on stderr.
func (c *cli) withAdmin(f func(a *sbwire.Admin) error) error {
	return c.withConfig(func(cfg sbwire.Config, log *slog.Logger) error {
		fmt.Fprintln(c.stderr, "database:", cfg.DescribeDatabase())
		a, cleanup, err := sbwire.OpenAdmin(c.ctx, cfg, log)
		if err != nil {
			return err
		}
		defer cleanup()
		return f(a)
	})
}

func serve(c *cli, _ []string) error {
	return c.withConfig(func(cfg sbwire.Config, log *slog.Logger) error {
		return sbwire.Serve(c.ctx, cfg, log, c.self)
	})
}

func migrate(c *cli, _ []string) error {
	return c.withConfig(func(cfg sbwire.Config, log *slog.Logger) error {
		fmt.Fprintln(c.stderr, "database:", cfg.DescribeDatabase())
		if err := sbwire.Migrate(c.ctx, cfg, log); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "database schema is up to date")
		return nil
	})
}

func configCheck(c *cli, _ []string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	fmt.Fprint(c.stdout, cfg.Summary())
	for _, name := range c.unknownEnv() {
		fmt.Fprintf(c.stderr, "warning: %s: no setting reads this environment variable: a typo?\n", name)
	}
	return nil
}

func health(fs *flag.FlagSet) func(*cli, []string) error {
	target := fs.String("url", "", "the readiness URL (default: /readyz on server.addr, on the loopback interface; over TLS, trusting the configured certificate, when server.tls_cert_file is set)")
	return func(c *cli, _ []string) error {
		u, client := *target, http.DefaultClient
		if u == "" {
			cfg, err := c.config()
			if err != nil {
				return err
			}
			if u, client, err = cfg.Readiness(); err != nil {
				return err
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s %s", u, resp.Status, strings.TrimSpace(string(body)))
		}
		fmt.Fprintf(c.stdout, "%s: %s\n", u, strings.TrimSpace(string(body)))
		return nil
	}
}

func printVersion(c *cli, _ []string) error {
	v, rev, built := version, commit, date
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				rev = s.Value
			case s.Key == "vcs.time" && built == "":
				built = s.Value
			}
		}
		if v == "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
	}
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	fmt.Fprintf(c.stdout, "switchboard %s\ncommit  %s\nbuilt   %s\ngo      %s %s/%s\n", cmp.Or(v, "dev"),
		orUnknown(rev), orUnknown(built), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

func keysCreate(fs *flag.FlagSet) func(*cli, []string) error {
	var r sbwire.KeyRequest
	fs.StringVar(&r.Name, "name", "", "the key's name (1 to 200 characters)")
	fs.BoolVar(&r.Management, "management", false, "a management key (administers keys, members, workspaces), not an inference key")
	fs.StringVar(&r.Workspace, "workspace", "", "an inference key's workspace id (default: the default workspace); a management key takes none")
	fs.StringVar(&r.Limit, "limit", "", "spending limit in USD (default: none)")
	return func(c *cli, _ []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			secret, err := a.CreateKey(c.ctx, r)
			if err == nil {
				fmt.Fprintln(c.stdout, secret)
			}
			return err
		})
	}
}

func keysList(fs *flag.FlagSet) func(*cli, []string) error {
	all := fs.Bool("include-disabled", false, "list disabled keys too")
	workspace := fs.String("workspace", "", "only the keys of this workspace id")
	return func(c *cli, _ []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			keys, err := a.ListKeys(c.ctx, *workspace, *all)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "HASH\tNAME\tLABEL\tKIND\tSTATE\tLIMIT\tUSAGE\tCREATED")
			for _, k := range keys {
				kind, state, limit := "inference", "enabled", "none"
				if k.Management {
					kind = "management"
				}
				if k.Disabled {
					state = "disabled"
				}
				if k.Limit != "" {
					limit = k.Limit
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Hash, k.Name, k.Label, kind, state, limit, k.Usage,
					k.CreatedAt.Format(time.RFC3339))
			}
			return w.Flush()
		})
	}
}

func keysDisable(*flag.FlagSet) func(*cli, []string) error {
	return func(c *cli, pos []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			if err := a.DisableKey(c.ctx, pos[0]); err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, "disabled", pos[0])
			return nil
		})
	}
}

func membersAdd(fs *flag.FlagSet) func(*cli, []string) error {
	var r sbwire.MemberRequest
	fs.StringVar(&r.Email, "email", "", "the member's email (unique)")
	fs.StringVar(&r.FirstName, "first-name", "", "first name")
	fs.StringVar(&r.LastName, "last-name", "", "last name")
	fs.StringVar(&r.Role, "role", "org:member", "org:admin or org:member")
	return func(c *cli, _ []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			id, err := a.AddMember(c.ctx, r)
			if err == nil {
				fmt.Fprintln(c.stdout, id)
			}
			return err
		})
	}
}

func membersList(*flag.FlagSet) func(*cli, []string) error {
	return func(c *cli, _ []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			members, err := a.ListMembers(c.ctx)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tEMAIL\tNAME\tROLE\tCREATED")
			for _, m := range members {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.Email, strings.TrimSpace(m.FirstName+" "+m.LastName), m.Role,
					m.CreatedAt.Format(time.RFC3339))
			}
			return w.Flush()
		})
	}
}

func workspacesCreate(fs *flag.FlagSet) func(*cli, []string) error {
	name := fs.String("name", "", "the workspace's name")
	slug := fs.String("slug", "", "its slug (default: derived from the name)")
	return func(c *cli, _ []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			id, err := a.CreateWorkspace(c.ctx, *name, *slug)
			if err == nil {
				fmt.Fprintln(c.stdout, id)
			}
			return err
		})
	}
}

func creditsAdd(*flag.FlagSet) func(*cli, []string) error {
	return func(c *cli, pos []string) error {
		return c.withAdmin(func(a *sbwire.Admin) error {
			balance, err := a.AddCredits(c.ctx, pos[0])
			if err == nil {
				fmt.Fprintln(c.stdout, balance)
			}
			return err
		})
	}
}

func spoolRequeue(c *cli, _ []string) error {
	return c.withConfig(func(cfg sbwire.Config, log *slog.Logger) error {
		fmt.Fprintln(c.stderr, "spool:", cfg.Generations.SpoolDir)
		n, err := sbwire.RequeueQuarantine(cfg, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%d generation entries moved from the quarantine into the spool; the next serve on it writes them\n", n)
		return nil
	})
}
