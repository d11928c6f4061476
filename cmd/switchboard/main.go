// Command switchboard is the gateway: `switchboard serve` (the default) runs it; the other subcommands administer
// it. Every subcommand accepts --config PATH (or SWITCHBOARD_CONFIG).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	sbwire "github.com/switchboard-ai/switchboard/wire"
)

const usage = `usage: switchboard [--config PATH] [command]

commands:
  serve                     run the gateway (the default)
  migrate                   bring the database schema up to date
  config check              validate the configuration and exit
  keys create --name NAME [--management] [--workspace ID] [--limit USD]
                            create an API key; prints only the key
  members add --email EMAIL [--first-name F] [--last-name L] [--role org:admin|org:member]
                            add an organization member; prints the member id
  workspaces create --name NAME [--slug SLUG]
                            create a workspace; prints its id
  credits add USD           top up the organization's credits (credits.enabled); prints the balance
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a command line that does not parse; it exits with 2.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	configPath, args, err := extractConfigFlag(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if configPath == "" {
		configPath = getenv("SWITCHBOARD_CONFIG")
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cfg, err := sbwire.LoadConfig(configPath, getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := newLogger(cfg.Log, stderr)
	slog.SetDefault(log)

	switch cmd {
	case "serve":
		err = serve(ctx, cfg, log, args)
	case "migrate":
		err = withAdmin(ctx, cfg, log, func(*sbwire.Admin) error {
			log.Info("database schema is up to date")
			return nil
		})
	case "config":
		if len(args) != 1 || args[0] != "check" {
			err = errUsage
			break
		}
		fmt.Fprintf(stdout, "configuration OK: %d providers, %d models, database %s\n",
			len(cfg.Providers), cfg.Catalog.Len(), dialectOf(cfg.Database.URL))
	default:
		sub, ok := subcommands[cmd]
		if !ok {
			err = errUsage
			break
		}
		err = sub.run(ctx, cfg, log, args, stdout)
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprint(stderr, usage)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// extractConfigFlag takes --config PATH (or --config=PATH) from anywhere on the command line.
func extractConfigFlag(args []string) (string, []string, error) {
	var path string
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config" || a == "-config":
			if i+1 >= len(args) {
				return "", nil, errors.New("--config needs a path")
			}
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			_, path, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	return path, rest, nil
}

func newLogger(cfg sbwire.LogConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(httpapi.LogHandler(h))
}

func dialectOf(url string) string {
	if strings.HasPrefix(url, "sqlite:") {
		return "SQLite (" + strings.TrimPrefix(url, "sqlite:") + ")"
	}
	return "PostgreSQL"
}

func serve(ctx context.Context, cfg sbwire.Config, log *slog.Logger, args []string) error {
	if len(args) > 0 {
		return errUsage
	}
	gw, cleanup, err := sbwire.InitializeGateway(ctx, cfg, log, app.SystemEnv())
	if err != nil {
		return err
	}
	defer cleanup()
	if cfg.Bootstrap != "" {
		created, err := gw.Accounts.EnsureManagementKey(ctx, cfg.Bootstrap)
		if err != nil {
			return fmt.Errorf("bootstrap management key: %w", err)
		}
		if created {
			log.Info("created the management key given by SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY")
		}
	}
	if has, err := gw.Accounts.HasManagementKey(ctx); err != nil {
		return err
	} else if !has {
		log.Info("no management key exists yet; create one with `switchboard keys create --management --name admin`")
	}
	return gw.Server.Run(ctx)
}

func withAdmin(ctx context.Context, cfg sbwire.Config, log *slog.Logger, f func(*sbwire.Admin) error) error {
	admin, cleanup, err := sbwire.InitializeAdmin(ctx, cfg, log, app.SystemEnv())
	if err != nil {
		return err
	}
	defer cleanup()
	return f(admin)
}

// subcommand is an administrative "<group> <verb> [flags]" command that prints one line.
type subcommand struct {
	verb string
	// args is how many positional arguments follow the flags.
	args int
	// define declares the flags and returns what runs once they are parsed.
	define func(fs *flag.FlagSet) func(ctx context.Context, a *sbwire.Admin) (string, error)
}

func (s subcommand) run(ctx context.Context, cfg sbwire.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != s.verb {
		return errUsage
	}
	fs := flag.NewFlagSet(s.verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	do := s.define(fs)
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != s.args {
		return errUsage
	}
	return withAdmin(ctx, cfg, log, func(a *sbwire.Admin) error {
		out, err := do(ctx, a)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, out)
		return nil
	})
}

// subcommands are the administrative commands, by group.
var subcommands = map[string]subcommand{
	"keys": {verb: "create", define: func(fs *flag.FlagSet) func(context.Context, *sbwire.Admin) (string, error) {
		name := fs.String("name", "", "")
		management := fs.Bool("management", false, "")
		workspace := fs.String("workspace", "", "")
		limit := fs.String("limit", "", "")
		return func(ctx context.Context, a *sbwire.Admin) (string, error) {
			spec := account.KeySpec{Name: *name, Management: *management, WorkspaceID: *workspace}
			if *limit != "" {
				m, err := domain.ParseUSD(*limit)
				if err != nil {
					return "", fmt.Errorf("--limit: %w", err)
				}
				spec.Limit = &m
			}
			_, secret, err := a.Accounts.CreateKey(ctx, account.Principal{}, spec)
			return secret, err
		}
	}},
	"members": {verb: "add", define: func(fs *flag.FlagSet) func(context.Context, *sbwire.Admin) (string, error) {
		email := fs.String("email", "", "")
		first := fs.String("first-name", "", "")
		last := fs.String("last-name", "", "")
		role := fs.String("role", string(account.RoleMember), "")
		return func(ctx context.Context, a *sbwire.Admin) (string, error) {
			m, err := a.Accounts.AddMember(ctx, *email, nonEmpty(*first), nonEmpty(*last), account.Role(*role))
			return m.ID, err
		}
	}},
	"credits": {verb: "add", args: 1, define: func(fs *flag.FlagSet) func(context.Context, *sbwire.Admin) (string, error) {
		return func(ctx context.Context, a *sbwire.Admin) (string, error) {
			amount, err := domain.ParseUSD(fs.Arg(0))
			if err != nil {
				return "", fmt.Errorf("USD: %w", err)
			}
			if err := a.Credits.AddCredits(ctx, amount); err != nil {
				return "", err
			}
			total, used, err := a.Credits.Credits(ctx)
			return fmt.Sprintf("total_credits %s, total_usage %s", total.Decimal(), used.Decimal()), err
		}
	}},
	"workspaces": {verb: "create", define: func(fs *flag.FlagSet) func(context.Context, *sbwire.Admin) (string, error) {
		name := fs.String("name", "", "")
		slug := fs.String("slug", "", "")
		return func(ctx context.Context, a *sbwire.Admin) (string, error) {
			ws, err := a.Accounts.CreateWorkspace(ctx, *name, *slug)
			return ws.ID, err
		}
	}},
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
