package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fullEntry(id string, at time.Time) generation.Entry {
	session, preset, provider, raw, tier := "s", "p", "openai", `{"e":1}`, "flex"
	discount := domain.Micros(7)
	prompt := "say hi"
	reasoning := "thought"
	return generation.Entry{
		Record: generation.Record{ID: id, RequestID: "r", UpstreamID: "u", APIType: generation.Video, WorkspaceID: "w",
			KeyHash: "k", UserID: &session, Model: "m", ProviderName: "openai", PresetID: &preset, Router: &tier,
			Origin: "o", Referer: "ref", UserAgent: "ua", ExternalUser: "ext", SessionID: &session, Status: 502,
			Streamed: true, Cancelled: true, BYOK: true, FinishReason: "error", NativeFinishReason: "x",
			Latency: 1500 * time.Microsecond, GenerationTime: time.Second, ModerationLatency: time.Millisecond,
			Counts: generation.Counts{TokensPrompt: 1, TokensCompletion: 2, NativeTokensPrompt: 3, NativeTokensCompletion: 4,
				NativeTokensCompletionImages: 5, NativeTokensReasoning: 6, NativeTokensCached: 7, NumInputAudioPrompt: 8,
				NumMediaPrompt: 9, NumMediaCompletion: 10, NumSearchResults: 11, NumFetches: 12},
			TotalCost: 123456789, UpstreamCost: 23, CacheDiscount: &discount, DataRegion: "global", ServiceTier: &tier,
			WebSearchEngine: &tier, Flags: []string{"email", "phone"},
			Attempts: []generation.Attempt{{ProviderName: "openai", EndpointID: "e", UpstreamModel: "um", UpstreamID: "u",
				Status: 502, Latency: time.Millisecond, BYOK: true, Error: "bad gateway"}},
			CreatedAt: at},
		Content: &generation.Content{
			Input:  generation.Input{Prompt: &prompt},
			Output: generation.Output{Completion: "hi", Reasoning: &reasoning},
			Failure: &generation.Failure{Message: "all failed", Status: 502, ProviderName: &provider, Raw: &raw,
				Previous: []generation.Attempt{{ProviderName: "openai", Status: 500, Error: "boom", Raw: raw, Latency: time.Millisecond}}},
		},
	}
}

func TestGenerationStoreContract(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		old, recent := t0.Add(-48*time.Hour), t0
		a, b := fullEntry("gen-1-a", recent), fullEntry("gen-1-b", old)
		b.Content.Input = generation.Input{Messages: []generation.Message{{Role: "user", Content: "hello"}}}
		b.Content.Failure = nil
		c := fullEntry("gen-1-c", old)
		c.Content = nil
		if err := s.InsertGenerations(ctx, []generation.Entry{a, b, c}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertGenerations(ctx, []generation.Entry{a}); err != nil {
			t.Fatalf("re-inserting a stored id must be a no-op: %v", err)
		}
		got, err := s.Generation(ctx, "gen-1-a")
		if err != nil {
			t.Fatal(err)
		}
		want := a.Record
		want.Attempts[0].Raw = "" // error bodies live with the content only
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record round trip\n got %+v\nwant %+v", got, want)
		}
		content, err := s.GenerationContent(ctx, "gen-1-a")
		if err != nil || !reflect.DeepEqual(content, *a.Content) {
			t.Fatalf("content round trip\n got %+v\nwant %+v (%v)", content, *a.Content, err)
		}
		if content, _ := s.GenerationContent(ctx, "gen-1-b"); !reflect.DeepEqual(content, *b.Content) {
			t.Fatalf("messages round trip: %+v", content)
		}
		if _, err := s.GenerationContent(ctx, "gen-1-c"); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("content not stored: err = %v", err)
		}
		if _, err := s.Generation(ctx, "nope"); !errors.Is(err, generation.ErrNotFound) {
			t.Fatalf("unknown id: err = %v", err)
		}

		// Retention: everything older than a day goes, content included, in slices.
		retention := app.NewRetention(s, quiet(), 1, app.Env{Now: func() time.Time { return t0 }})
		if n := retention.Purge(ctx); n != 2 {
			t.Fatalf("purge removed %d records, want the 2 old ones", n)
		}
		if _, err := s.Generation(ctx, "gen-1-b"); !errors.Is(err, generation.ErrNotFound) {
			t.Fatal("an old record survived the purge")
		}
		if _, err := s.GenerationContent(ctx, "gen-1-b"); !errors.Is(err, generation.ErrNotFound) {
			t.Fatal("an old record's content survived the purge")
		}
		if _, err := s.Generation(ctx, "gen-1-a"); err != nil {
			t.Fatalf("a recent record was purged: %v", err)
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
	r := app.NewRecorder(store, quiet(), cfg)
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
	r := app.NewRecorder(store, quiet(), cfg)

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
	r := app.NewRecorder(store, quiet(), cfg)
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
