package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/ports"
)

// This file is what the command line calls: cmd imports only this package, and every operation it offers is a
// function or an Admin method here, with plain arguments, over the same use cases the HTTP API runs.

// NewLogger is the gateway's logger: text or JSON as configured, with each request's id on its lines. It becomes
// the process's default (slog.SetDefault), so that what a library logs through the standard log package comes out
// in the same format: go-redis (redis.SetLogger, newRateLimiter), GORM (gormstore's logger), net/http's servers
// (their ErrorLog) and OpenTelemetry (its error handler) are routed to it each by name.
func NewLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	l := slog.New(httpapi.LogHandler(h))
	slog.SetDefault(l)
	return l
}

// DescribeDatabase names the configured database for an operator, without its password.
func (c Config) DescribeDatabase() string { return gormstore.Describe(c.Database.URL) }

// LocalAddr is where a process on this host reaches a server listening on addr: the loopback interface when
// addr names every interface (":8080", "0.0.0.0:8080", "[::]:8080").
func LocalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Readiness is the URL of the server's /readyz for a process on this host, and the client to ask it with: over TLS
// when the server serves TLS, trusting exactly the configured certificate (the loopback address is rarely a name
// the certificate is for; the probe sends nothing secret).
func (c Config) Readiness() (string, *http.Client, error) {
	addr := LocalAddr(c.Server.Addr)
	if c.Server.TLSCertFile == "" {
		return "http://" + addr + "/readyz", http.DefaultClient, nil
	}
	pair, err := tls.LoadX509KeyPair(c.Server.TLSCertFile, c.Server.TLSKeyFile)
	if err != nil {
		return "", nil, fmt.Errorf("server.tls_cert_file: %w", err)
	}
	leaf := pair.Certificate[0]
	pinned := &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // verified below: the server's certificate must be the configured one
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
				return errors.New("the server's certificate is not server.tls_cert_file's")
			}
			return nil
		},
	}
	return "https://" + addr + "/readyz", &http.Client{Transport: &http.Transport{TLSClientConfig: pinned}}, nil
}

// Serve runs the gateway until ctx ends: it migrates, creates the bootstrap management key when asked to, and
// serves. self is how the operator invoked the binary, for the hint on creating a first key.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, self string) (err error) {
	defer floorGC(os.Getenv, HeapFloor, nil)()
	logStart(log, cfg)
	gw, cleanup, err := InitializeGateway(ctx, cfg, log, app.SystemEnv())
	if err != nil {
		return err
	}
	defer func() {
		cleanup() // the workers and the recorder stop: the last records are written, or wait in the spool
		if err == nil {
			log.Info("stopped")
		}
	}()
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
		log.Info(fmt.Sprintf("no management key exists yet; create one with `%s keys create --management --name admin`"+
			" or set SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", self))
	}
	return gw.Server.Run(ctx)
}

// logStart says what a first run needs to know: the configuration file, the database (without its password), the
// models served, and what to do when there are none.
func logStart(log *slog.Logger, cfg Config) {
	file := cfg.File
	if file == "" {
		file = "none (the defaults; give one with --config PATH or SWITCHBOARD_CONFIG)"
	}
	log.Info("configuration", "file", file, "database", cfg.DescribeDatabase())
	var models []string
	for _, mod := range catalog.Modalities {
		for _, m := range cfg.Catalog.List(mod) {
			models = append(models, m.ID)
		}
	}
	switch {
	case len(models) > 0:
		log.Info("serving models", "count", len(models), "models", strings.Join(models, ", "))
	case cfg.File == "":
		log.Warn("serving no models: every inference call is a 404. Give a configuration file with providers and" +
			" models (--config PATH or SWITCHBOARD_CONFIG; see docs/configuration.md), or install espeak-ng" +
			" (apt-get install espeak-ng lame) to serve its local voices as local/espeak without one")
	default:
		log.Warn("serving no models: every inference call is a 404. Add providers and models to the configuration"+
			" file (see docs/configuration.md)", "file", cfg.File)
	}
}

// Migrate creates the database when it does not exist and brings its schema up to date.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) error {
	_, cleanup, err := openDB(ctx, cfg.Database, log, httpapi.Tracing{})
	if err != nil {
		return err
	}
	cleanup()
	return nil
}

// Admin is what the administrative subcommands use.
type Admin struct {
	accounts *app.Accounts
	credits  *app.Credits
}

func newAdmin(accounts *app.Accounts, credits *app.Credits) *Admin {
	return &Admin{accounts: accounts, credits: credits}
}

