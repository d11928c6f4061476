package gormstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.ActivityStore = (*GenerationStore)(nil)

// activityDims are generation_activity's key columns, in the order of generation.CompareActivityKeys, with the
// group that keeps each apart.
var activityDims = [...]struct {
	group ports.ActivityGroup
	col   string
}{
	{ports.ByDay, "day"}, {ports.ByWorkspace, "workspace_id"}, {ports.ByKey, "key_hash"}, {ports.ByUser, "user_id"},
	{ports.ByModel, "model"}, {ports.ByProvider, "provider_name"}, {ports.ByEndpoint, "endpoint_id"},
}

// activitySums are its counters.
var activitySums = [...]string{"requests", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
	"cost_micros", "byok_cost_micros"}

// activityTable is a table of activity: its key columns (a subset of activityDims, in their order) and how a
// key of generation.Activity maps to its rows.
type activityTable struct {
	name string
	dims []string
	key  func(generation.ActivityKey) generation.ActivityKey
}

var (
	// keyActivity keeps each key apart; workspaceActivity sums a workspace's keys (see migration 0011); keyTotals
	// sums each key's day (see migration 0016).
	keyActivity       = activityTable{"generation_activity", activityCols(0), func(k generation.ActivityKey) generation.ActivityKey { return k }}
	workspaceActivity = activityTable{"workspace_activity", activityCols(ports.ByKey | ports.ByUser), generation.WorkspaceKey}
	keyTotals         = activityTable{"key_activity", activityCols(ports.ByUser | ports.ByModel | ports.ByProvider | ports.ByEndpoint), generation.KeyTotalKey}
)

// activityTables are the tables of activity, fewest rows first: a read takes the first that has the columns it
// groups by and filters on.
var activityTables = [...]activityTable{workspaceActivity, keyTotals, keyActivity}

// activityCols are the key columns of activityDims but those of the groups without.
func activityCols(without ports.ActivityGroup) []string {
	var cols []string
	for _, d := range activityDims {
		if d.group&without == 0 {
			cols = append(cols, d.col)
		}
	}
	return cols
}

// activityUpserts add a batch's activity (in its keys' order: generation.Aggregate) to every table of activity, in
// one order, so writers lock their rows in one order.
func activityUpserts(rows []generation.Activity, dialect string) []statement {
	return []statement{keyActivity.upsert(rows, dialect), keyTotals.upsert(generation.Sum(rows, keyTotals.key), dialect),
		workspaceActivity.upsert(generation.Sum(rows, workspaceActivity.key), dialect)}
}

// upsert adds rows to the table: on PostgreSQL given a column at a time, as arrays, and on SQLite as one JSON
// array of rows, so that the statement has one shape whatever the batch (see prepared).
func (t activityTable) upsert(rows []generation.Activity, dialect string) statement {
	cols := append(slices.Clone(t.dims), activitySums[:]...)
	sets := make([]string, len(activitySums))
	for i, c := range activitySums {
		sets[i] = c + " = " + t.name + "." + c + " + excluded." + c
	}
	values := make([][]any, len(rows)) // a row's values, in cols' order
	for i, r := range rows {
		k, u := r.ActivityKey, r.Usage
		all := map[string]any{"day": k.Day.Format(dayLayout), "workspace_id": k.WorkspaceID, "key_hash": k.KeyHash,
			"user_id": k.UserID, "model": k.Model, "provider_name": k.ProviderName, "endpoint_id": k.EndpointID}
		for _, c := range t.dims {
			values[i] = append(values[i], all[c])
		}
		values[i] = append(values[i], u.Requests, u.PromptTokens, u.CompletionTokens, u.ReasoningTokens, u.CachedTokens,
			int64(u.Cost), int64(u.BYOKCost))
	}
	var source string
	var args []any
	if dialect == SQLite {
		each := make([]string, len(cols))
		for i := range cols {
			each[i] = fmt.Sprintf("json_extract(value, '$[%d]')", i)
		}
		// The WHERE lets SQLite parse the ON CONFLICT after a SELECT.
		source, args = "SELECT "+strings.Join(each, ", ")+" FROM json_each(?) WHERE true", []any{mustJSON(values)}
	} else {
		arrays := make([]string, len(cols))
		for c := range cols {
			var column any
			if c < len(t.dims) {
				text := make([]string, len(values))
				for i := range values {
					text[i] = values[i][c].(string)
				}
				arrays[c], column = "?::text[]", text
			} else {
				nums := make([]int64, len(values))
				for i := range values {
					nums[i] = values[i][c].(int64)
				}
				arrays[c], column = "?::int8[]", nums
			}
			args = append(args, column)
		}
		source = "SELECT * FROM unnest(" + strings.Join(arrays, ", ") + ")"
	}
	return statement{sql: "INSERT INTO " + t.name + " (" + strings.Join(cols, ", ") + ") " + source +
		" ON CONFLICT (" + strings.Join(t.dims, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", "), args: args}
}

