package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
)

// fakeStore keeps entries by id and books each id's cost once, as the store contract says; down makes it
// unreachable, and gate (when non-nil) holds inserts until closed.
type fakeStore struct {
	mu       sync.Mutex
	rows     map[string]generation.Entry
	booked   domain.Micros
	batches  []int
	down     bool
	gate     chan struct{}
	refuse   string        // an id the database refuses while it is up
	failOnce error         // when non-nil, the next insert's error (then cleared) while the database is up
	failNext int           // how many of the next inserts fail as on a connection the database dropped, while it is up
	refused  chan struct{} // when non-nil, told (without waiting) of each insert refused while down
}

func newFakeStore() *fakeStore { return &fakeStore{rows: map[string]generation.Entry{}} }

var errDown = errors.New("connection refused")

// errDropped is a write on a connection the database dropped, as the store classifies it: unavailable.
var errDropped = domain.E(domain.KindUnavailable, "service_unavailable", "the connection was closed")

func (f *fakeStore) InsertGenerations(ctx context.Context, batch []generation.Entry) error {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		if f.refused != nil {
			select {
			case f.refused <- struct{}{}:
			default:
			}
		}
		return errDown
	}
	if err := f.failOnce; err != nil {
		f.failOnce = nil
		return err
	}
	if f.failNext > 0 {
		f.failNext--
		return errDropped
	}
	for _, e := range batch {
		if e.Record.ID == f.refuse {
			return errors.New("value too long")
		}
	}
	f.batches = append(f.batches, len(batch))
	for _, e := range batch {
		if _, ok := f.rows[e.Record.ID]; !ok {
			f.rows[e.Record.ID] = e
			f.booked += e.Record.TotalCost
		}
	}
	return nil
}

func (f *fakeStore) Ping(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errDown
	}
	return nil
}

func (f *fakeStore) setDown(v bool) { f.mu.Lock(); f.down = v; f.mu.Unlock() }

func (f *fakeStore) Generation(context.Context, string) (generation.Record, error) {
	return generation.Record{}, nil
}
func (f *fakeStore) GenerationContent(context.Context, string) (generation.Content, error) {
	return generation.Content{}, nil
}

func (f *fakeStore) count() (int, domain.Micros) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rows), f.booked
}

var day = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func entry(id string) generation.Entry {
	return generation.Entry{Record: generation.Record{ID: id, KeyHash: "k", TotalCost: 10, CreatedAt: day},
		Content: &generation.Content{}}
}

