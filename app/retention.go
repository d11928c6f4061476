package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// Retention purges generation records (and their content) older than a number of days, in the background and
// in slices, so no purge holds long locks.
type Retention struct {
	store ports.GenerationStore
	log   *slog.Logger
	keep  time.Duration
	now   func() time.Time
}

const purgeSlice = 5000

// NewRetention keeps generations for days.
func NewRetention(store ports.GenerationStore, log *slog.Logger, days int, env Env) *Retention {
	return &Retention{store: store, log: log, keep: time.Duration(days) * 24 * time.Hour, now: env.Now}
}

// Worker purges at once and then every interval; with a retention of 0 days it does nothing.
func (r *Retention) Worker(interval time.Duration) Worker {
	every := Every("retention", interval, func(ctx context.Context) { r.Purge(ctx) })
	return Worker{Name: every.Name, Run: func(ctx context.Context) {
		if r.keep == 0 {
			return
		}
		r.Purge(ctx)
		every.Run(ctx)
	}}
}

// Purge deletes everything older than the retention, slice by slice, and returns how many records went.
func (r *Retention) Purge(ctx context.Context) int64 {
	before := r.now().Add(-r.keep)
	var total int64
	for {
		n, err := r.store.PurgeGenerations(ctx, before, purgeSlice)
		total += n
		if err != nil {
			r.log.ErrorContext(ctx, "purge old generations", "err", err)
			return total
		}
		if n < purgeSlice {
			if total > 0 {
				r.log.InfoContext(ctx, "purged old generations", "records", total, "before", before)
			}
			return total
		}
	}
}
