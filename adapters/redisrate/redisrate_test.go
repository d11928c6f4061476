package redisrate_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-ai/switchboard/adapters/redisrate"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/test/logsink"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// replica is one gateway's limiter: its own client, its own in-process fallback.
func replica(t *testing.T, addr string, c *clock, log io.Writer) *redisrate.Limiter {
	t.Helper()
	opts, err := redisrate.Options(addr)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return redisrate.New(client, app.NewLocalRateLimiter(app.Env{Now: c.Now}), c.Now, slog.New(slog.NewTextHandler(log, nil)))
}

// Replicas share one limit: a key with a limit of N gets N calls through, whichever replica they reach.
func TestSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := testdb.RedisURL(t)
	c := &clock{now: time.Now()}
	replicas := []*redisrate.Limiter{replica(t, url, c, io.Discard), replica(t, url, c, io.Discard), replica(t, url, c, io.Discard)}
	for _, limit := range []int{1, 5, 30} {
		key := uuid.NewString()
		allowed := 0
		for i := range 3 * limit {
			d := replicas[i%3].Allow(t.Context(), key, limit)
			if d.Limit != limit {
				t.Fatalf("limit %d: decision says limit %d", limit, d.Limit)
			}
			if d.Allowed {
				allowed++
				if d.Remaining != limit-allowed {
					t.Fatalf("limit %d: call %d remaining %d, want %d", limit, i, d.Remaining, limit-allowed)
				}
				continue
			}
			// A refusal says when the next call may come: about a minute/limit from now (the first refusal),
			// and never later than that.
			if d.RetryAfter <= 0 || d.RetryAfter > time.Minute/time.Duration(limit) {
				t.Fatalf("limit %d: Retry-After %v, want (0, %v]", limit, d.RetryAfter, time.Minute/time.Duration(limit))
			}
			if !d.Reset.After(c.Now()) {
				t.Fatalf("limit %d: reset %v is not after now", limit, d.Reset)
			}
		}
		if allowed != limit {
			t.Fatalf("limit %d across three replicas: %d calls admitted", limit, allowed)
		}
	}
	if d := replicas[0].Allow(t.Context(), uuid.NewString(), 0); !d.Allowed || d.Limit != 0 {
		t.Fatalf("limit 0 must admit without headers: %+v", d)
	}
}

// proxy stands between a limiter and Redis, so that a test can take Redis away and bring it back.
type proxy struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	down     bool
	conns    []net.Conn
}

func newProxy(t *testing.T, redisURL string) *proxy {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: opts.Addr}
	t.Cleanup(func() { _ = ln.Close(); p.setDown(true) })
	go p.serve()
	return p
}

func (p *proxy) url() string { return "redis://" + p.ln.Addr().String() + "/0" }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// setDown refuses new connections and cuts the open ones (down), or lets them through again.
func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

// The documented choice when Redis is unreachable: each replica falls back to its own in-process limit (never no
// limit, never refusing everyone), warns once, asks Redis again after RetryEvery, and says when it is back.
func TestRedisUnreachableFallsBackToPerReplica(t *testing.T) {
	t.Parallel()
	p := newProxy(t, testdb.RedisURL(t))
	c := &clock{now: time.Now()}
	var log logsink.Buffer
	l := replica(t, p.url(), c, &log)
	ctx := t.Context()
	const limit = 3

	key := uuid.NewString()
	if d := l.Allow(ctx, key, limit); !d.Allowed || d.Remaining != limit-1 {
		t.Fatalf("through Redis: %+v", d)
	}

	p.setDown(true)
	local := uuid.NewString() // a key Redis has never seen, so the counts below are the local limiter's
	for i := range limit {
		if d := l.Allow(ctx, local, limit); !d.Allowed || d.Remaining != limit-1-i {
			t.Fatalf("Redis down, call %d: %+v; want the in-process limiter to admit it", i, d)
		}
	}
	if d := l.Allow(ctx, local, limit); d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("Redis down: the in-process limit must still hold: %+v", d)
	}
	if n := strings.Count(log.String(), "Redis is unreachable"); n != 1 {
		t.Fatalf("want one warning for the outage, got %d:\n%s", n, log.String())
	}

	p.setDown(false)
	// Within RetryEvery the replica keeps deciding locally; after it, it asks Redis again.
	if d := l.Allow(ctx, local, limit); d.Allowed {
		t.Fatalf("Redis back but not yet retried: the local decision stands: %+v", d)
	}
	c.advance(redisrate.RetryEvery)
	if d := l.Allow(ctx, local, limit); !d.Allowed || d.Remaining != limit-1 {
		t.Fatalf("Redis back: want its count for a key it has not seen, got %+v", d)
	}
	if !strings.Contains(log.String(), "Redis answers again") {
		t.Fatalf("no notice that Redis is back:\n%s", log.String())
	}
}