// OpenAdmin opens the configured database for the administrative commands; it refuses one that does not
// exist or was never migrated, rather than creating it.
func OpenAdmin(ctx context.Context, cfg Config, log *slog.Logger) (*Admin, func(), error) {
	return initializeAdmin(ctx, cfg, log, app.SystemEnv())
}

// KeyRequest is `keys create`'s flags.
type KeyRequest struct {
	Name, Workspace, Limit string
	Management             bool
}

// CreateKey creates a key and returns its secret, shown this once.
func (a *Admin) CreateKey(ctx context.Context, r KeyRequest) (string, error) {
	spec := account.KeySpec{Name: r.Name, Management: r.Management, WorkspaceID: r.Workspace}
	if r.Limit != "" {
		m, err := domain.ParseUSD(r.Limit)
		if err != nil {
			return "", fmt.Errorf("--limit: %w", err)
		}
		spec.Limit = &m
	}
	_, secret, err := a.accounts.CreateKey(ctx, account.Principal{}, spec)
	return secret, plain(err)
}

// KeyRow is one key as `keys list` shows it.
type KeyRow struct {
	Hash, Name, Label, Workspace string
	Management, Disabled         bool
	// Limit is "" when the key has none; Usage is its total spend. Both in USD.
	Limit, Usage string
	CreatedAt    time.Time
}

// ListKeys lists the keys, newest first; workspace narrows it when not empty.
func (a *Admin) ListKeys(ctx context.Context, workspace string, includeDisabled bool) ([]KeyRow, error) {
	var rows []KeyRow
	for {
		page, err := a.accounts.ListKeys(ctx, ports.KeyFilter{WorkspaceID: workspace, IncludeDisabled: includeDisabled, Offset: len(rows)})
		if err != nil || len(page) == 0 {
			return rows, plain(err)
		}
		for _, k := range page {
			r := KeyRow{Hash: k.Hash, Name: k.Name, Label: k.Label, Workspace: k.WorkspaceID, Management: k.Management,
				Disabled: k.Disabled, Usage: k.Usage.Total.Decimal(), CreatedAt: k.CreatedAt}
			if k.Limit != nil {
				r.Limit = k.Limit.Decimal()
			}
			rows = append(rows, r)
		}
	}
}

// DisableKey disables a key by its hash: it stops authenticating at once on this process, and within the
// key cache's lifetime on the others.
func (a *Admin) DisableKey(ctx context.Context, hash string) error {
	disabled := true
	_, err := a.accounts.UpdateKey(ctx, hash, account.KeyChange{Disabled: &disabled})
	return plain(err)
}

// MemberRequest is `members add`'s flags.
type MemberRequest struct {
	Email, FirstName, LastName, Role string
}

// AddMember adds an organization member and returns its id.
func (a *Admin) AddMember(ctx context.Context, r MemberRequest) (string, error) {
	m, err := a.accounts.AddMember(ctx, r.Email, nonEmpty(r.FirstName), nonEmpty(r.LastName), account.Role(r.Role))
	if errors.Is(err, account.ErrMemberExists) {
		return "", fmt.Errorf("a member with email %s already exists", r.Email)
	}
	return m.ID, plain(err)
}

// MemberRow is one member as `members list` shows it.
type MemberRow struct {
	ID, Email, FirstName, LastName, Role string
	CreatedAt                            time.Time
}

// ListMembers lists every member of the organization.
func (a *Admin) ListMembers(ctx context.Context) ([]MemberRow, error) {
	const pageSize = 100
	var rows []MemberRow
	for {
		page, _, err := a.accounts.ListMembers(ctx, ports.Page{Limit: pageSize, Offset: len(rows)})
		if err != nil {
			return nil, plain(err)
		}
		for _, m := range page {
			rows = append(rows, MemberRow{ID: m.ID, Email: m.Email, FirstName: deref(m.FirstName), LastName: deref(m.LastName),
				Role: string(m.Role), CreatedAt: m.CreatedAt})
		}
		if len(page) < pageSize {
			return rows, nil
		}
	}
}

// CreateWorkspace creates a workspace and returns its id.
func (a *Admin) CreateWorkspace(ctx context.Context, name, slug string) (string, error) {
	ws, err := a.accounts.CreateWorkspace(ctx, name, slug)
	return ws.ID, plain(err)
}