func cfg() app.RecorderConfig {
	return app.RecorderConfig{BatchSize: 50, BatchBytes: 1 << 20, Writers: 2, Backoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		StoreContent: true}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openSpool(t *testing.T, dir string, maxBytes int64) *spool.Spool {
	t.Helper()
	s, err := spool.Open(spool.Config{Dir: dir, MaxBytes: maxBytes, SegmentBytes: 4096}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func recordN(r ports.GenerationRecorder, prefix string, n int) {
	for i := range n {
		r.Record(context.Background(), entry(prefix+strconv.Itoa(i)))
	}
}

func TestRecorderWritesEverythingInBatches(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.gate = make(chan struct{})
	r := run(app.NewRecorder(store, openSpool(t, t.TempDir(), 1<<30), quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 500)
	close(store.gate) // the database answers
	r.Close()
	if n, booked := store.count(); n != 500 || booked != 5000 {
		t.Fatalf("%d records, %d booked after Close", n, booked)
	}
	for _, b := range store.batches {
		if b > 50 {
			t.Fatalf("batch of %d exceeds BatchSize", b)
		}
	}
	if len(store.batches) >= 500 {
		t.Fatalf("no batching: %d inserts", len(store.batches))
	}
}

// TestRecorderOutageLosesNothing: while the database is away entries wait in the spool, Close leaves them there,
// and the next start writes each exactly once.
func TestRecorderOutageLosesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := newFakeStore()
	store.setDown(true)
	sp := openSpool(t, dir, 1<<30)
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 120)
	r.Close()
	sp.Close()
	if n, _ := store.count(); n != 0 {
		t.Fatalf("%d written while down", n)
	}
	store.setDown(false)
	sp = openSpool(t, dir, 1<<30)
	if sp.Stats().Records != 120 {
		t.Fatalf("spool holds %d after restart", sp.Stats().Records)
	}
	r = run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	r.Close()
	if n, booked := store.count(); n != 120 || booked != 1200 {
		t.Fatalf("after replay: %d records, %d booked", n, booked)
	}
}

// TestRecorderStopWritesOnceTheDatabaseIsBack: a database that has just come back after an outage may fail the
// first writes on connections it dropped meanwhile; a stop then still writes what waits, while the database answers
// (a stop that gave up on the first failure left the entries in the spool, though the database was there, and the
// outage test found them missing), and gives up at once while it does not.
func TestRecorderStopWritesOnceTheDatabaseIsBack(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.setDown(true)
	store.refused = make(chan struct{})
	sp := openSpool(t, t.TempDir(), 1<<30)
	c := cfg()
	c.Writers, c.MaxBackoff = 1, time.Hour // the writer's pause doubles from 1 ms: after 10 refusals, a second long
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, c))
	recordN(r, "gen-", 20)
	for range 10 {
		<-store.refused
	}
	store.mu.Lock()
	store.down, store.failNext, store.refused = false, 3, nil // back, with three dropped connections in its pool
	store.mu.Unlock()
	r.Close() // during the writer's pause: what waits is written after the stop
	if n, booked := store.count(); n != 20 || booked != 200 || sp.Stats().Records != 0 {
		t.Fatalf("after the stop: %d records written, %d booked, %d left in the spool; want all 20 written", n, booked, sp.Stats().Records)
	}

	down := newFakeStore()
	down.setDown(true)
	sp = openSpool(t, t.TempDir(), 1<<30)
	r = run(app.NewRecorder(down, sp, quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 5)
	r.Close()
	if n, _ := down.count(); n != 0 || sp.Stats().Records != 5 {
		t.Fatalf("a database away at the stop: %d written, %d left in the spool; want all 5 left for the next start", n, sp.Stats().Records)
	}
}

// TestRecorderReplayAfterKill: a process killed while its spool holds entries, some of which it had written to
// the database without releasing them: its files as the page cache holds them are replayed by the next start, and
// each entry is booked once.
func TestRecorderReplayAfterKill(t *testing.T) {
	t.Parallel()
	live, after := t.TempDir(), t.TempDir()
	down := newFakeStore()
	down.setDown(true)
	r := run(app.NewRecorder(down, openSpool(t, live, 1<<30), quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 80)
	for _, f := range mustGlob(t, filepath.Join(live, "*.wal")) { // no Close: what kill -9 leaves behind
		copyFile(t, f, filepath.Join(after, filepath.Base(f)))
	}
	r.Close()
	store := newFakeStore()
	for i := range 40 { // written before the kill, never released from the spool
		e := entry("gen-" + strconv.Itoa(i))
		store.rows[e.Record.ID], store.booked = e, store.booked+e.Record.TotalCost
	}
	r2 := run(app.NewRecorder(store, openSpool(t, after, 1<<30), quiet(), ports.NoMetrics{}, cfg()))
	r2.Close()
	if n, booked := store.count(); n != 80 || booked != 800 {
		t.Fatalf("after replay: %d records, %d booked (want 80, 800)", n, booked)
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("glob %s: %v %v", pattern, m, err)
	}
	return m
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRecorderQuarantinesWhatTheDatabaseRefuses(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.refuse = "gen-7"
	sp := openSpool(t, t.TempDir(), 1<<30)
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 20)
	r.Close()
	if n, _ := store.count(); n != 19 {
		t.Fatalf("%d of 19 good entries written beside a refused one", n)
	}
	if q := sp.Stats().Quarantined; q != 1 {
		t.Fatalf("%d quarantined", q)
	}
}

// TestRecorderQuarantinesWhatItCannotRead: spooled records that decode as no entry (a version this release does not
// know, a truncated binary entry, a JSON entry that is not JSON) are kept apart, and the entries beside them are
// written.
func TestRecorderQuarantinesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	sp, err := spool.Open(spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 30, MemoryBytes: 1}, quiet()) // all from the files
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	good := entry("gen-good").AppendBinary([]byte{2})
	for _, rec := range [][]byte{{9, 1, 2}, good[:len(good)-1], []byte("\x01{not json"), good} {
		if err := sp.Append(rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	store := newFakeStore()
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	r.Close()
	if n, _ := store.count(); n != 1 {
		t.Fatalf("%d of 1 readable entries written", n)
	}
	if q := sp.Stats().Quarantined; q != 3 {
		t.Fatalf("%d of 3 unreadable records quarantined", q)
	}
}

// TestRecorderRetriesWhatIsUnavailable: an insert the store fails as unavailable while Ping answers (a deadlock
// or a lock not available, which gormstore classifies so; SQLITE_BUSY past the busy timeout), or fails with an
// error it did not classify as the database comes back before the ping, is not a refusal of the entry: nothing
// is quarantined, and the batch is tried again (by this run, or when the stop came first, by the next start) and
// stored once.
func TestRecorderRetriesWhatIsUnavailable(t *testing.T) {
	t.Parallel()
	unavailable := domain.E(domain.KindUnavailable, "service_unavailable", "a backend cannot be reached")
	tests := []struct {
		name string
		err  error
	}{
		{"deadlock", fmt.Errorf("book charges: %w", unavailable.Wrap(errors.New("ERROR: deadlock detected (SQLSTATE 40P01)")))},
		{"lock not available", unavailable.Wrap(errors.New("ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)"))},
		{"sqlite busy", unavailable.Wrap(errors.New("database is locked (5) (SQLITE_BUSY)"))},
		{"refused, back before the ping", errDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			store := newFakeStore()
			store.failOnce = tt.err
			sp := openSpool(t, dir, 1<<30)
			r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
			r.Record(context.Background(), entry("gen-1"))
			r.Close()
			sp.Close()
			if q := sp.Stats().Quarantined; q != 0 {
				t.Errorf("%d entries quarantined", q)
			}
			again := openSpool(t, dir, 1<<30)
			run(app.NewRecorder(store, again, quiet(), ports.NoMetrics{}, cfg())).Close()
			if st := again.Stats(); st.Quarantined != 0 || st.Records != 0 {
				t.Errorf("after restart: %+v", st)
			}
			if n, booked := store.count(); n != 1 || booked != 10 {
				t.Errorf("%d entries stored, %d booked: want 1 and 10", n, booked)
			}
		})
	}
}

// TestRecorderQuarantineRequeued: an entry the database refused, requeued once the cause is fixed (spool
// requeue), is written by the next start and booked once.
func TestRecorderQuarantineRequeued(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := newFakeStore()
	store.refuse = "gen-7"
	sp := openSpool(t, dir, 1<<30)
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 20)
	r.Close()
	sp.Close()
	store.refuse = "" // the cause is fixed
	sp = openSpool(t, dir, 1<<30)
	if n, err := sp.Requeue(); n != 1 || err != nil {
		t.Fatalf("requeued %d: %v", n, err)
	}
	r = run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	r.Close()
	if n, booked := store.count(); n != 20 || booked != 200 {
		t.Fatalf("after the requeue: %d records, %d booked (want 20, 200)", n, booked)
	}
	if st := sp.Stats(); st.Records != 0 || st.Quarantined != 0 {
		t.Fatalf("spool after the requeue: %+v", st)
	}
}

