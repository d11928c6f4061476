package api_test

import (
	"database/sql"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// proxy forwards TCP to target until cut, after which it refuses every connection until resumed.
type proxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: target, ln: ln}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

// resume listens again on the same address.
func (p *proxy) resume(t *testing.T) {
	ln, err := net.Listen("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.conns = ln, nil
	p.mu.Unlock()
	p.serve(ln)
}

func (p *proxy) serve(ln net.Listener) {
	target := p.target
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestDatabaseUnreachable: with its database gone, the gateway answers 503 in the envelope, and /readyz says so.
func TestDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse(testdb.PostgresURL(t))
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	g := harness.Start(t, harness.WithEnv("DATABASE_URL", u.String()))
	fresh, _ := g.Key(t, nil) // not cached yet: its first use must reach the database
	p.cut()
	for _, path := range []string{"/key", "/readyz"} {
		r := g.Do(t, "GET", path, fresh, nil)
		harness.AssertError(t, r, 503)
		if r.Header.Get("Retry-After") != "2" {
			t.Errorf("%s: Retry-After %q, want 2", path, r.Header.Get("Retry-After"))
		}
	}
}

// TestDatabaseBackendTerminated: a query whose backend PostgreSQL terminates (admin_shutdown, 57P01, as in a
// restart or failover) is a 503 the caller may retry, not a 500.
func TestDatabaseBackendTerminated(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	fresh, _ := g.Key(t, nil) // not cached yet: its first use must reach the database
	db, err := sql.Open("pgx", g.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.Exec("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	got := make(chan harness.Response, 1)
	go func() { got <- g.Do(t, "GET", "/key", fresh, nil) }()
	// The gateway's lookup now waits on the lock: end its backend as an administrator would.
	var terminated bool
	harness.Eventually(t, 30*time.Second, func() bool {
		err := db.QueryRow(`SELECT COALESCE(bool_or(pg_terminate_backend(pid)), false) FROM pg_locks
			WHERE relation = 'api_keys'::regclass AND NOT granted`).Scan(&terminated)
		return err == nil && terminated
	})
	r := <-got
	harness.AssertError(t, r, 503)
	if r.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
}
