package gormstore

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/domain/generation"
)

// scratchSQLite is a migrated store in a file of the test's own.
func scratchSQLite(t testing.TB) *gorm.DB {
	t.Helper()
	db, cleanup, err := Open(t.Context(), Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "s.db")}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPreparedSlotsKeepRoomAfterBatches: on SQLite the recorder's statements keep one shape whatever the batch,
// so batches from 1..maxPrepared distinct keys do not fill the prepared slots (key_usage's upsert had a row per
// distinct (key, day), a shape per number of keys) and GET /generation's SELECT met afterwards is prepared too;
// each key's usage is the sum of its charges.
func TestPreparedSlotsKeepRoomAfterBatches(t *testing.T) {
	ctx := context.Background()
	db := scratchSQLite(t)
	s := NewGenerationStore(db)
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for n := 1; n <= maxPrepared; n++ { // a batch whose entries come from n keys
		batch := make([]generation.Entry, n)
		for i := range batch {
			batch[i] = generation.Entry{Record: generation.Record{ID: fmt.Sprintf("gen-%d-%d", n, i),
				KeyHash: fmt.Sprintf("k%d", i), TotalCost: 1, CreatedAt: at, Model: "m", APIType: "chat"}}
		}
		if err := s.InsertGenerations(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Generation(ctx, "gen-1-0"); err != nil {
		t.Fatal(err)
	}
	sh, _ := shapeOf(db, reflect.TypeFor[generationRow]())
	s.prepared.mu.Lock()
	_, ok := s.prepared.stmts[sh.byKey]
	n := len(s.prepared.stmts)
	s.prepared.mu.Unlock()
	if !ok {
		t.Errorf("GET /generation's SELECT is not prepared: the %d slots hold other statements' shapes", n)
	}
	for _, i := range []int{0, 1, maxPrepared - 1} { // key k<i> was charged 1 in each batch from more than i keys
		var micros int64
		if err := db.Raw("SELECT micros FROM key_usage WHERE key_hash = ? AND day = ?", fmt.Sprintf("k%d", i),
			"2026-11-23").Scan(&micros).Error; err != nil {
			t.Fatal(err)
		}
		if want := int64(maxPrepared - i); micros != want {
			t.Errorf("key k%d usage = %d, want %d", i, micros, want)
		}
	}
}
