package integration_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fullEntry sets every field a generation entry stores.
var fullEntry = contract.FullEntry

// genID is the id of a generation made at t0.
func genID(suffix string) string { return contract.ID(t0, suffix) }

// TestGenerationStoreLargeBatch: a batch larger than one INSERT statement carries (400 records) is stored whole,
// and a retried batch that is partly stored already stores the rest once.
func TestGenerationStoreLargeBatch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		batch := make([]generation.Entry, 1000)
		for i := range batch {
			batch[i] = fullEntry(genID(fmt.Sprintf("%04d", i)), t0)
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
		if n := countGenerations(t, db); n != 1000 || contents != 500 {
			t.Fatalf("stored %d records and %d contents, want 1000 and 500", n, contents)
		}
		if _, err := s.GenerationContent(ctx, genID("0998")); err != nil {
			t.Fatalf("the last content of the batch: %v", err)
		}
	})
}

// TestInsertGenerationsChargeFailsWithRows: on PostgreSQL a batch whose booking fails after its rows were
// written (here the credits' update, refused by a trigger) stores none of them, so that writing it again does not
// find them stored and skip their charges: the rows and the bookings are one pipeline, one implicit transaction,
// whatever the batch's size.
func TestInsertGenerationsChargeFailsWithRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Postgres(t)
	for _, stmt := range []string{
		`CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '22012'; END $$ LANGUAGE plpgsql`,
		`CREATE TRIGGER refuse BEFORE UPDATE ON credit_balance FOR EACH ROW EXECUTE FUNCTION refuse()`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	s := gormstore.NewGenerationStore(db)
	for _, n := range []int{1, 8, 9, 20} {
		batch := make([]generation.Entry, n)
		for i := range batch {
			batch[i] = fullEntry(genID(fmt.Sprintf("n%di%d", n, i)), t0)
		}
		if err := s.InsertGenerations(ctx, batch); err == nil {
			t.Fatalf("%d entries: written with their booking refused", n)
		}
		var contents, usage int64
		if err := db.Raw("SELECT (SELECT COUNT(*) FROM generation_contents), (SELECT COALESCE(SUM(micros), 0) FROM key_usage)").
			Row().Scan(&contents, &usage); err != nil {
			t.Fatal(err)
		}
		if records := countGenerations(t, db); records != 0 || contents != 0 || usage != 0 {
			t.Fatalf("%d entries: %d records, %d contents and key usage %d stored with their booking refused", n, records, contents, usage)
		}
	}
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

func openSpool(t testing.TB) *spool.Spool {
	t.Helper()
	sp, err := spool.Open(spool.Config{Dir: t.TempDir(), MaxBytes: 1 << 30}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// TestInsertGenerationsBooksChargesOnce: writing an entry books its cost as the key's usage and the credits'
// usage, and its activity, and releases its guardrail holds, in the same transaction; writing it again (a replay) books nothing,
// also in a batch where an entry stored before follows a fresh one (on PostgreSQL the fresh one's row, written
// before the conflict, goes back with it), and in a fresh batch that holds one entry twice.
func TestInsertGenerationsBooksChargesOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		a, b, c, d := fullEntry(genID("a"), t0), fullEntry(genID("b"), t0), fullEntry(genID("c"), t0), fullEntry(genID("d"), t0)
		a.Holds = []guardrail.Hold{{ID: "hold-1", GuardrailID: "deleted-guardrail", Window: t0, Amount: 5}}
		for _, batch := range [][]generation.Entry{{a}, {a, b}, {b, a}, {c, a}, {d, d}} {
			if err := s.InsertGenerations(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		usage, err := gormstore.NewAccountStore(db).Usage(ctx, []string{"k"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, used, err := gormstore.NewCreditStore(db).Credits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := a.Record.TotalCost + b.Record.TotalCost + c.Record.TotalCost + d.Record.TotalCost
		if usage["k"].Total != want || used != want || countGenerations(t, db) != 4 {
			t.Fatalf("booked key usage %d, credit usage %d; want %d each", usage["k"].Total, used, want)
		}
		if calls, cost := contract.ActivityMatchesRecords(t, s, "k"); calls != 4 || cost != want {
			t.Fatalf("activity of %d calls costing %d, want 4 costing %d", calls, cost, want)
		}
	})
}

// TestRecorderStalledDatabase keeps the generations table locked while 32 callers record: none of them waits
// (their entries are in the spool), the writer waits on the lock in PostgreSQL itself, and once the lock goes
// every record is stored and its cost booked exactly.
func TestRecorderStalledDatabase(t *testing.T) {
	db := testdb.Postgres(t)
	store := gormstore.NewGenerationStore(db)
	release := holdLock(t, db)
	r := run(app.NewRecorder(store, openSpool(t), quiet(), ports.NoMetrics{}, app.DefaultRecorderConfig()))

	const callers, perCaller = 32, 100
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perCaller {
				r.Record(context.Background(), fullEntry(genID(fmt.Sprintf("c%di%d", c, i)), t0))
			}
		}()
	}
	wg.Wait() // every caller returned while the database is stalled
	waiting := func() (n int) {
		db.Raw("SELECT COUNT(*) FROM pg_locks WHERE relation = 'generations'::regclass AND NOT granted").Scan(&n)
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); waiting() < 1; {
		if time.Now().After(deadline) {
			t.Fatalf("no stall: %d writers waiting on the lock", waiting())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := r.Stats(); st.Records == 0 {
		t.Fatalf("spool empty while the database is stalled: %+v", st)
	}
	release()
	r.Close()
	if got := countGenerations(t, db); got != callers*perCaller {
		t.Fatalf("%d of %d records stored", got, callers*perCaller)
	}
	usage, err := gormstore.NewAccountStore(db).Usage(context.Background(), []string{"k"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := fullEntry("x", t0).Record.TotalCost * callers * perCaller; usage["k"].Total != want {
		t.Fatalf("usage %d, want %d", usage["k"].Total, want)
	}
}

// BenchmarkRecorder measures what Record costs the request path and how many records per second reach
// PostgreSQL, batched, with the spool in the path: one caller, 32 callers, and 32 callers with
// generations.spool_fsync (group commit: a Record returns once fsync covers its entry). Run: make bench, or
// go test -run '^$' -bench Recorder ./test/integration/
func BenchmarkRecorder(b *testing.B) {
	b.Run("callers=1", func(b *testing.B) { benchmarkRecorder(b, 1, false) })
	b.Run("callers=32", func(b *testing.B) { benchmarkRecorder(b, 32, false) })
	b.Run("callers=32,fsync", func(b *testing.B) { benchmarkRecorder(b, 32, true) })
}

func benchmarkRecorder(b *testing.B, callers int, fsync bool) {
	db := testdb.Postgres(b)
	store := gormstore.NewGenerationStore(db)
	sp, err := spool.Open(spool.Config{Dir: b.TempDir(), MaxBytes: 1 << 30, Sync: fsync}, quiet())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sp.Close() })
	r := run(app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, app.DefaultRecorderConfig()))
	entries := make([]generation.Entry, b.N)
	for i := range entries {
		entries[i] = fullEntry(genID(fmt.Sprintf("%d", i)), t0)
		entries[i].Content.Failure = nil
	}
	costs := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := c; i < len(entries); i += callers {
				t := time.Now()
				r.Record(context.Background(), entries[i])
				costs[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
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

// TestReservations: a key's limit and the credits are reserved atomically — usage (or credit usage) plus holds
// plus the new amount must fit — and writing the call's entry turns its hold into usage.
func TestReservations(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		accounts, credits, gens := gormstore.NewAccountStore(db), gormstore.NewCreditStore(db), gormstore.NewGenerationStore(db)
		ws, err := accounts.DefaultWorkspace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := accounts.CreateKey(ctx, account.Key{Hash: "k", Name: "k", Label: "x", WorkspaceID: ws.ID, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := credits.AddCredits(ctx, 250); err != nil {
			t.Fatal(err)
		}
		exp := t0.Add(time.Hour)
		reserve := func(id string, amount domain.Micros) (bool, bool) {
			k, err := accounts.ReserveUsage(ctx, id, "k", time.Time{}, 250, amount, t0, exp)
			if err != nil {
				t.Fatal(err)
			}
			c, err := credits.ReserveCredits(ctx, id, amount, t0, exp)
			if err != nil {
				t.Fatal(err)
			}
			return k.Held, c.Held
		}
		if k, c := reserve("gen-1", 200); !k || !c {
			t.Fatal("200 of 250 refused")
		}
		if k, c := reserve("gen-2", 100); k || c {
			t.Fatal("200 held + 100 admitted against 250")
		}
		e := fullEntry("gen-1", t0)
		e.Record.TotalCost = 120 // the call cost less than its estimate
		if err := gens.InsertGenerations(ctx, []generation.Entry{e}); err != nil {
			t.Fatal(err)
		}
		if k, c := reserve("gen-3", 130); !k || !c {
			t.Fatal("120 spent + 130 refused against 250 after the hold was settled")
		}
		if k, c := reserve("gen-4", 1); k || c {
			t.Fatal("the limit is full")
		}
		if k, _ := accounts.ReserveUsage(ctx, "gen-5", "k", time.Time{}, 250, 130, exp.Add(time.Second), exp.Add(time.Hour)); !k.Held {
			t.Fatal("an expired hold still counts")
		}
	})
}

// recorder is a Recorder whose writer runs as the gateway runs it, a worker; Close stops it.
type recorder struct {
	*app.Recorder
	workers *app.Workers
}

func run(r *app.Recorder) recorder { return recorder{r, app.StartWorkers(quiet(), r.Worker())} }

func (r recorder) Close() { r.workers.Stop() }

// TestGenerationRoundTripNullsAndEdges: one batch mixing a full entry, one whose every optional field is unset
// (NULL) and every text empty, and one whose texts are what an array literal or the version-byte strip could take
// for something else (empty strings behind pointers, "NULL", quotes, braces, backslashes, a leading 0x01), reads
// back field for field, as does a batch of unset entries alone: on PostgreSQL a batch goes as one array a column,
// where a NULL element and an empty string must stay apart and every column's elements must stay in their rows.
func TestGenerationRoundTripNullsAndEdges(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		full := fullEntry(genID("full"), t0)
		sparse := generation.Entry{Record: generation.Record{ID: genID("sparse"), CreatedAt: t0.Add(time.Second)},
			Content: &generation.Content{}}
		odd := func(s string) *string { return &s }
		discount := domain.Micros(0)
		edge := generation.Entry{
			Record: generation.Record{ID: genID("edge"), RequestID: "NULL", UpstreamID: `{"a","b"}`, APIType: "",
				WorkspaceID: `\`, KeyHash: "k", UserID: odd(""), Model: " m ", ProviderName: "null", PresetID: odd("NULL"),
				Router: odd(`"`), Origin: "\x01o", Referer: "{}", UserAgent: "a,b", ExternalUser: "\t", SessionID: odd(""),
				Status: -1, CacheDiscount: &discount, ServiceTier: odd(""), WebSearchEngine: odd("\x01"),
				Flags: []string{"", "NULL"}, Attempts: []generation.Attempt{{Error: "\x01"}}, CreatedAt: t0.Add(2 * time.Second)},
			Content: &generation.Content{Input: generation.Input{Prompt: odd("")},
				Output:  generation.Output{Reasoning: odd("")},
				Failure: &generation.Failure{ProviderName: odd(""), Raw: odd("\x01")}},
		}
		sparse2, sparse3 := sparse, sparse
		sparse2.Record.ID, sparse3.Record.ID = genID("sparse2"), genID("sparse3")
		for _, batch := range [][]generation.Entry{{full, sparse, edge}, {sparse2, sparse3}} { // columns of NULLs only
			if err := s.InsertGenerations(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		// What reads back for what was written: no flags and no attempts are empty lists, and error bodies live
		// with the content only.
		stored := func(r generation.Record) generation.Record {
			if r.Flags == nil {
				r.Flags = []string{}
			}
			r.Attempts = slices.Clone(r.Attempts)
			if r.Attempts == nil {
				r.Attempts = []generation.Attempt{}
			}
			for i := range r.Attempts {
				r.Attempts[i].Raw = ""
			}
			return r
		}
		storedContent := func(c generation.Content) generation.Content {
			if c.Failure != nil && c.Failure.Previous == nil {
				f := *c.Failure
				f.Previous = []generation.Attempt{}
				c.Failure = &f
			}
			return c
		}
		for _, e := range []generation.Entry{full, sparse, edge, sparse2, sparse3} {
			if got, err := s.Generation(ctx, e.Record.ID); err != nil || !reflect.DeepEqual(got, stored(e.Record)) {
				t.Errorf("%s record\n got %#v (%v)\nwant %#v", e.Record.ID, got, err, stored(e.Record))
			}
			if got, err := s.GenerationContent(ctx, e.Record.ID); err != nil || !reflect.DeepEqual(got, storedContent(*e.Content)) {
				t.Errorf("%s content\n got %#v (%v)\nwant %#v", e.Record.ID, got, err, storedContent(*e.Content))
			}
		}
	})
}

// TestRecorderRefusedAmongStored: a spool that holds, in one batch, entries stored before (a replay after a kill),
// an entry twice, and an entry the database refuses (here a trigger) among fresh ones: the refused one is kept
// apart, every other is stored, and each cost is booked once.
func TestRecorderRefusedAmongStored(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		refused := genID("refused")
		refuse := []string{
			`CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN
				IF NEW.id = '` + refused + `' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END IF;
				RETURN NEW; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER refuse BEFORE INSERT ON generations FOR EACH ROW EXECUTE FUNCTION refuse()`,
		}
		if gormstore.Dialect(db) == gormstore.SQLite {
			refuse = []string{`CREATE TRIGGER refuse BEFORE INSERT ON generations WHEN NEW.id = '` + refused + `'
				BEGIN SELECT RAISE(ABORT, 'refused'); END`}
		}
		for _, stmt := range refuse {
			if err := db.Exec(stmt).Error; err != nil {
				t.Fatal(err)
			}
		}
		store := gormstore.NewGenerationStore(db)
		var stored, batch []generation.Entry
		for i := range 4 {
			stored = append(stored, fullEntry(genID(fmt.Sprintf("stored%d", i)), t0))
		}
		if err := store.InsertGenerations(context.Background(), stored); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			batch = append(batch, fullEntry(genID(fmt.Sprintf("fresh%d", i)), t0))
			if i%2 == 1 {
				batch = append(batch, stored[i/2])
			}
		}
		batch = slices.Insert(batch, 5, fullEntry(refused, t0), batch[2])
		sp := openSpool(t)
		r := app.NewRecorder(store, sp, quiet(), ports.NoMetrics{}, app.DefaultRecorderConfig())
		for _, e := range batch {
			r.Record(context.Background(), e)
		}
		run(r).Close() // a stop writes what the spool holds
		usage, err := gormstore.NewAccountStore(db).Usage(context.Background(), []string{"k"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		_, used, err := gormstore.NewCreditStore(db).Credits(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := fullEntry("x", t0).Record.TotalCost * 12
		if n := countGenerations(t, db); n != 12 || usage["k"].Total != want || used != want || sp.Stats().Quarantined != 1 {
			t.Fatalf("%d of 12 records stored, key usage %d and credit usage %d (want %d), %d quarantined (want 1)",
				n, usage["k"].Total, used, want, sp.Stats().Quarantined)
		}
	})
}
