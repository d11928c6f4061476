package gormstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// Migration 0010 on PostgreSQL: generations and generation_contents become tables kept by day (see days.go)
// without copying a record, and without a lock longer than a few statements' on catalogs.
//
// The records a deployment has are attached whole, as the partition generations_before_<Y> of every day before Y,
// where Y is after the newest of them and at least two days ahead. Attaching would scan the table to check that
// every record is before Y, and build on it the indexes the partitioned table has that it lacks, all under an
// ACCESS EXCLUSIVE lock; so daysBefore first gives the table a CHECK (created_at < Y) constraint, validated under
// a lock that lets reads and writes go on, and builds those indexes concurrently. The transaction (daysThen)
// then only renames, creates and attaches. The contents are renamed generation_contents_legacy and left as they
// are: they have no created_at to partition by, and writing one into every row would rewrite the table.
//
// A new database's empty tables are simply replaced.

// unpartitioned names what daysBefore adds to the table before it is attached.
const (
	unpartitioned     = "generations_unpartitioned"
	legacyBoundPrefix = "generations_before_"
	// legacyLead is how many days ahead of today the attached table's days end at least: the migration may run
	// a while after daysBefore bounded them.
	legacyLead = 2
)

// unpartitionedIndexes are the partitioned table's indexes that the table before it lacked, built concurrently.
var unpartitionedIndexes = [...]struct{ name, def string }{
	{unpartitioned + "_key", "(key_hash, created_at)"},
	{unpartitioned + "_session", "(session_id, created_at) WHERE session_id IS NOT NULL"},
}

// relkind is the kind of the relation named name ("r" a table, "p" a partitioned table), "" when there is none.
func relkind(db *gorm.DB, name string) (string, error) {
	var kind string
	if err := db.Raw("SELECT COALESCE((SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)), '')", name).
		Scan(&kind).Error; err != nil {
		return "", fmt.Errorf("look up %s: %w", name, err)
	}
	return kind, nil
}

// legacyBound is the day of the CHECK (created_at < day) constraint daysBefore gave generations, whether it is
// validated, and false when there is none.
func legacyBound(db *gorm.DB) (day time.Time, valid, ok bool, err error) {
	var rows []struct {
		Name  string
		Valid bool
	}
	if err := db.Raw(`SELECT conname AS name, convalidated AS valid FROM pg_constraint
		WHERE conrelid = to_regclass('generations') AND contype = 'c' AND conname LIKE ?`, legacyBoundPrefix+"%").
		Scan(&rows).Error; err != nil {
		return time.Time{}, false, false, fmt.Errorf("read the constraints of generations: %w", err)
	}
	if len(rows) == 0 {
		return time.Time{}, false, false, nil
	}
	day, err = time.Parse(partitionDay, strings.TrimPrefix(rows[0].Name, legacyBoundPrefix))
	if err != nil {
		return time.Time{}, false, false, fmt.Errorf("constraint %s: %w", rows[0].Name, err)
	}
	return day, rows[0].Valid, true, nil
}

// addLegacyBound gives generations the constraint that every record is before a day after the newest and at
// least legacyBoundLeadDay days ahead, not validated yet; nil when the table is empty (nothing to attach).
func addLegacyBound(db *gorm.DB) (*time.Time, error) {
	var newest sql.NullTime
	if err := db.Raw("SELECT max(created_at) FROM generations").Row().Scan(&newest); err != nil {
		return nil, fmt.Errorf("read the newest record: %w", err)
	}
	if !newest.Valid {
		return nil, nil
	}
	day := generation.Day(time.Now()).AddDate(0, 0, legacyLead)
	if next := generation.Day(newest.Time).AddDate(0, 0, 1); next.After(day) {
		day = next
	}
	if err := db.Exec("ALTER TABLE generations ADD CONSTRAINT " + legacyBoundPrefix + day.Format(partitionDay) +
		" CHECK (created_at < " + pgTime(day) + ") NOT VALID").Error; err != nil {
		return nil, fmt.Errorf("bound the records: %w", err)
	}
	return &day, nil
}

