package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/testcert"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"switchboard"}, args...), env, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	for _, db := range []struct{ name, url string }{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "sb.db")},
		{"postgres", testdb.EmptyPostgresURL(t)},
	} {
		t.Run(db.name, func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": db.url, "SWITCHBOARD_LOG_LEVEL": "error"}
			if r := runCLI(t, env, "keys", "list"); r.code != 1 || !strings.Contains(r.stderr, "switchboard migrate") {
				t.Fatalf("an admin command before migrate must refuse and say what to do: %+v", r)
			}
			if r := runCLI(t, env, "migrate"); r.code != 0 || !strings.Contains(r.stderr, "database: ") {
				t.Fatalf("migrate: %+v", r)
			}
			r := runCLI(t, env, "keys", "create", "--management", "--name", "admin")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "sk-sb-v1-") || strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("keys create must print only the key: %+v", r)
			}
			if !strings.HasPrefix(r.stderr, "database: ") || strings.Contains(r.stderr, "postgres@") && !strings.Contains(db.url, "postgres@") {
				t.Fatalf("keys create must say which database it used: %q", r.stderr)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "limited", "--limit", "2.5"); r.code != 0 {
				t.Fatalf("keys create --limit: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "x", "--limit", "lots"); r.code != 1 || !strings.Contains(r.stderr, "--limit") {
				t.Fatalf("bad --limit: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--name", "x", "--workspace", "nope"); r.code != 1 || !strings.Contains(r.stderr, "workspace_id") {
				t.Fatalf("unknown --workspace: %+v", r)
			}
			if r := runCLI(t, env, "keys", "create", "--management", "--name", "m", "--workspace", "x"); r.code != 1 ||
				!strings.Contains(r.stderr, "management key administers every workspace") {
				t.Fatalf("--workspace on a management key must be refused: %+v", r)
			}
			r = runCLI(t, env, "keys", "list")
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "HASH") || !strings.Contains(r.stdout, "limited") ||
				!strings.Contains(r.stdout, "2.5") || !strings.Contains(r.stdout, "management") {
				t.Fatalf("keys list: %+v", r)
			}
			hash := strings.Fields(lines[1])[0] // newest first: "limited"
			if r := runCLI(t, env, "keys", "disable", hash); r.code != 0 || !strings.Contains(r.stdout, hash) {
				t.Fatalf("keys disable: %+v", r)
			}
			if r := runCLI(t, env, "keys", "list"); strings.Contains(r.stdout, hash) {
				t.Fatalf("a disabled key is listed without --include-disabled: %+v", r)
			}
			if r := runCLI(t, env, "keys", "list", "--include-disabled"); !strings.Contains(r.stdout, "disabled") {
				t.Fatalf("keys list --include-disabled: %+v", r)
			}
			if r := runCLI(t, env, "keys", "disable", "nope"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
				t.Fatalf("disable an unknown key: %+v", r)
			}
			r = runCLI(t, env, "members", "add", "--email", "ada@example.com", "--first-name", "Ada", "--role", "org:admin")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "user_") {
				t.Fatalf("members add: %+v", r)
			}
			r = runCLI(t, env, "members", "add", "--email", "ada@example.com")
			if r.code != 1 || !strings.Contains(r.stderr, "a member with email ada@example.com already exists") ||
				strings.Contains(r.stderr, "SQLSTATE") || strings.Contains(r.stderr, "UNIQUE") {
				t.Fatalf("duplicate member: %+v", r)
			}
			if r := runCLI(t, env, "members", "list"); r.code != 0 || !strings.Contains(r.stdout, "ada@example.com") ||
				!strings.Contains(r.stdout, "org:admin") {
				t.Fatalf("members list: %+v", r)
			}
			if r := runCLI(t, env, "workspaces", "create", "--name", "Team A"); r.code != 0 || strings.TrimSpace(r.stdout) == "" {
				t.Fatalf("workspaces create: %+v", r)
			}
			if r := runCLI(t, env, "credits", "add", "5"); r.code != 0 || !strings.Contains(r.stdout, "total_credits 5") {
				t.Fatalf("credits add: %+v", r)
			}
		})
	}
}

