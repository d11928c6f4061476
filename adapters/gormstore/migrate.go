package gormstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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

// advisoryLock is the PostgreSQL advisory lock key that serialises migrations across replicas.
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
// entry point used by `switchboard migrate`, by `serve` and by the tests. On PostgreSQL it holds an advisory lock
// for the whole transaction, so replicas that start together migrate one after another.
func Migrate(ctx context.Context, db *gorm.DB) error {
	dialect := Dialect(db)
	all, err := migrations(dialect)
	if err != nil {
		return err
	}
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if dialect == Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", advisoryLock).Error; err != nil {
				return fmt.Errorf("take migration lock: %w", err)
			}
		}
		if err := tx.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at " +
			typesOf[dialect].Time + " NOT NULL)").Error; err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var applied []int
		if err := tx.Raw("SELECT version FROM schema_migrations").Scan(&applied).Error; err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		done := make(map[int]bool, len(applied))
		for _, v := range applied {
			done[v] = true
		}
		for _, m := range all {
			if done[m.version] {
				continue
			}
			for _, stmt := range m.stmts {
				if err := tx.Exec(stmt).Error; err != nil {
					return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
				}
			}
			if err := tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, time.Now().UTC()).Error; err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		return seed(tx)
	})
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

// SchemaHash identifies the set of migrations this binary carries (hex SHA-256 of their text).
func SchemaHash() string {
	h := sha256.New()
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
