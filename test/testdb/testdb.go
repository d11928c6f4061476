// Package testdb gives tests real databases: a fresh, migrated PostgreSQL database per test, and the embedded
// SQLite file, so that one store contract runs against both.
//
// PostgreSQL comes from TEST_DATABASE_URL (a role that may CREATE DATABASE) when it is set, else from a
// testcontainers-go container when Docker works; otherwise the test fails and says how to provide one.
// A missing database is never a silent skip.
package testdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	tcpg "github.com/testcontainers/testcontainers-go/modules/postgres"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/test/short"
)

var server struct {
	once     sync.Once
	url      string
	template string
	err      error
}

// PostgresURL creates a fresh migrated database for this test and returns its URL. The database is dropped
// when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	short.Skip(t, "PostgreSQL")
	server.once.Do(func() {
		ctx := context.Background()
		if server.url, server.err = serverURL(ctx); server.err == nil {
			server.template, server.err = ensureTemplate(ctx, server.url)
		}
	})
	if server.err != nil {
		t.Fatalf("no PostgreSQL for the integration tests: %v\n"+
			"set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) or start Docker", server.err)
	}
	admin := open(t, server.url)
	name := fmt.Sprintf("t_%016x", rand.Uint64())
	mustExec(t, admin, "CREATE DATABASE "+name+" TEMPLATE "+server.template)
	t.Cleanup(func() { mustExec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return withDatabase(t, server.url, name)
}

// EmptyPostgresURL creates a fresh database with no schema at all for this test and returns its URL.
func EmptyPostgresURL(t testing.TB) string {
	t.Helper()
	migrated := PostgresURL(t) // the server, and a database whose name is free for this test
	u, err := url.Parse(migrated)
	if err != nil {
		t.Fatal(err)
	}
	name := path.Base(u.Path) + "_empty"
	admin := open(t, server.url)
	mustExec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { mustExec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return withDatabase(t, server.url, name)
}

// Postgres is a fresh migrated PostgreSQL database for this test.
func Postgres(t testing.TB) *gorm.DB {
	t.Helper()
	return open(t, PostgresURL(t))
}

// SQLite is a fresh migrated embedded database for this test.
func SQLite(t testing.TB) *gorm.DB {
	t.Helper()
	db, cleanup, err := gormstore.Open(t.Context(), gormstore.Config{URL: SQLiteURL(t)}, quietLog())
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(cleanup)
	if err := gormstore.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return db
}

// SQLiteURL names a fresh database file in the test's temporary directory.
func SQLiteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "switchboard.db")
}

// Each runs f once against PostgreSQL and once against SQLite: one contract, both dialects.
func Each(t *testing.T, f func(t *testing.T, db *gorm.DB)) {
	t.Run("postgres", func(t *testing.T) { f(t, Postgres(t)) })
	t.Run("sqlite", func(t *testing.T) { f(t, SQLite(t)) })
}

func serverURL(ctx context.Context) (string, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u, nil
	}
	if !dockerOK(ctx) {
		return "", errors.New("TEST_DATABASE_URL is unset and Docker is unavailable")
	}
	c, err := tcpg.Run(ctx, "postgres:16-alpine", tcpg.WithDatabase("app"), tcpg.WithUsername("app"),
		tcpg.WithPassword("app"), tcpg.BasicWaitStrategies())
	if err != nil {
		return "", fmt.Errorf("start postgres container: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable") // one container per test binary; Ryuk removes it
}

func dockerOK(ctx context.Context) (ok bool) {
	defer func() { _ = recover() }() // GetProvider can panic without Docker; ok stays false
	p, err := testcontainers.ProviderDocker.GetProvider()
	return err == nil && p.Health(ctx) == nil
}

// ensureTemplate migrates a template database once per schema version; each test clones it, which is much
// faster than migrating. Its name carries a hash of the migrations, so a schema change makes a new one, and an
// advisory lock keeps concurrent test binaries from building the same one twice.
func ensureTemplate(ctx context.Context, serverURL string) (string, error) {
	name := "sb_tmpl_" + gormstore.SchemaHash()[:16]
	admin, err := gorm.Open(postgres.Open(serverURL), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		return "", err
	}
	sqlDB, _ := admin.DB()
	defer sqlDB.Close()
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(serverURL), err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7426411)"); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, "SELECT pg_advisory_unlock(7426411)") //nolint:errcheck // released with the session anyway
	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + building
	db, cleanup, err := gormstore.Open(ctx, gormstore.Config{URL: u.String()}, quietLog())
	if err != nil {
		return "", err
	}
	err = gormstore.Migrate(ctx, db)
	cleanup()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return "", err
	}
	return name, nil
}

func open(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard, TranslateError: true})
	if err != nil {
		t.Fatalf("open %s: %v", redact(dsn), err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	return db
}

func withDatabase(t testing.TB, dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse TEST_DATABASE_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func mustExec(t testing.TB, db *gorm.DB, q string) {
	t.Helper()
	if err := db.Exec(q).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
