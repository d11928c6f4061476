package ports

import "time"

// RateDecision is the outcome of a rate-limit check, with what the caller is told in headers.
type RateDecision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time
	RetryAfter time.Duration
}

// RateLimiter admits requests per key and minute; a limit of 0 admits everything.
type RateLimiter interface {
	Allow(key string, perMinute int) RateDecision
}