// quarantines counts the entries the recorder quarantined.
type quarantines struct {
	ports.NoMetrics
	n atomic.Int64
}

func (m *quarantines) RecordsQuarantined(n int) { m.n.Add(int64(n)) }

// TestRecorderQuarantinesOnceAcrossRestarts: an entry the database refused is quarantined once, though a kill -9
// came before the spool's release cursor passed it (here the cursor is never written before the kill: the clock
// stands still): the next start replays the spool but not that entry, so switchboard_generation_records_lost_total
// does not count it again and quarantine.log holds it once.
func TestRecorderQuarantinesOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.refuse = "gen-7"
	cfgAt := func(dir string) spool.Config {
		return spool.Config{Dir: dir, MaxBytes: 1 << 30, Now: func() time.Time { return day }}
	}
	dir := t.TempDir()
	sp, err := spool.Open(cfgAt(dir), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var first, again quarantines
	r := run(app.NewRecorder(store, sp, quiet(), &first, cfg()))
	recordN(r, "gen-", 20)
	r.Close()
	after := t.TempDir() // no Close: what kill -9 leaves behind
	for _, f := range mustGlob(t, filepath.Join(dir, "*")) {
		copyFile(t, f, filepath.Join(after, filepath.Base(f)))
	}
	sp2, err := spool.Open(cfgAt(after), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer sp2.Close()
	run(app.NewRecorder(store, sp2, quiet(), &again, cfg())).Close()
	if first.n.Load() != 1 || again.n.Load() != 0 {
		t.Fatalf("quarantined %d, then %d after the restart: want 1, 0", first.n.Load(), again.n.Load())
	}
	if n, booked := store.count(); n != 19 || booked != 190 {
		t.Fatalf("%d records, %d booked", n, booked)
	}
	if n, err := sp2.Requeue(); n != 1 || err != nil {
		t.Fatalf("the quarantine holds %d entries (%v), want 1", n, err)
	}
}

func TestRecorderRefusesCallsWhenTheSpoolIsFull(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.setDown(true)
	r := run(app.NewRecorder(store, openSpool(t, t.TempDir(), 2000), quiet(), ports.NoMetrics{}, cfg()))
	defer r.Close()
	for i := 0; r.Accepting() == nil; i++ {
		if i > 1000 {
			t.Fatal("never full")
		}
		r.Record(context.Background(), entry("gen-"+strconv.Itoa(i)))
	}
	if domain.StatusOf(r.Accepting()) != 503 {
		t.Fatalf("full spool: %v", r.Accepting())
	}
}

// TestRecorderRepairsTextAndDropsContentWhenAsked: texts a database cannot store are repaired, in an entry
// recorded now and in one an earlier release left in the spool unrepaired (read back from its bytes), so that no
// record is refused, and its charge left unbooked, for them.
func TestRecorderRepairsTextAndDropsContentWhenAsked(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c := cfg()
	c.StoreContent = false
	sp := openSpool(t, t.TempDir(), 1<<30)
	old := entry("b")
	old.Record.UserAgent = "bad\x00\xff"
	if err := sp.Append(old.AppendBinary([]byte{2}), nil); err != nil { // 2: the binary entry's version byte
		t.Fatal(err)
	}
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, c))
	e := entry("a")
	e.Record.UserAgent = "bad\x00\xff"
	r.Record(context.Background(), e)
	r.Close()
	if store.rows["a"].Content != nil {
		t.Fatal("content kept although store_content is off")
	}
	for _, id := range []string{"a", "b"} {
		if got := store.rows[id].Record.UserAgent; got != "bad\uFFFD" {
			t.Errorf("%s: user agent %q", id, got)
		}
	}
}

