package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// Retention removes generation contents, and then records, past their retention, in the background: whole UTC
// days (a store that keeps records by day drops them) and, where a store keeps no days, in slices, so that no
// purge holds long locks. A record is kept its days of retention counted back from the start of today, so up to a
// day longer; its content as long, or its own number of days when that is set.
type Retention struct {
	store             ports.GenerationRetention
	log               *slog.Logger
	days, contentDays int
	now               func() time.Time
}

const purgeSlice = 5000

// NewRetention keeps records for days and their contents for contentDays (0: as long as the records); 0 days
// keep forever.
func NewRetention(store ports.GenerationRetention, log *slog.Logger, days, contentDays int, env Env) *Retention {
	if contentDays == 0 {
		contentDays = days
	}
	return &Retention{store: store, log: log, days: days, contentDays: contentDays, now: env.Now}
}

// Worker purges at once and then every interval; when nothing has a retention it does nothing.
func (r *Retention) Worker(interval time.Duration) Worker {
	every := Every("retention", interval, func(ctx context.Context) { r.Purge(ctx) })
	return Worker{Name: every.Name, Run: func(ctx context.Context) {
		if r.days == 0 && r.contentDays == 0 {
			return
		}
		r.Purge(ctx)
		every.Run(ctx)
	}}
}

// Purge removes the contents and then the records past their retention, and returns how many records went.
func (r *Retention) Purge(ctx context.Context) int64 {
	today := generation.Day(r.now())
	if r.contentDays > 0 {
		before := today.AddDate(0, 0, -r.contentDays)
		if n, ok := r.slices(ctx, "contents", r.store.PurgeContents, before); n > 0 || !ok {
			r.log.InfoContext(ctx, "purged old generation contents", "contents", n, "before", before)
		}
	}
	if r.days == 0 {
		return 0
	}
	before := today.AddDate(0, 0, -r.days)
	n, _ := r.slices(ctx, "records", r.store.PurgeGenerations, before)
	if n > 0 {
		r.log.InfoContext(ctx, "purged old generations", "records", n, "before", before)
	}
	return n
}

// slices calls purge until it comes back short, and says how many went and whether it got there.
func (r *Retention) slices(ctx context.Context, what string, purge func(context.Context, time.Time, int) (int64, error),
	before time.Time) (int64, bool) {
	var total int64
	for {
		n, err := purge(ctx, before, purgeSlice)
		total += n
		if err != nil {
			r.log.ErrorContext(ctx, "purge old generation "+what, "err", err)
			return total, false
		}
		if n < purgeSlice {
			return total, true
		}
	}
}

// Days makes the store ready for the coming days' records ahead of them (on PostgreSQL, each day's partitions),
// so that no record waits for that work: on start and then every interval, today through Ahead days on. A store
// also prepares a day its first record finds unprepared; this keeps that off the recorder's way.
type Days struct {
	store ports.GenerationRetention
	log   *slog.Logger
	now   func() time.Time
}

// DaysAhead is how many days ahead of today Days prepares: a week of days in which the worker may fail unnoticed
// before a record waits.
const DaysAhead = 7

func NewDays(store ports.GenerationRetention, log *slog.Logger, env Env) *Days {
	return &Days{store: store, log: log, now: env.Now}
}

// Prepare makes today through DaysAhead days on ready.
func (d *Days) Prepare(ctx context.Context) error {
	today := generation.Day(d.now())
	return d.store.PrepareDays(ctx, today, today.AddDate(0, 0, DaysAhead))
}

// Worker prepares at once and then every interval.
func (d *Days) Worker(interval time.Duration) Worker {
	tick := func(ctx context.Context) {
		if err := d.Prepare(ctx); err != nil {
			d.log.ErrorContext(ctx, "prepare the coming days of generation records (each day is prepared by its first record otherwise)", "err", err)
		}
	}
	every := Every("days", interval, tick)
	return Worker{Name: every.Name, Run: func(ctx context.Context) {
		tick(context.WithoutCancel(ctx))
		every.Run(ctx)
	}}
}
