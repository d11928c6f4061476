package app

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// LocalRateLimiter is a token bucket per key, in this process: a key may burst up to its per-minute limit, and
// regains limit/60 requests each second. With several replicas and no Redis, each replica admits the full limit.
type LocalRateLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens   float64
	capacity int
	at       time.Time
}

var _ ports.RateLimiter = (*LocalRateLimiter)(nil)

func NewLocalRateLimiter(env Env) *LocalRateLimiter {
	return &LocalRateLimiter{now: env.Now, buckets: map[string]*bucket{}}
}

func (l *LocalRateLimiter) Allow(_ context.Context, key string, perMinute int) ports.RateDecision {
	if perMinute <= 0 {
		return ports.RateDecision{Allowed: true}
	}
	now := l.now()
	rate := float64(perMinute) / 60 // tokens per second
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(perMinute), capacity: perMinute, at: now}
		l.buckets[key] = b
	}
	if b.capacity != perMinute { // the key's limit changed: the bucket grows or shrinks with it
		b.tokens = math.Max(0, b.tokens+float64(perMinute-b.capacity))
		b.capacity = perMinute
	}
	b.tokens = math.Min(float64(perMinute), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	d := ports.RateDecision{Limit: perMinute}
	if b.tokens >= 1 {
		b.tokens--
		d.Allowed = true
	} else {
		d.RetryAfter = time.Duration((1 - b.tokens) / rate * float64(time.Second))
	}
	d.Remaining = int(b.tokens)
	d.Reset = now.Add(time.Duration((float64(perMinute) - b.tokens) / rate * float64(time.Second)))
	return d
}