// A caller who hangs up mid-check is not a Redis outage.
func TestCancelledCallerIsNotAnOutage(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Now()}
	var log logsink.Buffer
	l := replica(t, testdb.RedisURL(t), c, &log)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	l.Allow(ctx, uuid.NewString(), 3)
	if strings.Contains(log.String(), "unreachable") {
		t.Fatalf("a cancelled request marked Redis down:\n%s", log.String())
	}
}

// TestUnreachableCostsAtMostTheTimeout: a Redis that refuses connections, drops them or accepts and never answers
// costs a rate-limited call at most redisrate.Timeout (250 ms) before the in-process limiter decides it — asked
// again after each RetryEvery, every time. The bound asserted is twice that, for a loaded machine; the figures are
// logged. Before, go-redis's dial retries (5, 100 ms apart) and a command's retry made a refusing Redis cost a call
// 0.85 s.
func TestUnreachableCostsAtMostTheTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		serve func(net.Conn) // what the fake does with each connection; nil: refuse them
	}{
		{"refuses connections", nil},
		{"drops connections", func(c net.Conn) { _ = c.Close() }},
		{"hangs", func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			if tc.serve == nil {
				_ = ln.Close() // nothing listens there now: connections are refused
			} else {
				t.Cleanup(func() { _ = ln.Close() })
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						t.Cleanup(func() { _ = c.Close() })
						go tc.serve(c)
					}
				}()
			}
			c := &clock{now: time.Now()}
			l := replica(t, "redis://"+addr+"/0", c, io.Discard)
			var worst time.Duration
			for i := range 5 {
				start := time.Now()
				d := l.Allow(t.Context(), uuid.NewString(), 10)
				took := time.Since(start)
				worst = max(worst, took)
				if !d.Allowed || d.Limit != 10 {
					t.Fatalf("call %d: %+v; want the in-process limiter's decision", i, d)
				}
				c.advance(redisrate.RetryEvery) // the next call asks Redis again
			}
			t.Logf("MEASURED Redis that %s: the slowest of 5 calls that asked it took %v (bound %v)", tc.name, worst, redisrate.Timeout)
			if worst > 2*redisrate.Timeout {
				t.Fatalf("a call waited %v on a Redis that %s, want at most %v", worst, tc.name, redisrate.Timeout)
			}
		})
	}
}

// TestGoRedisLogsInTheGatewaysFormat: what go-redis says itself (here, that it failed to dial during an outage)
// comes through the gateway's logger, in its format, where go-redis wrote plain-text lines to stderr; its failures
// to dial at debug level, as the limiter warns of the outage once itself.
func TestGoRedisLogsInTheGatewaysFormat(t *testing.T) {
	var log logsink.Buffer
	redis.SetLogger(redisrate.NewLogger(slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := &clock{now: time.Now()}
	replica(t, "redis://"+addr+"/0", c, io.Discard).Allow(t.Context(), uuid.NewString(), 10)
	line, _, _ := strings.Cut(log.String(), "\n")
	var got struct{ Level, Msg, Source string }
	if err := json.Unmarshal([]byte(line), &got); err != nil || got.Level != "DEBUG" || got.Source != "go-redis" ||
		!strings.Contains(got.Msg, "failed to dial") {
		t.Fatalf("go-redis logged %q (%v); want a JSON line at debug level from go-redis", log.String(), err)
	}
}
