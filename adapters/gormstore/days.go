package gormstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// Days of records on PostgreSQL. generations and generation_contents are partitioned by range of created_at, one
// partition a UTC day: a day is the unit of retention (a day past it is dropped whole, where DELETE left dead rows
// to vacuum, and bloat), a lookup by id reads the partitions of the days its id's time allows (see
// generation.IDTime), a list over a week reads seven, and a day's indexes are small enough to stay in memory while
// the day's records are written into them, however many days the table holds. A day is the retention settings'
// unit; a week or a month a partition would keep up to that much past them, and hold that much in indexes the
// writes go to. docs/records.md has the figures.
//
// A partition is named for its range: <table>_pYYYYMMDD holds that day, and <table>_before_YYYYMMDD everything
// before that day (the table a deployment had before partitioning, attached whole by migration 0010). Partitions
// carry their own primary key on id (PostgreSQL cannot enforce one across partitions without the partition key in
// it): a record is stored again only by a replay of its entry, whose created_at is the same, so it meets its
// earlier self in the same partition. Contents written before migration 0010 stay in generation_contents_legacy,
// a table of its own that lookups fall back to and retention drops once its records have gone.

const (
	partitionDay = "20060102"
	// legacyContents holds the contents written before the contents were partitioned; it has no created_at.
	legacyContents = "generation_contents_legacy"
	// daysLock serialises the creation of partitions across replicas (a transaction's advisory lock).
	daysLock = 0x5357_4254_4400 // "SWBTD"
)

// dayTables are the tables kept by day, records first.
var dayTables = [...]string{"generations", "generation_contents"}

// partition is one partition of a table kept by day: the days it holds, from from (zero: every day before to) to
// to.
type partition struct {
	name     string
	from, to time.Time
}

func dayName(table string, day time.Time) string { return table + "_p" + day.Format(partitionDay) }