// TestAdminRefusesMissingDatabase: an administrative command never creates a database; only serve and migrate
// do. Run from the wrong directory, it says which database it looked for instead of starting an empty one.
func TestAdminRefusesMissingDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "switchboard.db")
	env := map[string]string{"DATABASE_URL": "sqlite:" + path}
	for _, args := range [][]string{
		{"keys", "create", "--name", "x"}, {"keys", "list"}, {"keys", "disable", "h"}, {"members", "add", "--email", "a@b.c"},
		{"members", "list"}, {"workspaces", "create", "--name", "w"}, {"credits", "add", "1"},
	} {
		r := runCLI(t, env, args...)
		if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "switchboard migrate") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("an administrative command created %s (%v)", filepath.Dir(path), err)
	}
}

// TestHelpNeverActs: --help on every command, anywhere on its line, prints the command's help on stdout, exits
// 0 and does nothing else — not even migrate creates its database.
func TestHelpNeverActs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "switchboard.db")
	env := map[string]string{"DATABASE_URL": "sqlite:" + path}
	for _, cmd := range commands() {
		for _, help := range []string{"--help", "-h"} {
			args := append(strings.Fields(cmd.name), help)
			r := runCLI(t, env, args...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: switchboard "+cmd.name) || r.stderr != "" {
				t.Errorf("%v: %+v", args, r)
			}
		}
		r := runCLI(t, env, append([]string{"help"}, strings.Fields(cmd.name)...)...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: switchboard "+cmd.name) {
			t.Errorf("help %s: %+v", cmd.name, r)
		}
	}
	if r := runCLI(t, env, "keys", "create", "--name", "x", "--help"); r.code != 0 || !strings.Contains(r.stdout, "--name NAME") {
		t.Errorf("--help after flags: %+v", r)
	}
	// A group's help lists its commands.
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"keys", "--help"}, []string{"switchboard keys create --name NAME", "switchboard keys list", "switchboard keys disable HASH"}},
		{[]string{"keys", "-h"}, []string{"switchboard keys create", "switchboard keys list", "switchboard keys disable"}},
		{[]string{"help", "keys"}, []string{"switchboard keys create", "switchboard keys list", "switchboard keys disable"}},
		{[]string{"help", "config"}, []string{"switchboard config check"}},
	} {
		r := runCLI(t, env, tt.args...)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage:") {
			t.Errorf("%v: %+v, want its commands' usage and exit 0", tt.args, r)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: %q does not name %q", tt.args, r.stdout, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("--help created %s (%v)", filepath.Dir(path), err)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "sb.db")}
	tests := []struct {
		args []string
		out  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"keys"}, "keys: which one? create, list, disable"},
		{[]string{"keys", "rotate"}, `unknown command "keys rotate"; keys takes create, list, disable`},
		{[]string{"keys", "create"}, "keys create: --name is required"},
		{[]string{"keys", "create", "--nope"}, "keys create: flag provided but not defined: -nope"},
		{[]string{"keys", "create", "--name"}, "flag needs an argument: -name"},
		{[]string{"keys", "disable"}, "keys disable: takes 1 argument(s) (HASH), got 0"},
		{[]string{"members", "add"}, "members add: --email is required"},
		{[]string{"workspaces", "create"}, "workspaces create: --name is required"},
		{[]string{"credits", "add"}, "credits add: takes 1 argument(s)"},
		{[]string{"migrate", "now"}, `migrate: unexpected argument "now"`},
		{[]string{"config"}, "config: which one? check"},
		{[]string{"--config"}, "--config needs a path"},
		{[]string{"keys", "create", "--name", "a\xffb"}, "keys create: --name is not valid UTF-8"},
		{[]string{"members", "add", "--email", "\xff@example.com"}, "members add: --email is not valid UTF-8"},
		{[]string{"keys", "disable", "\xff"}, "keys disable: HASH is not valid UTF-8"},
	}
	for _, tt := range tests {
		r := runCLI(t, env, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.out) || !strings.Contains(r.stderr, "usage") && !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: %+v, want exit 2 and %q", tt.args, r, tt.out)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(yaml string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"DATABASE_URL": "postgres://sb:secret@db:5432/sb", "OPENAI_KEY": "sk-x"}
	const good = `
providers:
  - {slug: openai, kind: openai, base_url: https://api.openai.com/v1, api_key: "${OPENAI_KEY}"}
  - {slug: proxied, kind: openai, base_url: "https://gw:secret@llm.internal/v1", api_key: "${OPENAI_KEY}"}
models:
  - id: openai/tts-1
    modality: tts
    endpoints: [{provider: openai, upstream_model: tts-1, pricing: {per_million_characters: 15}}]
  - id: openai/gpt-4o-mini
    modality: chat
    endpoints: [{provider: openai, upstream_model: gpt-4o-mini, pricing: {per_million_prompt_tokens: 0.15, per_million_completion_tokens: 0.6}}]
`
	r := runCLI(t, env, "--config", write(good), "config", "check")
	if r.code != 0 || !strings.Contains(r.stdout, "configuration OK: 2 providers, 2 models") ||
		!strings.Contains(r.stdout, "https://gw:xxxxx@llm.internal/v1") ||
		!strings.Contains(r.stdout, "openai/tts-1") || !strings.Contains(r.stdout, "$15/M chars") ||
		!strings.Contains(r.stdout, "$0.15/M prompt tokens, $0.6/M completion tokens") ||
		!strings.Contains(r.stdout, "PostgreSQL postgres://sb:xxxxx@db:5432/sb") || strings.Contains(r.stdout+r.stderr, "secret") {
		t.Fatalf("config check: %+v", r)
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"api key empty after expansion", map[string]string{}, "providers[0].api_key: is empty"},
		{"bad listen address", map[string]string{"OPENAI_KEY": "k", "SWITCHBOARD_SERVER_ADDR": "8080"}, "server.addr"},
		{"short bootstrap key", map[string]string{"OPENAI_KEY": "k", "SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY": "short"}, "at least 32"},
	} {
		r := runCLI(t, tt.env, "--config", write(good), "config", "check")
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: %+v", tt.name, r)
		}
	}
	typo := map[string]string{"OPENAI_KEY": "k", "SWITCHBOARD_SERVER_ADRR": ":9000", "SWITCHBOARD_LOG_LEVEL": "debug"}
	if r := runCLI(t, typo, "--config", write(good), "config", "check"); r.code != 0 ||
		r.stderr != "warning: SWITCHBOARD_SERVER_ADRR: no setting reads this environment variable: a typo?\n" {
		t.Errorf("a variable nothing reads: %+v", r)
	}
	if r := runCLI(t, env, "--config", "/nope.yaml", "config", "check"); r.code != 1 || !strings.Contains(r.stderr, "/nope.yaml") {
		t.Errorf("missing file: %+v", r)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "switchboard ") || !strings.Contains(r.stdout, "go      go1.") {
		t.Fatalf("version: %+v", r)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, `{"status":"ready"}`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(addr, ":")
	if r := runCLI(t, map[string]string{"SWITCHBOARD_SERVER_ADDR": ":" + port}, "health"); r.code != 0 || !strings.Contains(r.stdout, "ready") {
		t.Fatalf("health of a ready gateway: %+v", r)
	}
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if r := runCLI(t, nil, "health", "--url", srv.URL+"/readyz"); r.code != 1 || !strings.Contains(r.stderr, "503") {
		t.Fatalf("health of an unready gateway: %+v", r)
	}
}

