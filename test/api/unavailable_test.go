package api_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// proxy forwards TCP to target until cut, after which it refuses every connection.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
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
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
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
	harness.AssertError(t, g.Do(t, "GET", "/key", fresh, nil), 503)
	harness.AssertError(t, g.Do(t, "GET", "/readyz", "", nil), 503)
}
