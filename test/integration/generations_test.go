package integration_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fullEntry sets every field a generation entry stores.
var fullEntry = contract.FullEntry

// TestGenerationStoreLargeBatch: a batch far larger than one INSERT statement carries (SQLite binds a few rows a
// statement) is stored whole, and a retried batch that is partly stored already stores the rest once.
func TestGenerationStoreLargeBatch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		batch := make([]generation.Entry, 200)
		for i := range batch {
			batch[i] = fullEntry(fmt.Sprintf("gen-1-%04d", i), t0)
			if i%2 == 1 {
				batch[i].Content = nil
			}
		}
		if err := s.InsertGenerations(ctx, batch[:60]); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertGenerations(ctx, batch); err != nil {
			t.Fatalf("a batch partly stored before: %v", err)
		}
		var contents int64
		if err := db.Raw("SELECT COUNT(*) FROM generation_contents").Scan(&contents).Error; err != nil {
			t.Fatal(err)
		}
		if n := countGenerations(t, db); n != 200 || contents != 100 {
			t.Fatalf("stored %d records and %d contents, want 200 and 100", n, contents)
		}
		if _, err := s.GenerationContent(ctx, "gen-1-0198"); err != nil {
			t.Fatalf("the last content of the batch: %v", err)
		}
	})
}

func countGenerations(t testing.TB, db *gorm.DB) int64 {
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM generations").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// holdLock takes an exclusive lock on the generations table in another session, stalling every insert until the
// returned release is called.
func holdLock(t *testing.T, db *gorm.DB) (release func()) {
	tx := db.Begin()
	if err := tx.Exec("LOCK TABLE generations IN EXCLUSIVE MODE").Error; err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(release)
	return release
}

// TestRecorderDrainsFullQueueOnShutdown fills the queue to its bound while the database is stalled, then shuts
// down: every record reaches PostgreSQL.
func TestRecorderDrainsFullQueueOnShutdown(t *testing.T) {
	db := testdb.Postgres(t)
	store := gormstore.NewGenerationStore(db)
	cfg := app.DefaultRecorderConfig()
	cfg.QueueSize = 2000
	release := holdLock(t, db)
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg)
	n := 0
	for r.Pending() < cfg.QueueSize { // only this goroutine adds, so each of these Records finds room
		r.Record(context.Background(), fullEntry(fmt.Sprintf("gen-1-%d", n), t0))
		n++
	}
	release()
	r.Close()
	if got := countGenerations(t, db); got != int64(n) {
		t.Fatalf("%d of %d records stored after shutdown", got, n)
	}
}

// TestRecorderStalledDatabase keeps the table locked while many callers record: the queue stays at its bound,
// the heap does not grow with the number of records, and all of them are stored once the lock goes.
func TestRecorderStalledDatabase(t *testing.T) {
	db := testdb.Postgres(t)
	store := gormstore.NewGenerationStore(db)
	cfg := app.DefaultRecorderConfig()
	cfg.QueueSize, cfg.FullWait = 500, time.Millisecond
	release := holdLock(t, db)
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg)

	const callers, perCaller = 32, 100
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perCaller {
				r.Record(context.Background(), fullEntry(fmt.Sprintf("gen-1-%d-%d", c, i), t0))
			}
		}()
	}
	// Stalled: the queue is at its bound, and the workers and callers wait on the lock in PostgreSQL itself.
	waiting := func() (n int) {
		db.Raw("SELECT COUNT(*) FROM pg_locks WHERE relation = 'generations'::regclass AND NOT granted").Scan(&n)
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); r.Pending() != cfg.QueueSize || waiting() < cfg.Workers; {
		if time.Now().After(deadline) {
			t.Fatalf("no stall: %d queued of %d, %d writers waiting on the lock", r.Pending(), cfg.QueueSize, waiting())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Every caller is now blocked writing one record directly: memory is bounded by queue + callers, not by
	// the 3,200 records they want to write.
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if r.Pending() > cfg.QueueSize {
		t.Fatalf("queue grew past its bound: %d", r.Pending())
	}
	heapStalled := ms.HeapAlloc
	release()
	wg.Wait()
	r.Close()
	if got := countGenerations(t, db); got != callers*perCaller {
		t.Fatalf("%d of %d records stored", got, callers*perCaller)
	}
	t.Logf("heap while stalled: %d KiB", heapStalled>>10)
}

// BenchmarkRecorder measures what Record costs the request path and how many records per second reach
// PostgreSQL, batched. Run: make bench, or
// go test -run '^$' -bench Recorder ./test/integration/
func BenchmarkRecorder(b *testing.B) {
	db := testdb.Postgres(b)
	store := gormstore.NewGenerationStore(db)
	cfg := app.DefaultRecorderConfig()
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg)
	entries := make([]generation.Entry, b.N)
	for i := range entries {
		entries[i] = fullEntry(fmt.Sprintf("gen-1-%d", i), t0)
		entries[i].Content.Failure = nil
	}
	costs := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range entries {
		t := time.Now()
		r.Record(context.Background(), entries[i])
		costs[i] = time.Since(t)
	}
	r.Close()
	elapsed := time.Since(start)
	b.StopTimer()
	if got := countGenerations(b, db); got != int64(b.N) {
		b.Fatalf("%d of %d stored", got, b.N)
	}
	sort.Slice(costs, func(i, j int) bool { return costs[i] < costs[j] })
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(costs[len(costs)/2].Nanoseconds()), "record-p50-ns")
	b.ReportMetric(float64(costs[len(costs)*99/100].Nanoseconds()), "record-p99-ns")
}