var errDiskFull = errors.New("no space left on device")

// failingSpool is a spool whose disk can be made to refuse writes: appends while appends is set, quarantines
// while quarantine is set (each refused quarantine is told to refusedQuarantine, without waiting).
type failingSpool struct {
	*spool.Spool
	appends, quarantine atomic.Bool
	refusedQuarantine   chan struct{}
}

func (f *failingSpool) Append(p []byte, v any) error {
	if f.appends.Load() {
		return errDiskFull
	}
	return f.Spool.Append(p, v)
}

func (f *failingSpool) Quarantine(p []byte) error {
	if f.quarantine.Load() {
		select {
		case f.refusedQuarantine <- struct{}{}:
		default:
		}
		return errDiskFull
	}
	return f.Spool.Quarantine(p)
}

// TestRecorderSpoolRefusesAppends: an entry the spool refuses is written to the database directly before Record
// returns; new calls get 503 until the spool takes an append again, which the next admission finds out.
func TestRecorderSpoolRefusesAppends(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	sp := &failingSpool{Spool: openSpool(t, t.TempDir(), 1<<30)}
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	sp.appends.Store(true)
	r.Record(context.Background(), entry("direct"))
	if _, ok := store.rows["direct"]; !ok {
		t.Fatal("the entry the spool refused is not in the database when Record returns")
	}
	for range 3 { // each admission probes the spool again
		// docs/operating.md's 503 section gives the reason and the Retry-After an operator sees.
		var de *domain.Error
		if err := r.Accepting(); !errors.As(err, &de) || de.Kind.Status() != 503 || de.Code != "spool_unavailable" || de.RetryAfter != 5*time.Second {
			t.Fatalf("spool refusing appends, Accepting: %v, want a 503 spool_unavailable with Retry-After 5 s", err)
		}
	}
	sp.appends.Store(false)
	if err := r.Accepting(); err != nil {
		t.Fatalf("spool taking appends again, Accepting: %v", err)
	}
	r.Record(context.Background(), entry("spooled"))
	r.Close()
	if n, booked := store.count(); n != 2 || booked != 20 {
		t.Fatalf("%d records, %d booked", n, booked)
	}
}

