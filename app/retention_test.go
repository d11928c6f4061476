package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/memstore"
)

// purgeable holds old records and contents and hands them to purges a slice at a time, saying what it was asked.
type purgeable struct {
	ports.GenerationRetention
	records, contents int64
	calls             []string
	fail              error
	prepared          [][2]time.Time
}

func (p *purgeable) slice(what string, left *int64, before time.Time, limit int) (int64, error) {
	p.calls = append(p.calls, fmt.Sprintf("%s<%s", what, before.Format(time.DateTime)))
	if p.fail != nil {
		return 0, p.fail
	}
	n := min(*left, int64(limit))
	*left -= n
	return n, nil
}

func (p *purgeable) PurgeGenerations(_ context.Context, before time.Time, limit int) (int64, error) {
	return p.slice("records", &p.records, before, limit)
}

func (p *purgeable) PurgeContents(_ context.Context, before time.Time, limit int) (int64, error) {
	return p.slice("contents", &p.contents, before, limit)
}

func (p *purgeable) PrepareDays(_ context.Context, from, through time.Time) error {
	p.prepared = append(p.prepared, [2]time.Time{from, through})
	return p.fail
}

// TestRetentionPurgesInSlices: contents go first, then records, a slice per call until a slice comes back short,
// each before the start of a UTC day (today's, less the days kept); a failure stops that purge with what it did.
func TestRetentionPurgesInSlices(t *testing.T) {
	t.Parallel()
	env := app.Env{Now: func() time.Time { return t0 }} // 2026-03-18 15:04:05
	for _, tc := range []struct {
		name              string
		days, contentDays int
		want              []string
	}{
		{"one retention for both", 30, 0, []string{"contents<2026-02-16 00:00:00", "contents<2026-02-16 00:00:00",
			"records<2026-02-16 00:00:00", "records<2026-02-16 00:00:00", "records<2026-02-16 00:00:00"}},
		{"contents kept less", 30, 7, []string{"contents<2026-03-11 00:00:00", "contents<2026-03-11 00:00:00",
			"records<2026-02-16 00:00:00", "records<2026-02-16 00:00:00", "records<2026-02-16 00:00:00"}},
		{"records kept forever", 0, 7, []string{"contents<2026-03-11 00:00:00", "contents<2026-03-11 00:00:00"}},
	} {
		s := &purgeable{records: 12_345, contents: 6_000}
		n := app.NewRetention(s, quiet(), tc.days, tc.contentDays, env).Purge(context.Background())
		if want := map[bool]int64{true: 12_345, false: 0}[tc.days > 0]; n != want {
			t.Errorf("%s: purged %d records, want %d", tc.name, n, want)
		}
		if fmt.Sprint(s.calls) != fmt.Sprint(tc.want) {
			t.Errorf("%s: purges %v\nwant %v", tc.name, s.calls, tc.want)
		}
	}
	broken := &purgeable{records: 1, contents: 1, fail: errors.New("database down")}
	if n := app.NewRetention(broken, quiet(), 30, 0, env).Purge(context.Background()); n != 0 || len(broken.calls) != 2 {
		t.Fatalf("a failing purge: %d purged in %v", n, broken.calls)
	}
}

// TestRetentionOff: with 0 days nothing is ever purged, and the worker returns at once.
func TestRetentionOff(t *testing.T) {
	t.Parallel()
	s := &purgeable{records: 10}
	w := app.NewRetention(s, quiet(), 0, 0, app.Env{Now: func() time.Time { return t0 }}).Worker(time.Hour)
	w.Run(context.Background()) // would block until the context ends if it ran
	if len(s.calls) != 0 {
		t.Fatal("a retention of 0 days purged")
	}
}

// TestRetentionContentBeforeRecords: on a store that keeps both (test/memstore, the same contract as the GORM
// store), contents kept for 7 days and records for 30 leave records of 8-30 days without content, and none older.
func TestRetentionContentBeforeRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &memstore.Generations{}
	var batch []generation.Entry
	for age := range 40 {
		at := t0.AddDate(0, 0, -age)
		batch = append(batch, generation.Entry{Record: generation.Record{ID: generation.NewID(at, "x"), CreatedAt: at},
			Content: &generation.Content{Output: generation.Output{Completion: "hi"}}})
	}
	if err := s.InsertGenerations(ctx, batch); err != nil {
		t.Fatal(err)
	}
	app.NewRetention(s, quiet(), 30, 7, app.Env{Now: func() time.Time { return t0 }}).Purge(ctx)
	for age, e := range batch {
		_, recErr := s.Generation(ctx, e.Record.ID)
		_, contentErr := s.GenerationContent(ctx, e.Record.ID)
		record, content := recErr == nil, contentErr == nil
		// Kept: the days counted back from the start of today, so a record 30 days and some hours old stays.
		if wantRecord, wantContent := age <= 30, age <= 7; record != wantRecord || content != wantContent {
			t.Errorf("%d days old: record kept %t, content kept %t; want %t and %t", age, record, content, wantRecord, wantContent)
		}
	}
}

// TestDaysPrepareAhead: the worker prepares today through a week ahead at once, and a failure is logged, not
// fatal.
func TestDaysPrepareAhead(t *testing.T) {
	t.Parallel()
	s := &purgeable{}
	if err := app.NewDays(s, quiet(), app.Env{Now: func() time.Time { return t0 }}).Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := [2]time.Time{generation.Day(t0), generation.Day(t0).AddDate(0, 0, app.DaysAhead)}
	if len(s.prepared) != 1 || s.prepared[0] != want {
		t.Fatalf("prepared %v, want %v", s.prepared, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	failing := &purgeable{fail: errors.New("database down")}
	app.NewDays(failing, quiet(), app.Env{Now: func() time.Time { return t0 }}).Worker(time.Hour).Run(ctx)
	if len(failing.prepared) != 1 {
		t.Fatalf("the worker prepared %d times before its stop, want once, at start", len(failing.prepared))
	}
}
