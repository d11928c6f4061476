// Package redisrate enforces per-key rate limits in Redis, so that every replica of the gateway counts against
// one limit: a GCRA limiter (github.com/go-redis/redis_rate) whose state is one Redis key per API key.
//
// When Redis cannot be reached, it falls back to the in-process limiter it is given: limits then hold per replica
// until Redis answers again (a replica retries Redis at most once per RetryEvery). It neither fails open (a key
// would get no limit at all) nor closed (every call would be refused because of an outage that is not the key's).
package redisrate

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/switchboard-ai/switchboard/ports"
)

// RetryEvery is how long a replica decides locally after Redis failed, before it asks Redis again: an outage
// costs a request at most one timeout per period, not one each.
const RetryEvery = time.Second

// keyPrefix namespaces the limiter's keys (redis_rate adds its own "rate:" before it).
const keyPrefix = "switchboard:"

// Timeout is the most a rate-limited call waits on Redis, whether Redis refuses connections, drops them or hangs:
// then the call is decided by the in-process limiter.
const Timeout = 250 * time.Millisecond

// Options are the client settings used for a rate limiter: every inference call waits on it, so one attempt at
// each step, each within Timeout (go-redis's defaults retry a command 3 times and a dial 5 times, 100 ms apart:
// a Redis refusing connections cost a call 0.82-0.88 s with 1 retry). Allow also holds the whole check to
// Timeout through its context, which the client is told to honour.
func Options(url string) (*redis.Options, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = Timeout, Timeout, Timeout, Timeout
	opts.MaxRetries = -1   // no retry of a command
	opts.DialerRetries = 1 // one attempt at a dial
	opts.ContextTimeoutEnabled = true
	return opts, nil
}

// Limiter is the shared rate limiter.
type Limiter struct {
	client   *redis.Client
	gcra     *redis_rate.Limiter
	fallback ports.RateLimiter
	now      func() time.Time
	log      *slog.Logger

	mu        sync.Mutex
	down      bool      // the last call to Redis failed
	downUntil time.Time // no call to Redis before this
}

var _ ports.RateLimiter = (*Limiter)(nil)

// New limits through client, and through fallback while Redis is unreachable.
func New(client *redis.Client, fallback ports.RateLimiter, now func() time.Time, log *slog.Logger) *Limiter {
	return &Limiter{client: client, gcra: redis_rate.NewLimiter(client), fallback: fallback, now: now, log: log}
}

// Allow admits a burst of perMinute calls, then one every minute/perMinute, counted across every replica.
func (l *Limiter) Allow(ctx context.Context, key string, perMinute int) ports.RateDecision {
	if perMinute <= 0 {
		return ports.RateDecision{Allowed: true}
	}
	if l.useRedis() {
		rctx, cancel := context.WithTimeout(ctx, Timeout)
		res, err := l.gcra.Allow(rctx, keyPrefix+key, redis_rate.PerMinute(perMinute))
		cancel()
		if err == nil {
			l.up()
			now := l.now()
			d := ports.RateDecision{Allowed: res.Allowed > 0, Limit: perMinute, Remaining: res.Remaining,
				Reset: now.Add(res.ResetAfter)}
			if !d.Allowed {
				d.RetryAfter = res.RetryAfter
			}
			return d
		}
		if ctx.Err() == nil { // a caller who hung up says nothing about Redis
			l.failed(err)
		}
	}
	return l.fallback.Allow(ctx, key, perMinute)
}

func (l *Limiter) useRedis() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.down || !l.now().Before(l.downUntil)
}

func (l *Limiter) failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.down {
		l.log.Warn("Redis is unreachable: rate limits now hold per replica until it answers again", "err", err)
	}
	l.down, l.downUntil = true, l.now().Add(RetryEvery)
}

func (l *Limiter) up() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		l.log.Info("Redis answers again: rate limits are shared by every replica")
		l.down = false
	}
}

// Ping reports whether Redis answers, for the startup log.
func Ping(ctx context.Context, client *redis.Client) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// Logger is go-redis's logger (redis.SetLogger, for the process) writing through a slog.Logger, in the gateway's
// format, where go-redis wrote plain-text lines of its own to stderr. Its failures to dial are at debug level: they
// come once a call that asks Redis during an outage, which the limiter logs once itself; anything else it says is a
// warning.
type Logger struct{ log *slog.Logger }

func NewLogger(log *slog.Logger) Logger { return Logger{log} }

func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	level := slog.LevelWarn
	if strings.Contains(msg, "failed to dial") {
		level = slog.LevelDebug
	}
	l.log.Log(ctx, level, msg, "source", "go-redis")
}
