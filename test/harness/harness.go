// Package harness runs the real gateway, assembled by wire exactly as `switchboard serve` does, on a fresh
// PostgreSQL database behind the gateway's own server, and gives tests a client for it.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/test/testdb"
	sbwire "github.com/switchboard-ai/switchboard/wire"
)

// Gateway is a running gateway.
type Gateway struct {
	// URL is the API root, ending in /api/v1; Root is the server root.
	URL, Root string
	// Admin is a management key.
	Admin string
	// DatabaseURL is the gateway's database.
	DatabaseURL string
	Clock       *Clock
	App         *sbwire.Gateway
	client      *http.Client
	stop        func()
}

type options struct {
	yaml   string
	sqlite bool
	env    map[string]string
	clock  *Clock
	log    io.Writer
	spans  sdktrace.SpanExporter
}

type Option func(*options)

// WithConfig starts the gateway with this YAML configuration file.
func WithConfig(yaml string) Option { return func(o *options) { o.yaml = yaml } }

// WithSQLite uses the embedded database instead of PostgreSQL.
func WithSQLite() Option { return func(o *options) { o.sqlite = true } }

// WithEnv sets an environment variable as the gateway sees it.
func WithEnv(k, v string) Option { return func(o *options) { o.env[k] = v } }

// WithClock drives the gateway's clock from the test.
func WithClock(c *Clock) Option { return func(o *options) { o.clock = c } }

// WithSpans turns tracing on, with the spans going to exp instead of an OTLP collector.
func WithSpans(exp sdktrace.SpanExporter) Option { return func(o *options) { o.spans = exp } }

// WithLog sends the gateway's debug-level logs to w.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// Start runs a gateway for the test and stops it (draining background work) when the test ends.
func Start(t testing.TB, opts ...Option) *Gateway {
	t.Helper()
	o := options{env: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	dbURL := o.env["DATABASE_URL"]
	if dbURL == "" {
		if o.sqlite {
			dbURL = testdb.SQLiteURL(t)
		} else {
			dbURL = testdb.PostgresURL(t)
		}
		o.env["DATABASE_URL"] = dbURL
	}
	if o.env["SWITCHBOARD_GENERATIONS_SPOOL_DIR"] == "" {
		o.env["SWITCHBOARD_GENERATIONS_SPOOL_DIR"] = t.TempDir()
	}
	path := ""
	if o.yaml != "" {
		path = filepath.Join(t.TempDir(), "switchboard.yaml")
		if err := os.WriteFile(path, []byte(o.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := sbwire.LoadConfig(path, func(k string) string { return o.env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if strings.HasPrefix(cfg.Database.URL, "postgres") && !strings.Contains(o.yaml, "max_open_conns") {
		// Tests run gateways side by side on one PostgreSQL (max_connections 100 by default): a small pool each
		// keeps them from running it out of connections, which the gateway rightly answers with 503.
		cfg.Database.MaxOpenConns = 6
	}
	if o.spans != nil {
		cfg.Tracing.Enabled, cfg.Tracing.Exporter = true, o.spans
	}
	env := app.SystemEnv()
	if o.clock != nil {
		env.Now = o.clock.Now
	}
	ctx := context.Background()
	log := Logger()
	if o.log != nil {
		log = slog.New(httpapi.LogHandler(slog.NewJSONHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	gw, cleanup, err := sbwire.InitializeGateway(ctx, cfg, log, env)
	if err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	// The gateway's own server, as serve runs it, so that every test's calls go through it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, shutdown := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- gw.Server.Serve(sctx, ln) }()
	root := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	var once sync.Once
	stop := func() { // no request in flight, then drain background work
		once.Do(func() {
			shutdown()
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
			client.CloseIdleConnections()
			cleanup()
		})
	}
	t.Cleanup(stop)
	_, admin, err := gw.Accounts.CreateKey(ctx, account.Principal{}, account.KeySpec{Name: "admin", Management: true})
	if err != nil {
		t.Fatal(err)
	}
	return &Gateway{URL: root + cfg.Server.BasePath, Root: root, Admin: admin, DatabaseURL: dbURL,
		Clock: o.clock, App: gw, client: client, stop: stop}
}

// Stop shuts the gateway down as serve does on SIGTERM: it stops serving, then drains its background work.
func (g *Gateway) Stop() { g.stop() }

// Logger is where gateways under test log: nowhere, unless SWITCHBOARD_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("SWITCHBOARD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Response is a finished response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body, keeping numbers exact.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response is not a JSON object (status %d): %v: %s", r.Status, err, r.Body)
	}
	return v
}

// Do sends a request with the key (none when empty). A string body is sent as is; anything else as JSON.
func (g *Gateway) Do(t testing.TB, method, path, key string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	url := g.URL + path
	if strings.HasPrefix(path, "/healthz") || strings.HasPrefix(path, "/readyz") || strings.HasPrefix(path, "/metrics") {
		url = g.Root + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// Key creates an inference key through the API with extra fields in the body, and returns the secret and hash.
func (g *Gateway) Key(t testing.TB, fields map[string]any) (secret, hash string) {
	t.Helper()
	body := map[string]any{"name": "test"}
	for k, v := range fields {
		body[k] = v
	}
	r := g.Do(t, "POST", "/keys", g.Admin, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	v := r.JSON(t)
	return v["key"].(string), v["data"].(map[string]any)["hash"].(string)
}

// Clock is a settable clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

func NewClock(t time.Time) *Clock { return &Clock{now: t} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Workspace creates a workspace through the API and returns its id.
func (g *Gateway) Workspace(t testing.TB, slug string) string {
	t.Helper()
	r := g.Do(t, "POST", "/workspaces", g.Admin, map[string]any{"name": slug, "slug": slug})
	if r.Status != http.StatusCreated {
		t.Fatalf("create workspace: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)["data"].(map[string]any)["id"].(string)
}

// Eventually polls cond until it holds or within passes; it reports how long it took.
func Eventually(t testing.TB, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("condition not met within %v", within)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// Dialects runs f twice, in parallel: with a gateway on PostgreSQL and with one on the embedded SQLite file.
func Dialects(t *testing.T, f func(t *testing.T, db Option)) {
	for _, d := range []struct {
		name string
		opt  Option
	}{{"postgres", func(*options) {}}, {"sqlite", WithSQLite()}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			f(t, d.opt)
		})
	}
}