// TestHealthOverTLS: with a certificate configured, health asks over TLS and trusts that certificate alone (not
// the system's roots, not the loopback address's name), and refuses a server with another.
func TestHealthOverTLS(t *testing.T) {
	t.Parallel()
	pair, other := testcert.Write(t), testcert.Write(t)
	for _, tt := range []struct {
		name   string
		served tls.Certificate
		code   int
	}{{"the configured certificate", pair.Cert, 0}, {"another certificate", other.Cert, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, `{"status":"ready"}`)
			}))
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{tt.served}}
			// The handshake the client refuses is logged by the server; through the standard logger it went to
			// the default slog handler, which a parallel test's run had pointed at its own buffer: a race.
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			defer srv.Close()
			_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
			r := runCLI(t, map[string]string{"SWITCHBOARD_SERVER_ADDR": ":" + port, "SWITCHBOARD_SERVER_TLS_CERT_FILE": pair.CertFile,
				"SWITCHBOARD_SERVER_TLS_KEY_FILE": pair.KeyFile}, "health")
			if r.code != tt.code || tt.code == 0 && !strings.Contains(r.stdout, "https://127.0.0.1:"+port+"/readyz: "+`{"status":"ready"}`) ||
				tt.code != 0 && !strings.Contains(r.stderr, "not server.tls_cert_file's") {
				t.Fatalf("health: %+v", r)
			}
		})
	}
}

