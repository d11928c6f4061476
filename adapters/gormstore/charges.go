package gormstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// statement is one SQL statement with ? placeholders, run on GORM or, rebound, on pgx. settles says that the rows
// it changes are holds it deletes (see holdsVacuum).
type statement struct {
	sql     string
	args    []any
	settles bool
}

// rebind turns ? placeholders into PostgreSQL's $n for pgx. It copies the text between them whole, into one
// allocation, where a rune and a string a placeholder took 23-44 µs for the record's INSERT of 46 columns (now 3-7,
// on a loaded machine): the recorder rebinds each statement of each batch, and at one call in flight that was a
// quarter of the CPU its pipeline of a batch took (benche2e's chat profile on PostgreSQL).
func rebind(sql string) string {
	b := make([]byte, 0, len(sql)+strings.Count(sql, "?")*3)
	for n := int64(1); ; n++ {
		i := strings.IndexByte(sql, '?')
		if i < 0 {
			return string(append(b, sql...))
		}
		b = strconv.AppendInt(append(append(b, sql[:i]...), '$'), n, 10)
		sql = sql[i+1:]
	}
}

func placeholders(n, width int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

type usageKey struct{ hash, day string }

type spendKey struct{ guardrailID, window string }

// charges are the statements that book the charges of entries written in the same transaction (see
// generation.Entry): key usage by UTC day, the organization's credit usage, and the settlement of the holds the
// calls took against guardrail budgets, the key's limit, the credits and the workspace's budgets (the last three
// carry the generation id);
// and the records' activity (generation_activity), which so never disagrees with them: a replay that skips
// records stored before skips their activity with their charges.
// Rows are touched in a fixed order so that concurrent writers cannot deadlock. The holds are deleted by ids given
// as one parameter (on SQLite a JSON array, on PostgreSQL an array), so that the statements keep one shape
// whatever the batch: SQLite parses each once (see prepared), and PostgreSQL plans one statement where a list of
// placeholders was a statement per batch size, each prepared and planned anew.
func charges(entries []generation.Entry, dialect string) []statement {
	usage := map[usageKey]int64{}
	spend := map[spendKey]int64{}
	var credits int64
	var holds, ids []string
	for _, e := range entries {
		ids = append(ids, e.Record.ID)
		cost := int64(e.Record.TotalCost)
		if cost != 0 {
			usage[usageKey{e.Record.KeyHash, e.Record.CreatedAt.UTC().Format(dayLayout)}] += cost
			credits += cost
		}
		for _, h := range e.Holds {
			holds = append(holds, h.ID)
			if cost != 0 {
				spend[spendKey{h.GuardrailID, h.Window.UTC().Format(dayLayout)}] += cost
			}
		}
	}
	in := func(ids []string) (string, []any) {
		if dialect == SQLite {
			return "IN (SELECT value FROM json_each(?))", []any{mustJSON(ids)}
		}
		return "= ANY(?)", []any{ids}
	}
	deleteHolds := func(table string, ids []string) statement {
		where, args := in(ids)
		return statement{"DELETE FROM " + table + " WHERE id " + where, args, true}
	}
	out := []statement{deleteHolds("key_holds", ids), deleteHolds("credit_holds", ids), deleteHolds("workspace_holds", ids)}
	if len(holds) > 0 {
		out = append(out, deleteHolds("guardrail_holds", holds))
	}
	for _, k := range sortedKeys(spend, func(a, b spendKey) int {
		return cmp.Or(strings.Compare(a.guardrailID, b.guardrailID), strings.Compare(a.window, b.window))
	}) {
		// a guardrail deleted since the call was admitted has no budget left to book
		out = append(out, statement{`INSERT INTO guardrail_budgets (guardrail_id, window_start, spent_micros)
			SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM guardrails WHERE id = ?)
			ON CONFLICT (guardrail_id, window_start) DO UPDATE SET spent_micros = guardrail_budgets.spent_micros + excluded.spent_micros`,
			[]any{k.guardrailID, k.window, spend[k], k.guardrailID}, false})
	}
	// The activity of every record, a call that cost nothing included.
	out = append(out, activityUpserts(generation.Aggregate(entries), dialect)...)
	if len(usage) > 0 {
		keys := sortedKeys(usage, func(a, b usageKey) int { return cmp.Or(strings.Compare(a.hash, b.hash), strings.Compare(a.day, b.day)) })
		rows := make([][]any, len(keys))
		for i, k := range keys {
			rows[i] = []any{k.hash, k.day, usage[k]}
		}
		// On SQLite the rows are given as one JSON array of [key_hash, day, micros], so that the statement keeps
		// one shape whatever the number of keys (see prepared); its WHERE lets SQLite parse the ON CONFLICT.
		values, args := "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?) WHERE true", []any{mustJSON(rows)}
		if dialect != SQLite {
			values, args = "VALUES "+placeholders(len(rows), 3), slices.Concat(rows...)
		}
		out = append(out, statement{`INSERT INTO key_usage (key_hash, day, micros) ` + values + `
			ON CONFLICT (key_hash, day) DO UPDATE SET micros = key_usage.micros + excluded.micros`, args, false})
	}
	if credits != 0 {
		out = append(out, statement{"UPDATE credit_balance SET used_micros = used_micros + ? WHERE id = 1", []any{credits}, false})
	}
	return out
}

func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}

// Ping reports whether the database answers.
func (s *GenerationStore) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}
