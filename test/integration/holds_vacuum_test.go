package integration_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// TestSettledHoldsAreVacuumed: on PostgreSQL the records' batches, which delete their calls' holds, vacuum the holds
// tables once they have settled 2000 holds between them (a batch that settles none counts for nothing, and a
// retried batch that falls back to a record at a time counts too), so that reservations do not read ever more
// dead holds between autovacuum's visits.
func TestSettledHoldsAreVacuumed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Postgres(t)
	s := gormstore.NewGenerationStore(db)
	// Holds of 3000 calls, gen-0 to gen-2999, as their reservations left them, half against a key's limit.
	for _, q := range []string{
		`INSERT INTO credit_holds (id, amount_micros, expires_at) SELECT 'gen-' || i, 10, now() + interval '1 hour' FROM generate_series(0, 2999) i`,
		`INSERT INTO key_holds (id, key_hash, amount_micros, expires_at) SELECT 'gen-' || i, 'k', 10, now() + interval '1 hour' FROM generate_series(0, 2999, 2) i`,
	} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	entries := func(ids ...int) []generation.Entry {
		out := make([]generation.Entry, len(ids))
		for i, id := range ids {
			out[i] = generation.Entry{Record: generation.Record{ID: fmt.Sprintf("gen-%d", id), KeyHash: "k", CreatedAt: t0}}
		}
		return out
	}
	span := func(from, to int) []int {
		var ids []int
		for i := from; i < to; i++ {
			ids = append(ids, i)
		}
		return ids
	}
	vacuums := func(table string) (n int64) {
		if err := db.Raw(`SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = ?`, table).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, step := range []struct {
		name    string
		batch   []generation.Entry
		vacuums int64 // of each holds table, after the batch
	}{
		{"1200 holds settled", entries(span(0, 800)...), 0}, // 800 credit holds and 400 key holds
		{"calls that took no holds", entries(span(5000, 6000)...), 0},
		{"1950 settled", entries(span(800, 1300)...), 0},
		{"2001 settled: vacuumed", entries(span(1300, 1334)...), 1},
		// Records stored before: the batch falls back to a record at a time, and settles the fresh ones' holds.
		{"1500 settled since, by a retried batch", entries(span(1000, 2334)...), 1},
		{"2250 settled since, by another: vacuumed", entries(append([]int{1000}, span(2334, 2834)...)...), 2},
	} {
		if err := s.InsertGenerations(ctx, step.batch); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		for _, table := range []string{"credit_holds", "key_holds", "guardrail_holds", "workspace_holds"} {
			if got := vacuums(table); got != step.vacuums {
				t.Errorf("%s: %s vacuumed %d times, want %d", step.name, table, got, step.vacuums)
			}
		}
	}
}