// pgTime is a literal of t for a statement's text.
func pgTime(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00'" }

// partitions lists table's partitions, read from their names; a partition named otherwise (made by hand) is left
// out.
func partitions(ctx context.Context, db *gorm.DB, table string) ([]partition, error) {
	var names []string
	if err := db.WithContext(ctx).Raw(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass(?)`, table).Scan(&names).Error; err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	var out []partition
	for _, name := range names {
		if p, ok := parsePartition(table, name); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b partition) int { return a.to.Compare(b.to) })
	return out, nil
}

func parsePartition(table, name string) (partition, bool) {
	if day, ok := strings.CutPrefix(name, table+"_p"); ok {
		d, err := time.Parse(partitionDay, day)
		return partition{name: name, from: d, to: d.AddDate(0, 0, 1)}, err == nil
	}
	if day, ok := strings.CutPrefix(name, table+"_before_"); ok {
		d, err := time.Parse(partitionDay, day)
		return partition{name: name, to: d}, err == nil
	}
	return partition{}, false
}

// holds reports whether a partition holds day.
func holds(ps []partition, day time.Time) bool {
	for _, p := range ps {
		if !day.Before(p.from) && day.Before(p.to) {
			return true
		}
	}
	return false
}

// missingDays are the days from from through through that table has no partition for.
func missingDays(ps []partition, from, through time.Time) []time.Time {
	var out []time.Time
	for d := generation.Day(from); !d.After(through); d = d.AddDate(0, 0, 1) {
		if !holds(ps, d) {
			out = append(out, d)
		}
	}
	return out
}

// prepareDays creates the partitions of both tables for the days from from through through that have none. A
// partition is created empty and then attached, which locks the table SHARE UPDATE EXCLUSIVE (reads and writes
// go on; CREATE TABLE ... PARTITION OF would lock it ACCESS EXCLUSIVE). Replicas doing this at once take turns
// on an advisory lock, and each creates only what the one before it did not.
func prepareDays(ctx context.Context, db *gorm.DB, from, through time.Time) error {
	from, through = generation.Day(from), generation.Day(through)
	var missing bool
	for _, table := range dayTables {
		ps, err := partitions(ctx, db, table)
		if err != nil {
			return err
		}
		missing = missing || len(missingDays(ps, from, through)) > 0
	}
	if !missing {
		return nil
	}
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT set_config('lock_timeout', '5s', true), pg_advisory_xact_lock(?)", daysLock).Error; err != nil {
			return fmt.Errorf("take the days lock: %w", err)
		}
		return createDays(ctx, tx, from, through)
	})
}

// createDays creates, in tx, the partitions missing for the days from from through through.
func createDays(ctx context.Context, tx *gorm.DB, from, through time.Time) error {
	for _, table := range dayTables {
		ps, err := partitions(ctx, tx, table)
		if err != nil {
			return err
		}
		for _, d := range missingDays(ps, from, through) {
			name := dayName(table, d)
			for _, stmt := range []string{
				"CREATE TABLE " + name + " (LIKE " + table + " INCLUDING DEFAULTS, PRIMARY KEY (id))",
				"ALTER TABLE " + table + " ATTACH PARTITION " + name + " FOR VALUES FROM (" + pgTime(d) + ") TO (" +
					pgTime(d.AddDate(0, 0, 1)) + ")",
			} {
				if err := tx.WithContext(ctx).Exec(stmt).Error; err != nil {
					return fmt.Errorf("create partition %s: %w", name, err)
				}
			}
		}
	}
	return nil
}

// noPartition reports an insert of a row whose day has no partition: a check violation (23514) of a table kept by
// day and of no constraint (the message, "no partition of relation ... found for row", is in the server's
// language).
func noPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == "" &&
		slices.Contains(dayTables[:], pgErr.TableName)
}

// dropDays removes the partitions of tables that hold only days before before, and the contents kept from before
// days when legacyToo is set; it says how many rows of table counted they held, as the planner's statistics
// estimate (counting them would read the days removed).
//
// A day leaves its table first: DETACH PARTITION, in a transaction of its own (its contents, then its records),
// which locks the partitioned table ACCESS EXCLUSIVE for a few milliseconds of catalog updates, once the
// statements already running on it have finished, and gives up after lock_timeout (an unavailable error: the next
// purge goes on) rather than hold the statements queued behind it longer. The detached tables are dropped after,
// blocking no one: a drop's commit unlinks the day's files, a third of a second for a 10-million-record table's
// day on the measuring machine, which DROP TABLE of a partition did while holding the partitioned table's lock.
// Tables a purge detached and did not drop (a crash between the two) are dropped by the next. (DETACH PARTITION
// CONCURRENTLY takes a weaker lock, but in two transactions a partition, waiting for every transaction before
// it, and a failure leaves a partition half detached.)
func dropDays(ctx context.Context, db *gorm.DB, before time.Time, tables []string, counted string, legacyToo bool) (int64, error) {
	type victim struct{ table, name string }
	groups := map[time.Time][]victim{} // by the day a partition ends: a day's tables go together
	for _, table := range tables {
		ps, err := partitions(ctx, db, table)
		if err != nil {
			return 0, err
		}
		for _, p := range ps {
			if !p.to.After(before) {
				groups[p.to] = append(groups[p.to], victim{table, p.name})
			}
		}
	}
	if legacyToo {
		var kept bool
		if err := db.WithContext(ctx).Raw("SELECT to_regclass(?) IS NOT NULL", legacyContents).Scan(&kept).Error; err != nil {
			return 0, err
		}
		if kept { // with the records they belong to, if those go now; first otherwise
			var end time.Time
			for to, vs := range groups {
				if slices.ContainsFunc(vs, func(v victim) bool { return v.table == "generations" && strings.Contains(v.name, "_before_") }) {
					end = to
				}
			}
			groups[end] = append(groups[end], victim{"", legacyContents}) // not a partition: only dropped
		}
	}
	detached, err := detachedDays(ctx, db, tables, before)
	if err != nil {
		return 0, err
	}
	ends := slices.SortedFunc(maps.Keys(groups), func(a, b time.Time) int { return a.Compare(b) })
	var rows int64
	for _, end := range ends {
		vs := groups[end]
		// Contents first: retention removes a content before its record, never the reverse.
		rank := func(v victim) int {
			if v.table == "generations" {
				return 1
			}
			return 0
		}
		slices.SortStableFunc(vs, func(a, b victim) int { return cmp.Compare(rank(a), rank(b)) })
		var day int64
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			// A detach lost to a crash of the server is done again by the next purge: its commit need not wait for
			// the disk, while the table's statements wait behind it.
			if err := tx.Exec("SELECT set_config('lock_timeout', '2s', true), set_config('synchronous_commit', 'off', true)").Error; err != nil {
				return err
			}
			for _, v := range vs {
				var n float64
				if err := tx.Raw("SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = to_regclass(?)", v.name).Scan(&n).Error; err != nil {
					return err
				}
				if v.table != "" {
					if err := tx.Exec("ALTER TABLE " + v.table + " DETACH PARTITION " + v.name).Error; err != nil {
						return fmt.Errorf("detach %s: %w", v.name, err)
					}
				}
				if v.table == counted || (v.table == "" && counted == "generation_contents") {
					day += int64(n)
				}
			}
			return nil
		})
		if err != nil {
			return rows, classify(err)
		}
		rows += day
		for _, v := range vs {
			detached = append(detached, v.name)
		}
	}
	for _, name := range detached {
		if err := db.WithContext(ctx).Exec("DROP TABLE IF EXISTS " + name).Error; err != nil {
			return rows, fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return rows, nil
}

// detachedDays are the tables of days (of tables) before before that are no partition any more: detached by a
// purge that did not get to drop them.
func detachedDays(ctx context.Context, db *gorm.DB, tables []string, before time.Time) ([]string, error) {
	var out []string
	for _, table := range tables {
		var names []string
		if err := db.WithContext(ctx).Raw(`SELECT relname FROM pg_class WHERE relkind = 'r' AND NOT relispartition
			AND (relname LIKE ? OR relname LIKE ?)`, table+`\_p%`, table+`\_before\_%`).Scan(&names).Error; err != nil {
			return nil, fmt.Errorf("look for detached days of %s: %w", table, err)
		}
		for _, name := range names {
			if p, ok := parsePartition(table, name); ok && !p.to.After(before) {
				out = append(out, name)
			}
		}
	}
	return out, nil
}
