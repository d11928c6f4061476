package gormstore

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/switchboard-ai/switchboard/adapters/gormstore/sqlitedialect"
	"github.com/switchboard-ai/switchboard/domain"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("select: %w", &pgconn.PgError{Code: code}) }
	tests := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"admin_shutdown (backend terminated)", pg("57P01"), true},
		{"crash_shutdown", pg("57P02"), true},
		{"cannot_connect_now", pg("57P03"), true},
		{"too_many_connections", pg("53300"), true},
		{"connection_failure (class 08)", pg("08006"), true},
		{"deadlock_detected", pg("40P01"), true},
		{"serialization_failure", pg("40001"), true},
		{"lock_not_available", pg("55P03"), true},
		{"connect error", &pgconn.ConnectError{}, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"bad connection", fmt.Errorf("x: %w", driver.ErrBadConn), true},
		{"conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"connection lost mid-query", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{"unique violation", pg("23505"), false},
		{"not found", gorm.ErrRecordNotFound, false},
		{"anything else", errors.New("boom"), false},
	}
	for _, tt := range tests {
		got := classify(tt.err)
		if (domain.KindOf(got) == domain.KindUnavailable) != tt.unavailable || !errors.Is(got, tt.err) {
			t.Errorf("%s: classify(%v) = %v (kind %v)", tt.name, tt.err, got, domain.KindOf(got))
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}

// TestSQLiteBusy: a write that finds the file locked past the busy timeout is unavailable, not internal.
func TestSQLiteBusy(t *testing.T) {
	t.Parallel()
	dsn := "file:" + filepath.Join(t.TempDir(), "busy.db") + "?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)"
	open := func() *gorm.DB {
		db, err := gorm.Open(classifying{Dialector: sqlitedialect.Open(dsn), busy: sqliteBusy},
			&gorm.Config{TranslateError: true, Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, _ := db.DB()
		t.Cleanup(func() { sqlDB.Close() })
		return db
	}
	holder, other := open(), open()
	if err := holder.Exec("CREATE TABLE t (n INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	tx := holder.Begin()
	defer tx.Rollback()
	if err := tx.Exec("INSERT INTO t VALUES (1)").Error; err != nil {
		t.Fatal(err)
	}
	err := other.Exec("INSERT INTO t VALUES (2)").Error
	if domain.KindOf(err) != domain.KindUnavailable {
		t.Fatalf("write to a locked file: %v (kind %v), want unavailable", err, domain.KindOf(err))
	}
	if err := other.Exec("SELECT n FROM t").Error; err != nil {
		t.Fatalf("a read beside the writer: %v", err)
	}
}
