package gormstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// seedBatch is how many entries SQLite takes a transaction when seeding.
const seedBatch = 2000

// Seed writes entries fast into a store that holds none of their ids, for benchmarks and tests that need many
// records; the entries' days are from through through (UTC). On PostgreSQL it writes by COPY, the records and the
// contents each on a connection of its own, into the days' partitions (created first), and then the activity the
// entries add up to; SQLite takes them through InsertGenerations, in batches. No charge is booked (no key usage,
// credits or holds), and no id is looked for: an id stored already fails the seed on PostgreSQL. It returns how
// many entries it wrote.
func (s *GenerationStore) Seed(ctx context.Context, from, through time.Time, entries iter.Seq[generation.Entry]) (int, error) {
	if Dialect(s.db) != Postgres {
		return s.seedEach(ctx, entries)
	}
	if err := prepareDays(ctx, s.db, from, through); err != nil {
		return 0, err
	}
	records, contents, err := s.shapes()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	fail := func(err error) {
		if err != nil {
			cancel(err)
		}
	}
	recordRows, contentRows := make(chan []any, 4096), make(chan []any, 4096)
	activity := map[generation.ActivityKey]generation.Usage{}
	n := 0
	wg.Go(func() {
		defer close(recordRows)
		defer close(contentRows)
		for e := range entries {
			row := toGenerationRow(e.Record)
			select {
			case recordRows <- row.values():
			case <-ctx.Done():
				return
			}
			if e.Content != nil {
				c := toContentRow(&e.Record, *e.Content)
				select {
				case contentRows <- c.values():
				case <-ctx.Done():
					return
				}
			}
			a := e.Record.Activity()
			activity[a.ActivityKey] = activity[a.ActivityKey].Add(a.Usage)
			n++
		}
	})
	for _, t := range []struct {
		shape *shape
		rows  chan []any
	}{{records, recordRows}, {contents, contentRows}} {
		wg.Go(func() { fail(s.copyRows(ctx, t.shape, t.rows)) })
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	rows := make([]generation.Activity, 0, len(activity))
	for k, u := range activity {
		rows = append(rows, generation.Activity{ActivityKey: k, Usage: u})
	}
	slices.SortFunc(rows, func(a, b generation.Activity) int {
		return generation.CompareActivityKeys(a.ActivityKey, b.ActivityKey)
	})
	sqlDB, err := s.db.DB()
	if err != nil {
		return 0, err
	}
	for chunk := range slices.Chunk(rows, 5000) {
		for _, st := range activityUpserts(chunk, Postgres) {
			if _, err := sqlDB.ExecContext(ctx, rebind(st.sql), st.args...); err != nil {
				return 0, fmt.Errorf("seed activity: %w", err)
			}
		}
	}
	return n, nil
}

// copyRows copies the rows that come into sh's table, until rows is closed.
func (s *GenerationStore) copyRows(ctx context.Context, sh *shape, rows chan []any) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		src := &chanSource{ctx: ctx, rows: rows}
		_, err := driverConn.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{sh.table}, sh.cols, src)
		return errors.Join(err, src.err)
	})
}

// chanSource is a COPY's rows, as they come from a channel.
type chanSource struct {
	ctx  context.Context
	rows chan []any
	row  []any
	err  error
}

func (c *chanSource) Next() bool {
	select {
	case row, ok := <-c.rows:
		c.row = row
		return ok
	case <-c.ctx.Done():
		c.err = c.ctx.Err()
		return false
	}
}

func (c *chanSource) Values() ([]any, error) { return c.row, nil }
func (c *chanSource) Err() error             { return c.err }

// seedEach writes entries through InsertGenerations, seedBatch at a time.
func (s *GenerationStore) seedEach(ctx context.Context, entries iter.Seq[generation.Entry]) (int, error) {
	n := 0
	batch := make([]generation.Entry, 0, seedBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.InsertGenerations(ctx, batch)
		n, batch = n+len(batch), batch[:0]
		return err
	}
	for e := range entries {
		if batch = append(batch, e); len(batch) == seedBatch {
			if err := flush(); err != nil {
				return 0, fmt.Errorf("seed: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("seed: %w", err)
	}
	return n, nil
}