// daysBefore prepares a deployment's generations table for attaching, outside any transaction: its bound,
// validated (SHARE UPDATE EXCLUSIVE: reads and writes go on while it scans), and the indexes it lacks, built
// concurrently. A step that failed (an index left invalid) is done again.
func daysBefore(ctx context.Context, db *gorm.DB) error {
	db = db.WithContext(ctx)
	if kind, err := relkind(db, "generations"); err != nil || kind != "r" {
		return err // none yet (a new database: 0002 creates it in this run), or partitioned already
	}
	day, valid, ok, err := legacyBound(db)
	if err != nil {
		return err
	}
	if !ok {
		added, err := addLegacyBound(db)
		if err != nil || added == nil {
			return err // an empty table is replaced, not attached
		}
		day = *added
	}
	if !valid {
		if err := db.Exec("ALTER TABLE generations VALIDATE CONSTRAINT " + legacyBoundPrefix + day.Format(partitionDay)).Error; err != nil {
			return fmt.Errorf("validate the records' bound: %w", err)
		}
	}
	for _, ix := range unpartitionedIndexes {
		var valid *bool
		if err := db.Raw("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(?)", ix.name).Scan(&valid).Error; err != nil {
			return fmt.Errorf("look up index %s: %w", ix.name, err)
		}
		if valid != nil && *valid {
			continue
		}
		if valid != nil { // a concurrent build that failed leaves the index invalid
			if err := db.Exec("DROP INDEX CONCURRENTLY " + ix.name).Error; err != nil {
				return fmt.Errorf("drop invalid index %s: %w", ix.name, err)
			}
		}
		if err := db.Exec("CREATE INDEX CONCURRENTLY " + ix.name + " ON generations " + ix.def).Error; err != nil {
			return fmt.Errorf("build index %s: %w", ix.name, err)
		}
	}
	return nil
}

// daysThen, in the migration's transaction, puts the partitioned tables in place of the deployment's, attaching
// its records (prepared by daysBefore when it had any) and keeping its contents apart; a new database gets its
// first days too.
func daysThen(ctx context.Context, tx *gorm.DB) error {
	tx = tx.WithContext(ctx)
	kind, err := relkind(tx, "generations")
	if err != nil || kind == "p" {
		return err
	}
	var records, contents bool
	if err := tx.Raw("SELECT EXISTS (SELECT 1 FROM generations), EXISTS (SELECT 1 FROM generation_contents)").
		Row().Scan(&records, &contents); err != nil {
		return fmt.Errorf("look for records: %w", err)
	}
	day, valid, bounded, err := legacyBound(tx)
	if err != nil {
		return err
	}
	if records && !bounded { // written after daysBefore looked: few, checked here
		added, err := addLegacyBound(tx)
		if err != nil || added == nil {
			return cmp.Or(err, errors.New("records vanished while migrating"))
		}
		day = *added
	}
	if records && !valid {
		if err := tx.Exec("ALTER TABLE generations VALIDATE CONSTRAINT " + legacyBoundPrefix + day.Format(partitionDay)).Error; err != nil {
			return fmt.Errorf("validate the records' bound: %w", err)
		}
	}
	stmts := []string{
		"ALTER TABLE generations RENAME TO " + unpartitioned,
		"ALTER TABLE " + unpartitioned + " RENAME CONSTRAINT generations_pkey TO " + unpartitioned + "_pkey",
		"ALTER INDEX generations_created_at RENAME TO " + unpartitioned + "_created_at",
		"CREATE TABLE generations (LIKE " + unpartitioned + " INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)",
		"ALTER TABLE generation_contents RENAME TO " + legacyContents,
		"ALTER TABLE " + legacyContents + " RENAME CONSTRAINT generation_contents_pkey TO " + legacyContents + "_pkey",
		"CREATE TABLE generation_contents (LIKE " + legacyContents + " INCLUDING DEFAULTS, created_at TIMESTAMPTZ NOT NULL) " +
			"PARTITION BY RANGE (created_at)",
		// The reads the gateway serves: by id (each partition's primary key), newest first and by time, by key and
		// time, by session. Nothing else is indexed: every index is written with every record.
		"CREATE INDEX generations_created_at ON generations (created_at)",
		"CREATE INDEX generations_key ON generations (key_hash, created_at)",
		"CREATE INDEX generations_session ON generations (session_id, created_at) WHERE session_id IS NOT NULL",
	}
	if records {
		legacy := legacyBoundPrefix + day.Format(partitionDay)
		stmts = append(stmts, "ALTER TABLE "+unpartitioned+" RENAME TO "+legacy,
			"ALTER TABLE generations ATTACH PARTITION "+legacy+" FOR VALUES FROM (MINVALUE) TO ("+pgTime(day)+")")
	} else {
		stmts = append(stmts, "DROP TABLE "+unpartitioned)
	}
	if !contents {
		stmts = append(stmts, "DROP TABLE "+legacyContents)
	}
	for _, stmt := range stmts {
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if records {
		return nil // the days come after the lock (the days worker, or the first record of a day)
	}
	today := generation.Day(time.Now())
	return createDays(ctx, tx, today, today.AddDate(0, 0, legacyLead))
}
