package gormstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.GenerationRetention = (*GenerationStore)(nil)

// PrepareDays creates the partitions of the days from from through through on PostgreSQL (see days.go); SQLite
// keeps one table.
func (s *GenerationStore) PrepareDays(ctx context.Context, from, through time.Time) error {
	if Dialect(s.db) != Postgres {
		return nil
	}
	return prepareDays(ctx, s.db, from, through)
}

// purgeOldest deletes the limit oldest records created before a time (SQLite, where the foreign key of their
// contents cascades).
const purgeOldest = `DELETE FROM generations WHERE id IN
	(SELECT id FROM generations WHERE created_at < ? ORDER BY created_at LIMIT ?)`

// purgeOldestContents deletes the limit oldest contents created before a time (SQLite).
const purgeOldestContents = `DELETE FROM generation_contents WHERE id IN
	(SELECT id FROM generation_contents WHERE created_at < ? ORDER BY created_at LIMIT ?)`

// PurgeGenerations, on PostgreSQL, drops the days (records and contents) that end before before, and the contents
// kept from before days once their records are gone; then it deletes up to limit records before before, with
// their contents, from a partition that also holds later ones (the records a deployment had before migration 0010,
// until they are all past before, or a day that before cuts). SQLite deletes the limit oldest.
func (s *GenerationStore) PurgeGenerations(ctx context.Context, before time.Time, limit int) (int64, error) {
	before = before.UTC()
	if Dialect(s.db) != Postgres {
		res := s.db.WithContext(ctx).Exec(purgeOldest, before, limit)
		if res.Error != nil {
			return 0, fmt.Errorf("purge generations: %w", res.Error)
		}
		return res.RowsAffected, nil
	}
	legacyToo, _, err := s.legacyPast(ctx, before)
	if err != nil {
		return 0, err
	}
	d, err := dropDays(ctx, s.db, before, dayTables[:], "generations", legacyToo)
	if err != nil {
		return 0, fmt.Errorf("purge generations: %w", err)
	}
	if legacyToo {
		s.legacy.set(false)
	}
	n, err := s.deleteOldest(ctx, before, limit)
	return d + n, err
}

// legacyPast reports whether the contents kept from before days may go whole: their records are all before
// before, or gone. It returns the end of those records' partition (zero when there is none).
func (s *GenerationStore) legacyPast(ctx context.Context, before time.Time) (bool, time.Time, error) {
	ps, err := partitions(ctx, s.db, "generations")
	if err != nil {
		return false, time.Time{}, err
	}
	for _, p := range ps {
		if p.from.IsZero() {
			return !p.to.After(before), p.to, nil
		}
	}
	return true, time.Time{}, nil
}

// deleteOldest deletes up to limit of the oldest records before before left after the days were dropped, with
// their contents, in one statement (see PurgeGenerations). The bound is a literal, so that PostgreSQL plans it on
// the partitions that hold days before it only.
func (s *GenerationStore) deleteOldest(ctx context.Context, before time.Time, limit int) (int64, error) {
	b := pgTime(before)
	q := `WITH gone AS (DELETE FROM generations WHERE (id, created_at) IN
			(SELECT id, created_at FROM generations WHERE created_at < ` + b + ` ORDER BY created_at LIMIT ?)
			RETURNING id, created_at),
		contents AS (DELETE FROM generation_contents WHERE created_at < ` + b + ` AND (id, created_at) IN
			(SELECT id, created_at FROM gone))`
	legacy := s.legacy.kept(ctx, s.db)
	if legacy {
		q += `, legacy AS (DELETE FROM ` + legacyContents + ` WHERE id IN (SELECT id FROM gone))`
	}
	var n int64
	err := s.db.WithContext(ctx).Raw(q+` SELECT count(*) FROM gone`, limit).Scan(&n).Error
	if legacy && undefinedTable(err) { // dropped by another replica meanwhile
		s.legacy.set(false)
		return s.deleteOldest(ctx, before, limit)
	}
	if err != nil {
		return 0, fmt.Errorf("purge generations: %w", err)
	}
	return n, nil
}

// PurgeContents, on PostgreSQL, drops the days of contents that end before before, and the contents kept from
// before days once their records are all before it; then it deletes up to limit contents before before from a
// day that before cuts, and those kept from before days of up to limit records before before (see legacyWalk).
// SQLite deletes the limit oldest.
func (s *GenerationStore) PurgeContents(ctx context.Context, before time.Time, limit int) (int64, error) {
	before = before.UTC()
	if Dialect(s.db) != Postgres {
		res := s.db.WithContext(ctx).Exec(purgeOldestContents, before, limit)
		if res.Error != nil {
			return 0, fmt.Errorf("purge generation contents: %w", res.Error)
		}
		return res.RowsAffected, nil
	}
	legacyToo, legacyEnd, err := s.legacyPast(ctx, before)
	if err != nil {
		return 0, err
	}
	d, err := dropDays(ctx, s.db, before, []string{"generation_contents"}, "generation_contents", legacyToo)
	if err != nil {
		return 0, fmt.Errorf("purge generation contents: %w", err)
	}
	if legacyToo {
		s.legacy.set(false)
	}
	var n int64
	b := pgTime(before)
	if err := s.db.WithContext(ctx).Raw(`WITH gone AS (DELETE FROM generation_contents WHERE (id, created_at) IN
		(SELECT id, created_at FROM generation_contents WHERE created_at < `+b+` LIMIT ?) RETURNING 1)
		SELECT count(*) FROM gone`, limit).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("purge generation contents: %w", err)
	}
	if !legacyToo && s.legacy.kept(ctx, s.db) {
		walked, err := s.walk.step(ctx, s, minTime(before, legacyEnd), limit)
		if err != nil {
			return 0, err
		}
		n += walked
	}
	return d + n, nil
}

// legacyWalk deletes the contents kept from before days (which have no created_at) of records before a time, a
// slice of records at a time, oldest first, from where its last slice ended: in this process's memory, so a
// process that starts walks again from the oldest record (finding their contents gone) until the contents are
// dropped whole, once their records are all past the retention.
type legacyWalk struct {
	mu sync.Mutex
	at time.Time
	id string
}

// step walks limit records and says how many it walked.
func (w *legacyWalk) step(ctx context.Context, s *GenerationStore, before time.Time, limit int) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var rows []struct {
		N         int64
		CreatedAt time.Time
		ID        string
	}
	err := s.db.WithContext(ctx).Raw(`WITH batch AS (SELECT id, created_at FROM generations
			WHERE created_at < `+pgTime(before)+` AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?),
		gone AS (DELETE FROM `+legacyContents+` WHERE id IN (SELECT id FROM batch))
		SELECT count(*) OVER () AS n, created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1`,
		w.at, w.id, limit).Scan(&rows).Error
	if undefinedTable(err) {
		s.legacy.set(false)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("purge generation contents kept from before days: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	w.at, w.id = rows[0].CreatedAt, rows[0].ID
	return rows[0].N, nil
}