// TestRecorderHoldsWhatNeitherTakes: while neither the spool nor the database takes an entry, Record holds it
// and does not return (the call's answer does not end); it returns once either takes it, and the entry is booked
// once.
func TestRecorderHoldsWhatNeitherTakes(t *testing.T) {
	t.Parallel()
	for _, back := range []string{"database", "spool"} {
		t.Run(back+" comes back", func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			store.refused = make(chan struct{}, 1)
			store.setDown(true)
			sp := &failingSpool{Spool: openSpool(t, t.TempDir(), 1<<30)}
			sp.appends.Store(true)
			r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
			recorded := make(chan struct{})
			go func() {
				r.Record(context.Background(), entry("held"))
				close(recorded)
			}()
			<-store.refused
			<-store.refused // refused twice: Record is in its retry loop
			select {
			case <-recorded:
				t.Fatal("Record returned while neither the spool nor the database took its entry")
			default:
			}
			if r.Held() != 1 {
				t.Fatalf("%d entries held", r.Held())
			}
			if back == "database" {
				store.setDown(false)
			} else {
				sp.appends.Store(false)
			}
			<-recorded
			if r.Held() != 0 {
				t.Fatalf("%d entries held after Record returned", r.Held())
			}
			store.setDown(false)
			r.Close()
			if n, booked := store.count(); n != 1 || booked != 10 {
				t.Fatalf("%d records, %d booked", n, booked)
			}
		})
	}
}

// TestRecorderQuarantineRefused: an entry the database refuses while the quarantine cannot take it stays in the
// spool (its batch mates are written) and is quarantined by the next start.
func TestRecorderQuarantineRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := newFakeStore()
	store.refuse = "gen-7"
	sp := &failingSpool{Spool: openSpool(t, dir, 1<<30), refusedQuarantine: make(chan struct{}, 1)}
	sp.quarantine.Store(true)
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	recordN(r, "gen-", 20)
	<-sp.refusedQuarantine
	r.Close()
	sp.Close()
	if sp.Stats().Records == 0 || sp.Stats().Quarantined != 0 {
		t.Fatalf("the refused entry left the spool: %+v", sp.Stats())
	}
	again := openSpool(t, dir, 1<<30)
	run(app.NewRecorder(store, again, quiet(), ports.NoMetrics{}, cfg())).Close()
	if n, booked := store.count(); n != 19 || booked != 190 {
		t.Fatalf("%d records, %d booked", n, booked)
	}
	if st := again.Stats(); st.Quarantined != 1 || st.Records != 0 {
		t.Fatalf("after restart: %+v", st)
	}
}

// recorder is a Recorder whose writer runs as the gateway runs it, a worker; Close stops it.
type recorder struct {
	*app.Recorder
	workers *app.Workers
}

func run(r *app.Recorder) recorder { return recorder{r, app.StartWorkers(quiet(), r.Worker())} }

func (r recorder) Close() { r.workers.Stop() }

// idleSpool tells idle (without waiting) each time a read finds nothing.
type idleSpool struct {
	*spool.Spool
	idle chan struct{}
}

func (s idleSpool) Read(max int, maxBytes int64) ([]ports.SpoolRecord, func() error, error) {
	recs, release, err := s.Spool.Read(max, maxBytes)
	if len(recs) == 0 && err == nil {
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}
	return recs, release, err
}

