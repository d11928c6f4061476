package gormstore

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.GenerationList = (*GenerationStore)(nil)

// ListGenerations reads a page of records, newest first, after the filter's cursor (keyset pagination: the page
// is found by its position, not by counting the records before it). Filtered by key, it walks the index by key
// and time; by session, the index by session; otherwise the index by time, newest first, testing the other
// filters on the records it meets. On PostgreSQL the times bound the days read: a week's list reads seven
// partitions at most.
func (s *GenerationStore) ListGenerations(ctx context.Context, f ports.GenerationFilter) (ports.GenerationPage, error) {
	limit := generation.PageSize(f.Limit)
	sh, err := shapeOf(s.db, reflect.TypeFor[generationRow]())
	if err != nil {
		return ports.GenerationPage{}, err
	}
	where, args, order := newestFirst(s.db, f.After)
	cond := func(c string, v any) { where, args = append(where, c), append(args, v) }
	if !f.From.IsZero() {
		cond("created_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		cond("created_at < ?", f.To.UTC())
	}
	for _, eq := range [...]struct {
		col string
		v   string
	}{{"workspace_id", f.WorkspaceID}, {"key_hash", f.KeyHash}, {"model", f.Model}, {"provider_name", f.ProviderName},
		{"session_id", f.SessionID}, {"user_id", f.UserID}, {"external_user", f.ExternalUser}} {
		if eq.v != "" {
			cond(eq.col+" = ?", eq.v)
		}
	}
	if f.Status != 0 {
		cond("status = ?", int64(f.Status))
	}
	q := "SELECT " + strings.Join(sh.cols, ", ") + " FROM generations"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(" ORDER BY %s LIMIT %d", order, limit+1)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return ports.GenerationPage{}, fmt.Errorf("list generations: %w", err)
	}
	defer rows.Close()
	var page ports.GenerationPage
	for rows.Next() {
		var r generationRow
		if err := rows.Scan(sh.pointers(ctx, reflect.ValueOf(&r).Elem())...); err != nil {
			return ports.GenerationPage{}, fmt.Errorf("list generations: %w", translate(s.db, err))
		}
		rec, err := r.domain()
		if err != nil {
			return ports.GenerationPage{}, err
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return ports.GenerationPage{}, fmt.Errorf("list generations: %w", translate(s.db, err))
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		next := generation.CursorOf(&page.Records[limit-1])
		page.Next = &next
	}
	return page, nil
}

// newestFirst is the keyset order of a table's rows by (created_at, id), newest first, and the conditions that
// select the rows after a cursor (none without one). Ties on created_at go by id, in bytes on both dialects
// (SQLite's default).
func newestFirst(db *gorm.DB, after *generation.Cursor) (where []string, args []any, order string) {
	id := "id"
	if Dialect(db) == Postgres {
		id = `id COLLATE "C"`
	}
	if c := after; c != nil {
		// The first bound lets PostgreSQL leave out the days (partitions) after the cursor; the second is the
		// position.
		where = []string{"created_at <= ?", "(created_at < ? OR (created_at = ? AND " + id + " < ?))"}
		args = []any{c.CreatedAt.UTC(), c.CreatedAt.UTC(), c.CreatedAt.UTC(), c.ID}
	}
	return where, args, "created_at DESC, " + id + " DESC"
}