// freeAddr is a loopback address with a port nobody listens on (for a moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeSideListeners: with metrics.addr, serve answers /metrics there and not on the main listener; with
// server.pprof_addr, the runtime profiles are there and never on the main listener.
func TestServeSideListeners(t *testing.T) {
	t.Parallel()
	main, metrics, pprof := freeAddr(t), freeAddr(t), freeAddr(t)
	env := map[string]string{"DATABASE_URL": testdb.SQLiteURL(t), "SWITCHBOARD_SERVER_ADDR": main,
		"SWITCHBOARD_METRICS_ADDR": metrics, "SWITCHBOARD_SERVER_PPROF_ADDR": pprof,
		"SWITCHBOARD_LOG_LEVEL": "info", "SWITCHBOARD_GENERATIONS_SPOOL_DIR": t.TempDir()}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"switchboard", "serve"}, env, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	harness.Eventually(t, 10*time.Second, func() bool { s, _ := get("http://" + main + "/healthz"); return s == 200 })
	if s, body := get("http://" + metrics + "/metrics"); s != 200 || !strings.Contains(body, "switchboard_http_requests_total") {
		t.Errorf("metrics.addr /metrics: %d %.200s", s, body)
	}
	if s, _ := get("http://" + main + "/metrics"); s != 404 {
		t.Errorf("main listener /metrics: %d, want 404", s)
	}
	if s, body := get("http://" + pprof + "/debug/pprof/heap?debug=1"); s != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("server.pprof_addr heap profile: %d %.200s", s, body)
	}
	if s, body := get("http://" + pprof + "/debug/pprof/profile?seconds=1"); s != 200 || len(body) == 0 {
		t.Errorf("server.pprof_addr CPU profile: %d, %d bytes", s, len(body))
	}
	for _, path := range []string{"/debug/pprof/", "/api/v1/debug/pprof/"} {
		if s, _ := get("http://" + main + path); s != 404 {
			t.Errorf("main listener %s: %d, want 404", path, s)
		}
	}
	stop()
	r := <-done
	if r.code != 0 {
		t.Fatalf("serve: %+v", r)
	}
	// The log ends by saying the stop is over, the recorder's last writes with it, not with the drain's start.
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); !strings.Contains(lines[len(lines)-1], "msg=stopped") {
		t.Errorf("serve's log ends with %q, want the stop; all of it:\n%s", lines[len(lines)-1], r.stderr)
	}
}