// TestRecorderLingerGroupsEntries: woken from an empty spool, the writer collecting waits Linger for more
// entries, while the other writers wait their turn, so calls finishing one at a time share a transaction; a stop
// cuts the wait short and writes them.
func TestRecorderLingerGroupsEntries(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	c := cfg()
	c.Linger = time.Hour // only the stop ends it
	sp := idleSpool{openSpool(t, t.TempDir(), 1<<30), make(chan struct{}, 1)}
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, c))
	<-sp.idle // the writer collecting found the spool empty: it waits for an append
	recordN(r, "gen-", 10)
	r.Close()
	if n, _ := store.count(); n != 10 || len(store.batches) != 1 {
		t.Fatalf("%d of 10 written in batches %v", n, store.batches)
	}
}

// arrivingSpool runs arrive once, after its first read that finds records: entries that come while the writer
// holds what it found.
type arrivingSpool struct {
	*spool.Spool
	once   sync.Once
	arrive func()
}

func (s *arrivingSpool) Read(max int, maxBytes int64) ([]ports.SpoolRecord, func() error, error) {
	recs, release, err := s.Spool.Read(max, maxBytes)
	if len(recs) > 0 {
		s.once.Do(s.arrive)
	}
	return recs, release, err
}

// insertTold tells inserted (without waiting) of each insert.
type insertTold struct {
	*fakeStore
	inserted chan struct{}
}

func (s insertTold) InsertGenerations(ctx context.Context, batch []generation.Entry) error {
	err := s.fakeStore.InsertGenerations(ctx, batch)
	select {
	case s.inserted <- struct{}{}:
	default:
	}
	return err
}

// TestRecorderLingerGathersWaitingEntries: entries a writer finds waiting when its turn comes (here 5) are written
// with those that come within the linger (5 more), in one transaction, unless they fill a batch already.
func TestRecorderLingerGathersWaitingEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		batchSize int
		want      []int
	}{{50, []int{10}}, {5, []int{5, 5}}} {
		t.Run(strconv.Itoa(tc.batchSize), func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			c := cfg()
			c.Writers, c.BatchSize, c.Linger = 1, tc.batchSize, time.Millisecond
			sp := &arrivingSpool{Spool: openSpool(t, t.TempDir(), 1<<30)}
			told := insertTold{store, make(chan struct{}, 1)}
			r := app.NewRecorder(told, sp, quiet(), ports.NoMetrics{}, c)
			sp.arrive = func() { recordN(r, "gen-late-", 5) }
			recordN(r, "gen-early-", 5)
			w := run(r)
			<-told.inserted // the first batch; a stop writes what the spool still holds at once
			w.Close()
			if n, _ := store.count(); n != 10 || !reflect.DeepEqual(store.batches, tc.want) {
				t.Fatalf("%d of 10 written in batches %v, want %v", n, store.batches, tc.want)
			}
		})
	}
}

// TestRecorderStopEndsGather: a stop while a writer lingers over entries it found waiting (for an hour here) writes
// them at once, and then what came meanwhile, leaving nothing in the spool, with one writer and with two.
func TestRecorderStopEndsGather(t *testing.T) {
	t.Parallel()
	for _, writers := range []int{1, 2} {
		t.Run(strconv.Itoa(writers), func(t *testing.T) {
			t.Parallel()
			store := newFakeStore()
			c := cfg()
			c.Writers, c.Linger = writers, time.Hour
			sp := &arrivingSpool{Spool: openSpool(t, t.TempDir(), 1<<30)}
			r := app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, c)
			found := make(chan struct{})
			sp.arrive = func() {
				recordN(r, "gen-late-", 5)
				close(found)
			}
			recordN(r, "gen-early-", 5)
			w := run(r)
			<-found // the writer holds the first 5; it lingers before it writes them
			w.Close()
			if n, _ := store.count(); n != 10 || sp.Stats().Records != 0 || !reflect.DeepEqual(store.batches, []int{5, 5}) {
				t.Fatalf("%d of 10 written in batches %v, %d left in the spool", n, store.batches, sp.Stats().Records)
			}
		})
	}
}

// stallingSpool holds its writer's first read that finds nothing until resume is closed, having told empty.
type stallingSpool struct {
	*spool.Spool
	once          sync.Once
	empty, resume chan struct{}
}

func (s *stallingSpool) Read(max int, maxBytes int64) ([]ports.SpoolRecord, func() error, error) {
	recs, release, err := s.Spool.Read(max, maxBytes)
	if len(recs) == 0 && err == nil {
		s.once.Do(func() {
			s.empty <- struct{}{}
			<-s.resume
		})
	}
	return recs, release, err
}

