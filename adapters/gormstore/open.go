// Package gormstore is the persistence adapter: one GORM-based implementation of the store ports for two
// dialects, PostgreSQL (production) and an embedded pure-Go SQLite file (the zero-setup default).
package gormstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/switchboard-ai/switchboard/adapters/gormstore/sqlitedialect"
)

// Config selects and tunes the database.
type Config struct {
	// URL is postgres://... for PostgreSQL or sqlite:PATH for the embedded file.
	URL          string
	MaxOpenConns int
}

// Dialects this adapter speaks.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Open connects to the database named by cfg.URL, until ctx ends: a database that accepts connections and
// never answers would otherwise hold start-up, SIGTERM included, forever (GORM's own ping has no context). The
// cleanup closes the pool.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*gorm.DB, func(), error) {
	noParamsInRecordedSQL.Do(func() { logger.RecorderParamsFilter = gormLogger{}.ParamsFilter })
	dialector, maxConns, err := dialectorFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
		Logger:                 gormLogger{log: log},
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB.SetMaxOpenConns(maxConns)
	sqlDB.SetMaxIdleConns(maxConns)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	return db, func() { _ = sqlDB.Close() }, nil
}

func dialectorFor(cfg Config) (gorm.Dialector, int, error) {
	maxConns := cfg.MaxOpenConns
	if maxConns <= 0 {
		maxConns = 20
	}
	switch {
	case strings.HasPrefix(cfg.URL, "postgres://"), strings.HasPrefix(cfg.URL, "postgresql://"):
		return classifying{Dialector: postgres.Open(cfg.URL)}, maxConns, nil
	case strings.HasPrefix(cfg.URL, "sqlite:"):
		path := strings.TrimPrefix(cfg.URL, "sqlite:")
		if path == "" {
			return nil, 0, errors.New("database.url: sqlite: needs a file path, as in sqlite:./data/switchboard.db")
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, 0, fmt.Errorf("database.url: create %s: %w", dir, err)
			}
		}
		// One connection: SQLite has one writer, and serialising here beats SQLITE_BUSY under load. Times are
		// written as 2006-01-02 15:04:05.999999999-07:00, as in files the previous driver wrote, so stored times
		// have one form and compare as text.
		dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
			"&_pragma=synchronous(NORMAL)&_time_format=sqlite"
		return classifying{Dialector: sqlitedialect.Open(dsn), busy: sqliteBusy}, 1, nil
	}
	return nil, 0, errors.New("database.url: must start with postgres:// or sqlite:")
}

// noParamsInRecordedSQL keeps the values of a statement run by Scan (or Row, Pluck...) out of the SQL its Trace
// is given: GORM records such a statement with a logger of its own whose parameter filter is this package
// variable of GORM's (the process's), and by default inlines every value, so a debug line of GET /keys carried
// every listed key's hash.
var noParamsInRecordedSQL sync.Once

// gormLogger sends GORM's reports to slog without query parameters, so no stored content or key material
// reaches a log. Slow queries are warnings; errors are left to the caller, who knows whether they matter.
type gormLogger struct{ log *slog.Logger }

const slowQuery = 500 * time.Millisecond

func (l gormLogger) LogMode(logger.LogLevel) logger.Interface { return l }
func (l gormLogger) Info(ctx context.Context, msg string, args ...any) {
	l.log.InfoContext(ctx, fmt.Sprintf(msg, args...))
}
func (l gormLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(msg, args...))
}
func (l gormLogger) Error(ctx context.Context, msg string, args ...any) {
	l.log.ErrorContext(ctx, fmt.Sprintf(msg, args...))
}

// ParamsFilter keeps values out of the SQL that Trace sees.
func (l gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

func (l gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if elapsed := time.Since(begin); elapsed > slowQuery {
		sql, rows := fc()
		l.log.WarnContext(ctx, "slow query", "elapsed", elapsed, "rows", rows, "sql", sql)
	} else if l.log.Enabled(ctx, slog.LevelDebug) {
		sql, rows := fc()
		l.log.DebugContext(ctx, "query", "elapsed", elapsed, "rows", rows, "sql", sql, "err", err)
	}
}

// Dialect reports which of Postgres and SQLite db speaks.
func Dialect(db *gorm.DB) string {
	if db.Dialector.Name() == "postgres" {
		return Postgres
	}
	return SQLite
}

// update reads a row under a lock, applies change to its domain value and saves it, in one transaction: the
// rules stay in the domain, the transaction in the adapter.
func update[D, R any](ctx context.Context, db *gorm.DB, take func(*gorm.DB) (D, error), change func(*D) error, row func(D) R) (D, error) {
	var out D
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		d, err := take(tx.Clauses(clause.Locking{Strength: "UPDATE"}))
		if err != nil {
			return err
		}
		if err := change(&d); err != nil {
			return err
		}
		r := row(d)
		if err := tx.Save(&r).Error; err != nil {
			return fmt.Errorf("update %T: %w", r, err)
		}
		out = d
		return nil
	})
	return out, err
}