// AddCredits tops the organization's credits up by usd and returns the balance.
func (a *Admin) AddCredits(ctx context.Context, usd string) (string, error) {
	amount, err := domain.ParseUSD(usd)
	if err != nil {
		return "", fmt.Errorf("USD: %w", err)
	}
	if err := a.credits.AddCredits(ctx, amount); err != nil {
		return "", plain(err)
	}
	total, used, err := a.credits.Credits(ctx)
	return fmt.Sprintf("total_credits %s, total_usage %s", total.Decimal(), used.Decimal()), plain(err)
}

// plain keeps a classified error's message for the operator and drops the driver detail it may wrap (a
// SQLSTATE means nothing to someone adding a member).
func plain(err error) error {
	var de *domain.Error
	if errors.As(err, &de) && de.Kind != domain.KindInternal && de.Kind != domain.KindUnavailable {
		return errors.New(de.Msg)
	}
	return err
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Summary is what `config check` prints once every check serve runs has passed: where the gateway listens,
// its database, and the catalog it would serve.
func (c Config) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "configuration OK: %d providers, %d models\n", len(c.Providers), c.Catalog.Len())
	fmt.Fprintf(&b, "listen    %s, API under %s\n", c.Server.Addr, c.Server.BasePath)
	fmt.Fprintf(&b, "database  %s\n", c.DescribeDatabase())
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, p := range c.Providers {
		where := "(local)"
		if u, err := url.Parse(p.BaseURL); err == nil && p.BaseURL != "" {
			where = u.Redacted() // a password in the URL (a proxy's basic auth) is not printed
		}
		if len(p.Keys) > 1 {
			where += fmt.Sprintf(" (%d api_keys)", len(p.Keys))
		}
		fmt.Fprintf(w, "provider\t%s\t%s\t%s\n", p.Slug, p.Kind, where)
	}
	for _, mod := range catalog.Modalities {
		for _, m := range c.Catalog.List(mod) {
			for i, ep := range m.Endpoints {
				id := m.ID
				if i > 0 {
					id = "  (fallback)"
				}
				fmt.Fprintf(w, "model\t%s\t%s\t%s %s\t%s\n", id, m.Modality, ep.Provider, ep.UpstreamModel, describePricing(ep.Pricing))
			}
		}
	}
	_ = w.Flush()
	return b.String()
}

func describePricing(p catalog.Pricing) string {
	var parts []string
	if p.PerMillionChars != nil {
		parts = append(parts, "$"+p.PerMillionChars.Decimal()+"/M chars")
	}
	if p.PerSecond != nil {
		parts = append(parts, "$"+p.PerSecond.Decimal()+"/s")
	}
	if p.PerSecondWithAudio != nil {
		parts = append(parts, "$"+p.PerSecondWithAudio.Decimal()+"/s with audio")
	}
	if p.Resolutions != nil {
		for _, res := range slices.Sorted(maps.Keys(*p.Resolutions)) {
			if r := (*p.Resolutions)[res]; r.PerSecond != nil {
				parts = append(parts, "$"+r.PerSecond.Decimal()+"/s at "+res)
			}
			if r := (*p.Resolutions)[res]; r.PerSecondWithAudio != nil {
				parts = append(parts, "$"+r.PerSecondWithAudio.Decimal()+"/s at "+res+" with audio")
			}
		}
	}
	if p.PerMillionPromptTokens != nil {
		parts = append(parts, "$"+p.PerMillionPromptTokens.Decimal()+"/M prompt tokens")
	}
	if p.PerMillionCompletionTokens != nil {
		parts = append(parts, "$"+p.PerMillionCompletionTokens.Decimal()+"/M completion tokens")
	}
	if len(parts) == 0 {
		return "unpriced"
	}
	return strings.Join(parts, ", ")
}

// RequeueQuarantine moves the generation entries the database refused (kept in the quarantine of the spool in
// generations.spool_dir) back into that spool, for the next serve on it to write; ids already stored are
// skipped. It refuses a spool directory that does not exist, and one a running gateway holds.
func RequeueQuarantine(cfg Config, log *slog.Logger) (int, error) {
	dir := cfg.Generations.SpoolDir
	if _, err := os.Stat(dir); err != nil {
		return 0, fmt.Errorf("no spool at %s (generations.spool_dir): run this where the gateway runs, with its configuration: %w", dir, err)
	}
	sp, err := spool.Open(spool.Config{Dir: dir, MaxBytes: cfg.Generations.SpoolMaxBytes, Valid: spooledRecord}, log)
	if err != nil {
		return 0, err
	}
	n, err := sp.Requeue()
	if cerr := sp.Close(); err == nil {
		err = cerr
	}
	return n, err
}
