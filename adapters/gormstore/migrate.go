package gormstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/account"
)

// Each migration is one SQL file, NNNN_name.sql, written once for both dialects: {{.Time}} and {{.JSON}} stand for
// the column types that differ, and {{if .Postgres}} guards what only PostgreSQL runs. Statements end with a
// semicolon at the end of a line.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type dialectTypes struct {
	Time, JSON string
	Postgres   bool
}

var typesOf = map[string]dialectTypes{
	Postgres: {Time: "TIMESTAMPTZ", JSON: "JSONB", Postgres: true},
	SQLite:   {Time: "DATETIME", JSON: "TEXT"},
}

type migration struct {
	version int
	name    string
	stmts   []string
}

// advisoryLock is the PostgreSQL advisory lock key that serialises migrations across replicas (a session's lock,
// held through every migration of a run).
const advisoryLock = 0x5357_4254_4348 // "SWBTCH"

func migrations(dialect string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		raw, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(e.Name()).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, typesOf[dialect]); err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: name, stmts: splitStatements(buf.String())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

func splitStatements(sql string) []string {
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			stmts = append(stmts, cur.String())
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}

// Migrate brings the schema up to date and seeds the organization and the default workspace. It is the one
// entry point used by `switchboard migrate`, by `serve` and by the tests.
func Migrate(ctx context.Context, db *gorm.DB) error { return MigrateTo(ctx, db, math.MaxInt) }

// step is what a migration does on PostgreSQL besides its SQL. before runs ahead of the migration's transaction
// and outside any: what cannot run in a transaction, or must not hold the transaction's locks while it scans a
// large table (an index built concurrently, a constraint validated); it must be safe to run again, as a migration
// that failed after it runs it again. then runs in the transaction, after the SQL.
type step struct {
	before func(ctx context.Context, conn *gorm.DB) error
	then   func(ctx context.Context, tx *gorm.DB) error
}

var postgresSteps = map[int]step{10: {before: daysBefore, then: daysThen}}

// MigrateTo applies the migrations up to version, each in a transaction of its own, and seeds once the schema is
// current; the tests build the schema of an earlier release with it. On PostgreSQL one connection holds an
// advisory lock for the whole run, so replicas that start together migrate one after another, and each reads what
// the one before it applied.
func MigrateTo(ctx context.Context, db *gorm.DB, version int) error {
	dialect := Dialect(db)
	all, err := migrations(dialect)
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return translate(db, fmt.Errorf("migrate: %w", err))
	}
	defer conn.Close()
	on := db.WithContext(ctx).Session(&gorm.Session{NewDB: true})
	on.Statement.ConnPool = conn
	if dialect == Postgres {
		if err := lockMigrations(ctx, on); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		defer func() {
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLock); err != nil {
				// The lock lives as long as the session: close the connection rather than pool it.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	if err := on.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at " +
		typesOf[dialect].Time + " NOT NULL)").Error; err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var applied []int
	if err := on.Raw("SELECT version FROM schema_migrations").Scan(&applied).Error; err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		done[v] = true
	}
	for _, m := range all {
		if done[m.version] || m.version > version {
			continue
		}
		var st step
		if dialect == Postgres {
			st = postgresSteps[m.version]
		}
		start := time.Now()
		if st.before != nil {
			if err := st.before(ctx, on); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
			}
		}
		inTx := time.Now()
		err := on.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range m.stmts {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			if st.then != nil {
				if err := st.then(ctx, tx); err != nil {
					return err
				}
			}
			return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, time.Now().UTC()).Error
		})
		if err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
		}
		// How long it took, and how long its transaction held its locks.
		db.Logger.Info(ctx, "migration %04d_%s applied in %s (its transaction %s)", m.version, m.name,
			time.Since(start).Round(time.Millisecond), time.Since(inTx).Round(time.Millisecond))
	}
	if version < all[len(all)-1].version {
		return nil
	}
	return on.Transaction(seed)
}

// lockMigrations takes the migration lock for the session, trying again until it is free. A replica does not wait
// for it in pg_advisory_lock: a session waiting in a statement holds a snapshot, which CREATE INDEX CONCURRENTLY
// (a migration step the lock's holder may be running) waits to see end, while the session waits for the holder: a
// deadlock, which PostgreSQL breaks by failing one of them.
func lockMigrations(ctx context.Context, on *gorm.DB) error {
	for pause := 20 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		var locked bool
		if err := on.Raw("SELECT pg_try_advisory_lock(?)", advisoryLock).Scan(&locked).Error; err != nil {
			return err
		}
		if locked {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// seed creates the organization and the default workspace once.
func seed(tx *gorm.DB) error {
	now := time.Now().UTC()
	if err := tx.Exec("INSERT INTO organizations (id, name, created_at) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM organizations)",
		"org_"+strings.ReplaceAll(uuid.NewString(), "-", ""), "Switchboard", now).Error; err != nil {
		return fmt.Errorf("seed organization: %w", err)
	}
	if err := tx.Exec("INSERT INTO workspaces (id, name, slug, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (slug) DO NOTHING",
		uuid.NewString(), "Default", account.DefaultWorkspaceSlug, now).Error; err != nil {
		return fmt.Errorf("seed default workspace: %w", err)
	}
	return nil
}

// stepsRevision names what the Go steps of the migrations do: change it with what one of them makes, so that
// SchemaHash changes too.
const stepsRevision = "0010 days: 1"

// SchemaHash identifies the set of migrations this binary carries (hex SHA-256 of their text, and of the revision
// of their Go steps).
func SchemaHash() string {
	h := sha256.New()
	h.Write([]byte(stepsRevision))
	_ = fs.WalkDir(migrationFiles, "migrations", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := migrationFiles.ReadFile(p)
			h.Write([]byte(p))
			h.Write(raw)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// ErrSchemaBehind means the database is reachable but not migrated to what this binary expects.
var ErrSchemaBehind = errors.New("database schema is not up to date; run `switchboard migrate`")

// Health answers readiness: the database is reachable and every migration this binary knows is applied.
type Health struct {
	db     *gorm.DB
	latest int
}

func NewHealth(db *gorm.DB) (*Health, error) {
	all, err := migrations(Dialect(db))
	if err != nil {
		return nil, err
	}
	return &Health{db: db, latest: all[len(all)-1].version}, nil
}

func (h *Health) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var v *int
	if err := h.db.WithContext(ctx).Raw("SELECT MAX(version) FROM schema_migrations").Scan(&v).Error; err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	if v == nil || *v < h.latest {
		return ErrSchemaBehind
	}
	return nil
}
