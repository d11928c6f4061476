package ports

import (
	"context"
	"time"
)

// RateDecision is the outcome of a rate-limit check, with what the caller is told in headers.
type RateDecision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time
	RetryAfter time.Duration
}

// RateLimiter admits requests per key and minute; a limit of 0 admits everything. It always decides: an
// implementation whose shared state is unreachable decides from what it has (see docs/replicas.md, rate limits).
type RateLimiter interface {
	Allow(ctx context.Context, key string, perMinute int) RateDecision
}
