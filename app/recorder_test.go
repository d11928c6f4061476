package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// fakeStore records inserts; a closed gate lets inserts through, an open one holds them (a stalled database).
type fakeStore struct {
	mu      sync.Mutex
	rows    map[string]generation.Entry
	batches []int
	gate    chan struct{} // inserts wait for it to be closed, when non-nil
	entered chan struct{} // signalled each time an insert starts waiting on the gate
	fail    func(batch []generation.Entry) error
}

func newFakeStore() *fakeStore { return &fakeStore{rows: map[string]generation.Entry{}} }

func (f *fakeStore) InsertGenerations(ctx context.Context, batch []generation.Entry) error {
	if f.gate != nil {
		if f.entered != nil {
			f.entered <- struct{}{}
		}
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(batch); err != nil {
			return err
		}
	}
	f.batches = append(f.batches, len(batch))
	for _, e := range batch {
		f.rows[e.Record.ID] = e
	}
	return nil
}

func (f *fakeStore) Generation(context.Context, string) (generation.Record, error) {
	return generation.Record{}, nil
}
func (f *fakeStore) GenerationContent(context.Context, string) (generation.Content, error) {
	return generation.Content{}, nil
}
func (f *fakeStore) PurgeGenerations(context.Context, time.Time, int) (int64, error) { return 0, nil }

func (f *fakeStore) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rows)
}

func entry(id string) generation.Entry {
	return generation.Entry{Record: generation.Record{ID: id}, Content: &generation.Content{}}
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "gen-" + strconv.Itoa(i)
	}
	return out
}

func cfg(queue int) app.RecorderConfig {
	return app.RecorderConfig{QueueSize: queue, BatchSize: 50, Workers: 1, FullWait: time.Millisecond, Retries: 2,
		RetryBackoff: time.Microsecond, StoreContent: true}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRecorderWritesEverythingAndDrainsOnClose(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.gate = make(chan struct{})
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg(1000))
	all := ids(500)
	for _, id := range all {
		r.Record(context.Background(), entry(id))
	}
	close(store.gate) // the database comes back
	r.Close()
	if n := store.count(); n != len(all) {
		t.Fatalf("%d of %d records written after Close", n, len(all))
	}
	for _, b := range store.batches {
		if b > 50 {
			t.Fatalf("batch of %d exceeds BatchSize", b)
		}
	}
	if len(store.batches) >= len(all) {
		t.Fatalf("no batching: %d inserts for %d records", len(store.batches), len(all))
	}
	// After Close, Record still loses nothing: it writes directly.
	r.Record(context.Background(), entry("late"))
	if store.count() != len(all)+1 {
		t.Fatal("a record after Close was lost")
	}
}

// TestRecorderStalledDatabase holds every insert: the queue fills to its bound, callers beyond it block (they
// are writing directly), and when the database returns every record is written.
func TestRecorderStalledDatabase(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.gate = make(chan struct{})
	store.entered = make(chan struct{}, 1000)
	const queue = 16
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg(queue))
	r.Record(context.Background(), entry("first"))
	<-store.entered // the worker now holds "first" and waits on the database

	var wg sync.WaitGroup
	all := ids(100)
	for _, id := range all {
		wg.Add(1)
		go func() { defer wg.Done(); r.Record(context.Background(), entry(id)) }()
	}
	// 100 callers, 16 places: at least 84 must end up writing directly, each blocked on the stalled database.
	for range len(all) - queue {
		<-store.entered
	}
	if p := r.Pending(); p > queue {
		t.Fatalf("queue holds %d > bound %d", p, queue)
	}
	close(store.gate)
	wg.Wait()
	r.Close()
	if n := store.count(); n != len(all)+1 {
		t.Fatalf("%d of %d records written", n, len(all)+1)
	}
}

func TestRecorderRetriesAndIsolatesBadEntries(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	var mu sync.Mutex
	transient := 1
	store.fail = func(batch []generation.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		if transient > 0 {
			transient--
			return errors.New("connection reset")
		}
		for _, e := range batch {
			if e.Record.ID == "poison" {
				return errors.New("value too long")
			}
		}
		return nil
	}
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, cfg(100))
	r.Record(context.Background(), entry("a"))
	r.Record(context.Background(), entry("poison"))
	r.Record(context.Background(), entry("b"))
	r.Close()
	if store.count() != 2 || store.rows["a"].Record.ID != "a" || store.rows["b"].Record.ID != "b" {
		t.Fatalf("good entries lost next to a poisoned one: %v", store.rows)
	}
}

func TestRecorderWithoutContent(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c := cfg(10)
	c.StoreContent = false
	r := app.NewRecorder(store, quiet(), ports.NoMetrics{}, c)
	r.Record(context.Background(), entry("a"))
	r.Close()
	if store.rows["a"].Content != nil {
		t.Fatal("content kept although store_content is off")
	}
}
