package app_test

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
)

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := app.NewLocalRateLimiter(app.Env{Now: func() time.Time { return now }})
	steps := []struct {
		advance   time.Duration
		limit     int
		allowed   bool
		remaining int
	}{
		{0, 3, true, 2}, {0, 3, true, 1}, {0, 3, true, 0}, {0, 3, false, 0},
		{20 * time.Second, 3, true, 0}, // one comes back every 20 s
		{0, 3, false, 0},
		{0, 10, true, 6}, // raising the limit adds the difference at once
		{0, 0, true, 0},  // 0 is unlimited
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		d := l.Allow(t.Context(), "k", s.limit)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Fatalf("step %d: allowed %v remaining %d, want %v %d", i, d.Allowed, d.Remaining, s.allowed, s.remaining)
		}
	}
	if d := l.Allow(t.Context(), "other", 1); !d.Allowed {
		t.Fatal("keys share a bucket")
	}
	if d := l.Allow(t.Context(), "other", 1); d.Allowed || d.RetryAfter != time.Minute {
		t.Fatalf("Retry-After %v, want 1m", d.RetryAfter)
	}
}