// Activity sums the rows the filter selects by the dimensions it keeps apart: from the table of fewest rows that
// has the columns it groups by and filters on (activityTables). The days are a table's leading column, and a key's, a member's
// or a workspace's rows have an index of their own: a month of activity reads a month of rows, never a record.
func (s *GenerationStore) Activity(ctx context.Context, f ports.ActivityFilter) ([]generation.Activity, error) {
	postgres := Dialect(s.db) == Postgres
	var needs []string // the columns the read groups by and filters on
	for _, d := range activityDims {
		if f.GroupBy&d.group != 0 {
			needs = append(needs, d.col)
		}
	}
	for col, v := range map[string]string{"workspace_id": f.WorkspaceID, "key_hash": f.KeyHash, "user_id": f.UserID,
		"model": f.Model, "provider_name": f.ProviderName} {
		if v != "" {
			needs = append(needs, col)
		}
	}
	table := keyActivity
	for _, t := range activityTables {
		if !slices.ContainsFunc(needs, func(c string) bool { return !slices.Contains(t.dims, c) }) {
			table = t
			break
		}
	}
	sel := make([]string, 0, len(activityDims)+len(activitySums))
	var group, order []string
	for _, d := range activityDims {
		if f.GroupBy&d.group == 0 || !slices.Contains(table.dims, d.col) {
			sel = append(sel, "'' AS "+d.col)
			continue
		}
		sel, group, order = append(sel, d.col), append(group, d.col), append(order, d.col)
		if postgres {
			order[len(order)-1] += ` COLLATE "C"` // bytes, as generation.CompareActivityKeys orders them
		}
	}
	for _, c := range activitySums {
		sel = append(sel, "COALESCE(SUM("+c+"), 0)")
	}
	var where []string
	var args []any
	if !f.From.IsZero() {
		where, args = append(where, "day >= ?"), append(args, generation.Day(f.From).Format(dayLayout))
	}
	if !f.To.IsZero() {
		end := generation.Day(f.To)
		if f.To.After(end) { // a day whose midnight is before To is selected
			end = end.AddDate(0, 0, 1)
		}
		where, args = append(where, "day < ?"), append(args, end.Format(dayLayout))
	}
	for _, eq := range [...]struct{ col, v string }{{"workspace_id", f.WorkspaceID}, {"key_hash", f.KeyHash},
		{"user_id", f.UserID}, {"model", f.Model}, {"provider_name", f.ProviderName}} {
		if eq.v != "" {
			where, args = append(where, eq.col+" = ?"), append(args, eq.v)
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + table.name
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if len(group) > 0 {
		q += " GROUP BY " + strings.Join(group, ", ") + " ORDER BY " + strings.Join(order, ", ")
	} else {
		q += " HAVING count(*) > 0" // no row, rather than one of zeros, when nothing is selected
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read activity: %w", err)
	}
	defer rows.Close()
	var out []generation.Activity
	for rows.Next() {
		var a generation.Activity
		var day string
		var cost, byok int64
		if err := rows.Scan(&day, &a.WorkspaceID, &a.KeyHash, &a.UserID, &a.Model, &a.ProviderName, &a.EndpointID,
			&a.Requests, &a.PromptTokens, &a.CompletionTokens, &a.ReasoningTokens, &a.CachedTokens, &cost, &byok); err != nil {
			return nil, fmt.Errorf("read activity: %w", translate(s.db, err))
		}
		if day != "" {
			if a.Day, err = time.Parse(dayLayout, day); err != nil {
				return nil, fmt.Errorf("read activity: day %q: %w", day, err)
			}
		}
		a.Cost, a.BYOKCost = domain.Micros(cost), domain.Micros(byok)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read activity: %w", translate(s.db, err))
	}
	return out, nil
}

// query runs a read whose text varies with its filter (a list, a sum): on PostgreSQL as an unnamed statement,
// planned with its parameters' values (so only the partitions their times allow are read, and locked) and not
// kept in the connection's cache of prepared statements, which a statement of many shapes would churn; on SQLite
// as it is.
func (s *GenerationStore) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	if Dialect(s.db) == Postgres {
		rows, err := sqlDB.QueryContext(ctx, rebind(q), append([]any{pgx.QueryExecModeExec}, args...)...)
		return rows, translate(s.db, err)
	}
	rows, err := sqlDB.QueryContext(ctx, q, args...)
	return rows, translate(s.db, err)
}
