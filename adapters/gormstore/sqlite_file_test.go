package gormstore_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/contract"
)

// TestSQLiteFileFromPreviousDriver opens a database file written by the SQLite driver Switchboard used before
// (github.com/glebarez/go-sqlite over modernc.org/sqlite v1.23.1): migrated to schema 7, with four records
// contract.FullEntry("gen-old-N", at) whose times have 0, 1, 6 and 6 fractional digits. It migrates to the
// current schema, their records read back whole, times written now are stored in the same form, and a purge
// takes old and new records alike.
func TestSQLiteFileFromPreviousDriver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	unzip(t, "testdata/previous-driver.db.gz", path)
	cfg := gormstore.Config{URL: "sqlite:" + path}
	// Opened as serve and migrate open it (the administrative commands refuse it): its schema is behind.
	db, cleanup, err := gormstore.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if err := gormstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	s := gormstore.NewGenerationStore(db)

	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := []time.Time{t0, t0.Add(1500 * time.Millisecond), t0.Add(2*time.Second + 123456*time.Microsecond),
		t0.Add(4*time.Second + time.Microsecond)}
	for i, at := range old {
		id := fmt.Sprintf("gen-old-%d", i)
		want := contract.FullEntry(id, at)
		want.Record.Attempts[0].Raw = "" // error bodies live with the content only
		got, err := s.Generation(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want.Record) {
			t.Fatalf("%s written by the previous driver\n got %+v (%v)\nwant %+v", id, got, err, want.Record)
		}
		if content, err := s.GenerationContent(ctx, id); err != nil || !reflect.DeepEqual(content, *want.Content) {
			t.Fatalf("%s content\n got %+v (%v)\nwant %+v", id, content, err, *want.Content)
		}
	}

	// New records between the old ones: a purge before t0+3s takes gen-old-0..2 and gen-new-0..1 and no more.
	var fresh []generation.Entry
	for i, at := range []time.Time{t0.Add(500 * time.Millisecond), t0.Add(2*time.Second + 123455*time.Microsecond),
		t0.Add(3 * time.Second), t0.Add(4 * time.Second)} {
		fresh = append(fresh, contract.FullEntry(fmt.Sprintf("gen-new-%d", i), at))
	}
	if err := s.InsertGenerations(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := db.Raw("SELECT CAST(created_at AS TEXT) FROM generations WHERE id = 'gen-new-1'").Scan(&stored).Error; err != nil ||
		stored != "2026-11-23 12:00:02.123455+00:00" {
		t.Fatalf("a time written now is stored as %q (%v), not in the previous driver's form", stored, err)
	}
	if n, err := s.PurgeGenerations(ctx, t0.Add(3*time.Second), 100); err != nil || n != 5 {
		t.Fatalf("purge before t0+3s removed %d records (%v), want 5", n, err)
	}
	for _, id := range []string{"gen-old-3", "gen-new-2", "gen-new-3"} {
		if _, err := s.Generation(ctx, id); err != nil {
			t.Fatalf("%s purged: %v", id, err)
		}
	}
}

func unzip(t *testing.T, from, to string) {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