// TestRecorderStopWritesTheLastAppend: an append the writer had not woken for yet when the stop came (its signal
// and the stop wait together) is written before the writer ends, as a clean stop drains the spool, also with one
// writer (SQLite's). A select chooses between the two at random: each round was a coin's toss.
func TestRecorderStopWritesTheLastAppend(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		store := newFakeStore()
		c := cfg()
		c.Writers = 1
		sp := &stallingSpool{Spool: openSpool(t, t.TempDir(), 1<<30), empty: make(chan struct{}), resume: make(chan struct{})}
		r := app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, c)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Worker().Run(ctx)
		}()
		<-sp.empty // the writer found the spool empty
		r.Record(context.Background(), entry("gen-1"))
		stop()
		close(sp.resume) // it waits for an append, with this one's signal and the stop both there
		<-done
		if n, _ := store.count(); n != 1 || sp.Stats().Records != 0 {
			t.Fatalf("round %d: %d of 1 written, %d left in the spool by a clean stop", round, n, sp.Stats().Records)
		}
	}
}

// countingSpool counts the appends made to a spool, probes included.
type countingSpool struct {
	*spool.Spool
	appends atomic.Int64
}

func (c *countingSpool) Append(p []byte, v any) error {
	c.appends.Add(1)
	return c.Spool.Append(p, v)
}

// TestRecorderEntryTooLargeForTheSpool: an entry past the spool's bound on one record (a chat whose stored
// content is over 64 MiB once encoded: each text is cut to generation.MaxText, but a conversation of many long
// messages in a body the server was configured to take) is written to the database directly, and is no sign of a
// failing spool: calls are still admitted without a probe of the spool, so a concurrent call is never a 503
// because of it.
func TestRecorderEntryTooLargeForTheSpool(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	sp := &countingSpool{Spool: openSpool(t, t.TempDir(), 1<<30)}
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	defer r.Close()
	big := entry("big")
	for range spool.MaxRecord/generation.MaxText + 1 {
		big.Content.Input.Messages = append(big.Content.Input.Messages, generation.Message{Role: "user", Content: strings.Repeat("<", generation.MaxText)})
	}
	r.Record(context.Background(), big)
	if _, ok := store.rows["big"]; !ok {
		t.Fatal("the entry too large for the spool is not in the database when Record returns")
	}
	if err := r.Accepting(); err != nil {
		t.Fatalf("after an entry too large for the spool, Accepting: %v", err)
	}
	if n := sp.appends.Load(); n != 1 {
		t.Fatalf("%d appends: admitting a call probed the spool, as if it refused appends", n)
	}
}

// TestRecorderReadsBackEveryField: entries read back from the spool's files (decoded, not handed over in memory)
// reach the store as they were recorded, text of every kind included, and so do those an earlier release wrote
// with encoding/json.
func TestRecorderReadsBackEveryField(t *testing.T) {
	t.Parallel()
	sp, err := spool.Open(spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 30, MemoryBytes: 1}, quiet()) // all from the files
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	text := "<b>&amp; \u2028\u2029 \"q\" \\ \t é 😀 \u007f"
	var want []generation.Entry
	for i := range 3 {
		e := contract.FullEntry("gen-"+strconv.Itoa(i), day)
		e.Record.UserAgent, e.Content.Output.Completion = text, text
		e.Content.Input = generation.Input{Messages: []generation.Message{{Role: "user", Content: text}}}
		e.Holds = []guardrail.Hold{{ID: "h", GuardrailID: "g", Window: day, Amount: 5}}
		want = append(want, e)
	}
	earlier, err := json.Marshal(want[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Append(append([]byte{1}, earlier...), nil); err != nil { // version 1, as an earlier release spooled it
		t.Fatal(err)
	}
	store := newFakeStore()
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, cfg()))
	for _, e := range want[1:] {
		r.Record(context.Background(), e)
	}
	r.Close()
	for _, e := range want {
		if got := store.rows[e.Record.ID]; !reflect.DeepEqual(got, e) {
			t.Fatalf("read back\n%+v\nwant\n%+v", got, e)
		}
	}
}