// TestSpoolRequeue: spool requeue moves the quarantine of the configured spool back into it; it refuses a spool
// directory that does not exist (run from the wrong place) and one a running gateway holds.
func TestSpoolRequeue(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "spool")
	env := map[string]string{"SWITCHBOARD_GENERATIONS_SPOOL_DIR": dir, "SWITCHBOARD_LOG_LEVEL": "error"}
	if r := runCLI(t, env, "spool", "requeue"); r.code != 1 || !strings.Contains(r.stderr, "no spool at "+dir) {
		t.Fatalf("requeue without a spool: %+v", r)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("requeue created a spool")
	}
	sp, err := spool.Open(spool.Config{Dir: dir, MaxBytes: 1 << 20}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Quarantine([]byte("refused")); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, env, "spool", "requeue"); r.code != 1 || !strings.Contains(r.stderr, "in use by another process") {
		t.Fatalf("requeue on a spool in use: %+v", r)
	}
	sp.Close()
	if r := runCLI(t, env, "spool", "requeue"); r.code != 0 || !strings.HasPrefix(r.stdout, "1 generation entries moved") ||
		!strings.Contains(r.stderr, "spool: "+dir) {
		t.Fatalf("requeue: %+v", r)
	}
	if r := runCLI(t, env, "spool", "requeue"); r.code != 0 || !strings.HasPrefix(r.stdout, "0 generation entries moved") {
		t.Fatalf("requeue again: %+v", r)
	}
	sp, err = spool.Open(spool.Config{Dir: dir, MaxBytes: 1 << 20}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if recs, _, err := sp.Read(10, 1<<20); err != nil || len(recs) != 1 || string(recs[0].Payload) != "refused" {
		t.Fatalf("the spool after the requeue: %q, %v", recs, err)
	}
}

// TestServeStopsWhileTheDatabaseHangs: SIGTERM (the context's end) while serve waits for a database that
// accepted the connection and never answers stops it, with the reason on stderr, instead of waiting forever.
func TestServeStopsWhileTheDatabaseHangs(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	env := map[string]string{"DATABASE_URL": "postgres://sb@" + ln.Addr().String() + "/sb?sslmode=disable",
		"SWITCHBOARD_GENERATIONS_SPOOL_DIR": t.TempDir()}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"switchboard", "serve"}, env, &out, &errb)
		done <- result{code, out.String(), errb.String()}
	}()
	c := <-accepted
	defer c.Close()
	stop()
	select {
	case r := <-done:
		if r.code != 1 || !strings.Contains(r.stderr, "open database") || !strings.Contains(r.stderr, "canceled") {
			t.Errorf("serve stopped while connecting: %+v", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop while its database hung")
	}
}

// TestInvokedAs: the hints name the command as the operator runs it.
func TestInvokedAs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ argv0, want string }{
		{"/switchboard", "/switchboard"},
		{"./bin/switchboard", "./bin/switchboard"},
		{"switchboard", "switchboard"},
		{"/usr/local/bin/sb", "switchboard"},
		{"/tmp/go-build2089784583/b001/exe/switchboard", "go run ./cmd/switchboard"},
		{"/tmpfoo/switchboard", "/tmpfoo/switchboard"},
		{"/tmp/switchboard", "/tmp/switchboard"}, // a release binary downloaded there
		{"/tmp/exe/switchboard", "/tmp/exe/switchboard"},
		{"/var/tmp/go-build1/b001/exe/switchboard", "go run ./cmd/switchboard"}, // GOTMPDIR=/var/tmp
		// A second go run of the same build runs the binary from the build cache (Go 1.24).
		{"/root/.cache/go-build/4c/4ca414cf60d4f3411e75d33baea4d0102577a73ccf6d9b1207e0963fc0612447-d/switchboard", "go run ./cmd/switchboard"},
		{"/opt/4c/4ca414cf60d4f3411e75d33baea4d0102577a73ccf6d9b1207e0963fc061244-d/switchboard", "/opt/4c/4ca414cf60d4f3411e75d33baea4d0102577a73ccf6d9b1207e0963fc061244-d/switchboard"},
	} {
		if got := invokedAs(tt.argv0); got != tt.want {
			t.Errorf("invokedAs(%q) = %q, want %q", tt.argv0, got, tt.want)
		}
	}
}
