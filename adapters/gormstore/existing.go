package gormstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// ErrNoDatabase means an administrative command named a database that does not exist yet: only serve and
// migrate create one.
var ErrNoDatabase = errors.New("no database there yet; `switchboard migrate` (or serve) creates it — or point --config / DATABASE_URL at the gateway's database")

// ErrNoSchema means the database exists but Switchboard was never migrated into it.
var ErrNoSchema = errors.New("no Switchboard schema in this database; `switchboard migrate` (or serve) creates it")

// OpenExisting connects to a database that must already exist and carry the schema this binary expects; it
// never creates a file or a table. The administrative commands use it, so a typo in the database URL cannot
// quietly start a second, empty deployment.
func OpenExisting(ctx context.Context, cfg Config, log *slog.Logger) (*gorm.DB, func(), error) {
	if path, ok := strings.CutPrefix(cfg.URL, "sqlite:"); ok && path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", Describe(cfg.URL), ErrNoDatabase)
		}
	}
	db, cleanup, err := Open(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	if err := schemaCurrent(ctx, db); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("%s: %w", Describe(cfg.URL), err)
	}
	return db, cleanup, nil
}

func schemaCurrent(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	if !db.WithContext(ctx).Migrator().HasTable("schema_migrations") {
		return ErrNoSchema
	}
	h, err := NewHealth(db)
	if err != nil {
		return err
	}
	return h.Ready(ctx)
}

// CheckURL says what is wrong with a PostgreSQL URL as the driver reads it (a port, sslmode, a setting's value),
// without repeating the URL: the driver's own message and url.Parse's name it, and the driver's masks a password
// only in some places (postgres://db/sb?password=...&sslmode=bogus is shown whole).
func CheckURL(dbURL string) error {
	if strings.HasPrefix(dbURL, "sqlite:") {
		return nil
	}
	_, err := pgconn.ParseConfig(dbURL)
	if err == nil {
		return nil
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return errors.New("not a PostgreSQL URL the driver reads")
}

// Describe names the database a URL points at for an operator, without its password: "SQLite
// /abs/path/switchboard.db" or "PostgreSQL postgres://user:xxxxx@host/db". A password may also come as a query
// parameter (password, or sslpassword for the client key), which pgx reads as libpq does.
func Describe(dbURL string) string {
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "SQLite " + path
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "PostgreSQL (unparsable URL)"
	}
	q, masked := u.Query(), false
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			masked = true
		}
	}
	if masked { // re-encoded only then: Encode sorts the parameters
		u.RawQuery = q.Encode()
	}
	return "PostgreSQL " + u.Redacted()
}
