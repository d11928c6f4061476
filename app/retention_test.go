package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/ports"
)

// purgeable holds old records and hands them to purges a slice at a time.
type purgeable struct {
	ports.GenerationStore
	old     int64
	cutoffs []time.Time
	fail    error
}

func (p *purgeable) PurgeGenerations(_ context.Context, before time.Time, limit int) (int64, error) {
	p.cutoffs = append(p.cutoffs, before)
	if p.fail != nil {
		return 0, p.fail
	}
	n := min(p.old, int64(limit))
	p.old -= n
	return n, nil
}

var _ ports.GenerationStore = (*purgeable)(nil)

// TestRetentionPurgesInSlices: everything older than the retention goes, a slice per statement, until a slice
// comes back short; a failure stops the purge with what it had done.
func TestRetentionPurgesInSlices(t *testing.T) {
	t.Parallel()
	env := app.Env{Now: func() time.Time { return t0 }}
	s := &purgeable{old: 12_345}
	if n := app.NewRetention(s, quiet(), 30, env).Purge(context.Background()); n != 12_345 {
		t.Fatalf("purged %d, want 12345", n)
	}
	if len(s.cutoffs) != 3 || !s.cutoffs[0].Equal(t0.AddDate(0, 0, -30)) {
		t.Fatalf("purges before %v, want three slices before %v", s.cutoffs, t0.AddDate(0, 0, -30))
	}
	broken := &purgeable{old: 1, fail: errors.New("database down")}
	if n := app.NewRetention(broken, quiet(), 30, env).Purge(context.Background()); n != 0 || len(broken.cutoffs) != 1 {
		t.Fatalf("a failing purge: %d purged in %d statements", n, len(broken.cutoffs))
	}
}

// TestRetentionOff: with 0 days nothing is ever purged, and the worker returns at once.
func TestRetentionOff(t *testing.T) {
	t.Parallel()
	s := &purgeable{old: 10}
	w := app.NewRetention(s, quiet(), 0, app.Env{Now: func() time.Time { return t0 }}).Worker(time.Hour)
	w.Run(context.Background()) // would block until the context ends if it ran
	if len(s.cutoffs) != 0 {
		t.Fatal("a retention of 0 days purged")
	}
}
