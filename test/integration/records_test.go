package integration_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/recordseed"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// atSchema is a PostgreSQL database migrated to version (the schema of an earlier release), and its URL.
func atSchema(t *testing.T, version int) (*gorm.DB, string) {
	t.Helper()
	url := testdb.EmptyPostgresURL(t)
	db, cleanup, err := gormstore.Open(t.Context(), gormstore.Config{URL: url}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if err := gormstore.MigrateTo(context.Background(), db, version); err != nil {
		t.Fatal(err)
	}
	return db, url
}

// oldEntry is the entry writeOld stores: a record, and its content when it has one.
func oldEntry(id string, at time.Time, content bool) generation.Entry {
	e := generation.Entry{Record: generation.Record{ID: id, RequestID: "r", UpstreamID: "u", APIType: generation.Completions,
		WorkspaceID: "w", KeyHash: "k", Model: "m", ProviderName: "openai", UserAgent: "ua", Status: 200,
		FinishReason: "stop", NativeFinishReason: "stop", Latency: 1500 * time.Microsecond, GenerationTime: 2 * time.Millisecond,
		Counts:    generation.Counts{TokensPrompt: 10, TokensCompletion: 20, NativeTokensReasoning: 3, NativeTokensCached: 4},
		TotalCost: 100, UpstreamCost: 100, DataRegion: "global", Flags: []string{"email"},
		Attempts: []generation.Attempt{{ProviderName: "openai", EndpointID: "openai/um", UpstreamModel: "um", UpstreamID: "u",
			Status: 200, Latency: 1500 * time.Microsecond}},
		CreatedAt: at}}
	if content {
		e.Content = &generation.Content{Input: generation.Input{Messages: []generation.Message{{Role: "user", Content: "\"a\" <b> & é\n\t😀"}}},
			Output: generation.Output{Completion: "hi"}}
	}
	return e
}

// writeOld stores oldEntry as a release before migration 0010 did, in the JSON its store wrote (JSONB before
// migration 0009).
func writeOld(t *testing.T, db *gorm.DB, id string, at time.Time, content bool) generation.Entry {
	t.Helper()
	err := db.Exec(`INSERT INTO generations (id, request_id, upstream_id, api_type, workspace_id, key_hash, model,
		provider_name, origin, http_referer, user_agent, external_user, status, streamed, cancelled, is_byok,
		finish_reason, native_finish_reason, latency_us, generation_time_us, moderation_latency_us, tokens_prompt,
		tokens_completion, native_tokens_prompt, native_tokens_completion, native_tokens_completion_images,
		native_tokens_reasoning, native_tokens_cached, num_input_audio_prompt, num_media_prompt, num_media_completion,
		num_search_results, num_fetches, total_cost_micros, upstream_cost_micros, data_region, attempts, flags, created_at)
		VALUES (?, 'r', 'u', 'completions', 'w', 'k', 'm', 'openai', '', '', 'ua', '', 200, false, false, false, 'stop',
		'stop', 1500, 2000, 0, 10, 20, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 100, 100, 'global',
		'[{"provider_name":"openai","endpoint_id":"openai/um","upstream_model":"um","upstream_id":"u","status":200,"latency_us":1500}]',
		'["email"]', ?)`, id, at).Error
	if err == nil && content {
		err = db.Exec(`INSERT INTO generation_contents (id, input, output, failure) VALUES (?,
			'{"messages":[{"role":"user","content":"\"a\" <b> & é\n\t😀"}]}', '{"completion":"hi","reasoning":null}', NULL)`, id).Error
	}
	if err != nil {
		t.Fatal(err)
	}
	return oldEntry(id, at, content)
}

// readsBack checks that every entry's record and content read back as written.
func readsBack(t *testing.T, s *gormstore.GenerationStore, entries ...generation.Entry) {
	t.Helper()
	ctx := context.Background()
	for _, e := range entries {
		want := e.Record
		want.Attempts = slices.Clone(want.Attempts)
		if want.Attempts == nil { // no attempts and no flags are stored as empty lists
			want.Attempts = []generation.Attempt{}
		}
		if want.Flags == nil {
			want.Flags = []string{}
		}
		for i := range want.Attempts {
			want.Attempts[i].Raw = "" // error bodies live with the content only
		}
		if got, err := s.Generation(ctx, e.Record.ID); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s record\n got %+v (%v)\nwant %+v", e.Record.ID, got, err, want)
		}
		got, err := s.GenerationContent(ctx, e.Record.ID)
		if e.Content == nil {
			if !errors.Is(err, generation.ErrNotFound) {
				t.Fatalf("%s has no content: err = %v", e.Record.ID, err)
			}
			continue
		}
		wantContent := *e.Content
		if f := wantContent.Failure; f != nil && f.Previous == nil { // stored as an empty list
			wantContent.Failure = &generation.Failure{Message: f.Message, Status: f.Status, ProviderName: f.ProviderName,
				Raw: f.Raw, Previous: []generation.Attempt{}}
		}
		if err != nil || !reflect.DeepEqual(got, wantContent) {
			t.Fatalf("%s content\n got %+v (%v)\nwant %+v", e.Record.ID, got, err, wantContent)
		}
	}
}

// TestContentsUnkeyedOnPostgres: migration 0008 drops the foreign key from generation_contents to generations on a
// PostgreSQL database at schema 7 that holds records; they keep their contents, records and contents written
// after it read back, and a purge still takes an old record's content with it and leaves a recent one's.
func TestContentsUnkeyedOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := atSchema(t, 7)
	old := writeOld(t, db, contract.ID(t0.Add(-48*time.Hour), "before"), t0.Add(-48*time.Hour), true)
	if err := gormstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var keys int64
	if err := db.Raw("SELECT COUNT(*) FROM pg_constraint WHERE contype = 'f' AND conrelid IN (to_regclass('generation_contents'), to_regclass('generation_contents_legacy'))").
		Scan(&keys).Error; err != nil || keys != 0 {
		t.Fatalf("%d foreign keys left on the contents (%v)", keys, err)
	}
	s := gormstore.NewGenerationStore(db)
	recent := fullEntry(genID("after"), t0)
	if err := s.InsertGenerations(ctx, []generation.Entry{recent}); err != nil {
		t.Fatal(err)
	}
	readsBack(t, s, old, recent)
	if n, err := s.PurgeGenerations(ctx, t0.Add(-24*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("purge removed %d records (%v), want 1", n, err)
	}
	var contents []string
	if err := db.Raw("SELECT id FROM generation_contents UNION ALL SELECT id FROM generation_contents_legacy").Scan(&contents).Error; err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(contents, []string{recent.Record.ID}) {
		t.Fatalf("contents after the purge: %v, want only %s's", contents, recent.Record.ID)
	}
}

// TestGenerationJSONAsTextOnPostgres: migration 0009 turns the JSON columns of generations and generation_contents
// from JSONB into TEXT on a PostgreSQL database at schema 8 that holds records, which read back as written, as do
// records written after it, and records whose JSON a release from before it wrote with JSONB's version byte in
// front (its COPY, on a connection that described the tables before the migration, sends JSONB's binary form).
func TestGenerationJSONAsTextOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := atSchema(t, 8)
	var written []generation.Entry
	for i := range 4 {
		at := t0.Add(-time.Duration(i) * time.Hour)
		written = append(written, writeOld(t, db, contract.ID(at, fmt.Sprintf("old%d", i)), at, i%2 == 0))
	}
	if err := gormstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var types []string
	if err := db.Raw(`SELECT DISTINCT data_type FROM information_schema.columns
		WHERE (table_name = 'generations' AND column_name IN ('attempts', 'flags'))
		OR (table_name IN ('generation_contents', 'generation_contents_legacy') AND column_name IN ('input', 'output', 'failure'))`).
		Scan(&types).Error; err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(types, []string{"text"}) {
		t.Fatalf("the JSON columns are %v after the migration, want text", types)
	}
	s := gormstore.NewGenerationStore(db)
	write := func(prefix string) {
		t.Helper()
		batch := make([]generation.Entry, 6)
		for i := range batch {
			batch[i] = fullEntry(genID(fmt.Sprintf("%s%02d", prefix, i)), t0)
			switch i % 3 {
			case 1: // characters JSON escapes, no failure
				batch[i].Content.Input = generation.Input{Messages: []generation.Message{{Role: "user", Content: "\"a\" <b> & é\n\t😀"}}}
				batch[i].Content.Failure = nil
			case 2:
				batch[i].Content = nil
			}
		}
		if err := s.InsertGenerations(ctx, batch); err != nil {
			t.Fatal(err)
		}
		written = append(written, batch...)
	}
	write("after")
	write("bycopy")
	like := genID("bycopy") + "%"
	for _, stmt := range []string{
		"UPDATE generations SET attempts = chr(1) || attempts, flags = chr(1) || flags WHERE id LIKE ?",
		"UPDATE generation_contents SET input = chr(1) || input, output = chr(1) || output, failure = chr(1) || failure WHERE id LIKE ?",
	} {
		if err := db.Exec(stmt, like).Error; err != nil {
			t.Fatal(err)
		}
	}
	readsBack(t, s, written...)
}

// partitionNames are the partitions of table, by name.
func partitionNames(t *testing.T, db *gorm.DB, table string) []string {
	t.Helper()
	var names []string
	if err := db.Raw(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass(?) ORDER BY 1`, table).Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	return names
}

func days(table string, from time.Time, n int) []string {
	var out []string
	for d := range n {
		out = append(out, table+"_p"+from.AddDate(0, 0, d).Format("20060102"))
	}
	return out
}

// TestRecordsMigrateFresh: a new PostgreSQL database gets tables kept by day, with today and the two days after
// ready, no table of an earlier layout, and an empty activity.
func TestRecordsMigrateFresh(t *testing.T) {
	t.Parallel()
	db := testdb.Postgres(t)
	today := generation.Day(time.Now())
	for _, table := range []string{"generations", "generation_contents"} {
		var kind string
		if err := db.Raw("SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", table).Scan(&kind).Error; err != nil || kind != "p" {
			t.Fatalf("%s is of kind %q (%v), want a partitioned table", table, kind, err)
		}
		// The template database was migrated on some day: it holds that day and two more.
		got := partitionNames(t, db, table)
		if len(got) != 3 || !strings.HasPrefix(got[0], table+"_p") {
			t.Fatalf("%s's partitions: %v, want three days", table, got)
		}
	}
	var leftovers int64
	if err := db.Raw(`SELECT count(*) FROM pg_class WHERE relname IN ('generation_contents_legacy', 'generations_unpartitioned')
		OR relname LIKE 'generations_before_%'`).Scan(&leftovers).Error; err != nil || leftovers != 0 {
		t.Fatalf("%d tables of an earlier layout in a new database (%v)", leftovers, err)
	}
	if err := gormstore.NewGenerationStore(db).PrepareDays(context.Background(), today, today.AddDate(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"generations", "generation_contents"} {
		if got := partitionNames(t, db, table); !containsAll(got, days(table, today, 3)) {
			t.Fatalf("%s's partitions after preparing today and two more: %v", table, got)
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// TestRecordsMigrateUpgrade: a PostgreSQL database at schema 9 with 3,000 records over 40 days (and a content
// each), migrated by three replicas starting at once, keeps every record, findable by id with its content; its
// records are one partition, with every index the new layout has; the activity holds what the records add up
// to; new records go to their days; and retention takes the old records' contents first (walking them), then
// the old records, and at last drops them whole.
func TestRecordsMigrateUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, url := atSchema(t, 9)
	today := generation.Day(time.Now())
	spec := recordseed.Spec{Records: 3000, From: today.AddDate(0, 0, -40), To: today, Workspaces: []string{"w"}, Keys: 7, ContentBytes: 200}
	total, err := recordseed.OldLayout(ctx, db, spec)
	if err != nil {
		t.Fatal(err)
	}
	var before []struct {
		ID        string
		CreatedAt time.Time
	}
	if err := db.Raw("SELECT id, created_at FROM generations ORDER BY created_at").Scan(&before).Error; err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(before))
	for i, r := range before {
		ids[i] = r.ID
	}

	// Three replicas start together, each on its own pool, as separate processes would.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			other, cleanup, err := gormstore.Open(ctx, gormstore.Config{URL: url}, quiet())
			if err != nil {
				errs <- err
				return
			}
			defer cleanup()
			errs <- gormstore.Migrate(ctx, other)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	var after []string
	var afterTotal int64
	if err := db.Raw("SELECT id FROM generations ORDER BY created_at").Scan(&after).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations").Scan(&afterTotal).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after, ids) || domain.Micros(afterTotal) != total {
		t.Fatalf("%d records (cost %d) after the migration, %d (cost %d) before", len(after), afterTotal, len(ids), total)
	}
	bound := today.AddDate(0, 0, 2)
	legacy := "generations_before_" + bound.Format("20060102")
	if got, want := partitionNames(t, db, "generations"), []string{legacy}; !slices.Equal(got, want) {
		t.Fatalf("generations' partitions: %v, want %v", got, want)
	}
	if got := partitionNames(t, db, "generation_contents"); len(got) != 0 {
		t.Fatalf("generation_contents' partitions: %v, want none until the days are prepared", got)
	}
	s := gormstore.NewGenerationStore(db)
	if err := s.PrepareDays(ctx, today, today.AddDate(0, 0, 7)); err != nil {
		t.Fatal(err)
	}
	if got, want := partitionNames(t, db, "generations"), append([]string{legacy}, days("generations", bound, 6)...); !slices.Equal(got, want) {
		t.Fatalf("generations' partitions: %v, want %v", got, want)
	}
	if got, want := partitionNames(t, db, "generation_contents"), days("generation_contents", today, 8); !slices.Equal(got, want) {
		t.Fatalf("generation_contents' partitions: %v, want %v", got, want)
	}
	var invalid int64
	if err := db.Raw(`SELECT count(*) FROM pg_index WHERE indrelid = to_regclass('generations') AND NOT indisvalid`).
		Scan(&invalid).Error; err != nil || invalid != 0 {
		t.Fatalf("%d of generations' indexes are not valid on every partition (%v)", invalid, err)
	}
	var attached []string
	if err := db.Raw(`SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = to_regclass(?) ORDER BY 1`, legacy).
		Scan(&attached).Error; err != nil || len(attached) != 4 {
		t.Fatalf("the attached records have indexes %v (%v), want the primary key, by time, by key and by session", attached, err)
	}

	for _, id := range []string{ids[0], ids[1500], ids[len(ids)-1]} {
		if _, err := s.Generation(ctx, id); err != nil {
			t.Fatalf("record %s after the migration: %v", id, err)
		}
		if c, err := s.GenerationContent(ctx, id); err != nil || len(c.Input.Messages) != 1 {
			t.Fatalf("content of %s after the migration: %+v (%v)", id, c, err)
		}
	}
	sums, err := s.Activity(ctx, ports.ActivityFilter{})
	if err != nil || len(sums) != 1 || sums[0].Requests != 3000 || sums[0].Cost != total {
		t.Fatalf("activity after the migration: %+v (%v), want 3000 requests costing %d", sums, err, total)
	}
	var perDay []struct {
		Day string
		N   int64
	}
	if err := db.Raw(`SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*) AS n FROM generations
		GROUP BY 1 ORDER BY 1`).Scan(&perDay).Error; err != nil {
		t.Fatal(err)
	}
	byDay, err := s.Activity(ctx, ports.ActivityFilter{GroupBy: ports.ByDay})
	if err != nil || len(byDay) != len(perDay) {
		t.Fatalf("activity by day: %d days (%v), records on %d", len(byDay), err, len(perDay))
	}
	for i, d := range perDay {
		if byDay[i].Day.Format(time.DateOnly) != d.Day || byDay[i].Requests != d.N {
			t.Fatalf("activity of %s: %d requests, records %d", d.Day, byDay[i].Requests, d.N)
		}
	}

	// New records: today's go where the old ones are, one past the attached days to a day of its own.
	now, later := time.Now().UTC().Truncate(time.Microsecond), bound.Add(36*time.Hour)
	fresh := []generation.Entry{fullEntry(contract.ID(now, "now"), now), fullEntry(contract.ID(later, "later"), later)}
	if err := s.InsertGenerations(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	readsBack(t, s, fresh...)

	purged := func(id string) (record, content bool) {
		_, rerr := s.Generation(ctx, id)
		_, cerr := s.GenerationContent(ctx, id)
		return errors.Is(rerr, generation.ErrNotFound), errors.Is(cerr, generation.ErrNotFound)
	}
	// Contents of the records older than 20 days go (walked, 500 records a slice), records stay.
	contract.Purge(t, s.PurgeContents, today.AddDate(0, 0, -20), 500)
	for i, rec := range before {
		r, c := purged(rec.ID)
		if wantC := rec.CreatedAt.Before(today.AddDate(0, 0, -20)); r || c != wantC {
			t.Fatalf("record %d (%s) after the content purge: record gone %t, content gone %t", i, rec.CreatedAt, r, c)
		}
	}
	// Records older than 30 days go, with what is left of their contents.
	contract.Purge(t, s.PurgeGenerations, today.AddDate(0, 0, -30), 500)
	for i, rec := range before {
		if r, _ := purged(rec.ID); r != rec.CreatedAt.Before(today.AddDate(0, 0, -30)) {
			t.Fatalf("record %d (%s) after the purge: gone %t", i, rec.CreatedAt, r)
		}
	}
	// Past the attached days, they are dropped whole, with the contents kept apart.
	contract.Purge(t, s.PurgeGenerations, bound, 500)
	if got := partitionNames(t, db, "generations"); slices.Contains(got, legacy) {
		t.Fatalf("the attached records survived a purge past their days: %v", got)
	}
	var kept bool
	if err := db.Raw("SELECT to_regclass('generation_contents_legacy') IS NOT NULL").Scan(&kept).Error; err != nil || kept {
		t.Fatalf("the contents kept apart survived their records (%v)", err)
	}
	if r, c := purged(fresh[1].Record.ID); r || c {
		t.Fatalf("a record of a later day was purged")
	}
}

// TestPrepareDaysAtOnce: four replicas (each its own pool) prepare the same days at once, while a writer holds the
// table in an open transaction: every day is made once, none of them waits for the writer (attaching a day locks
// the table SHARE UPDATE EXCLUSIVE, which writers do not conflict with), and records of those days are then
// stored and found.
func TestPrepareDaysAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	open := func() *gorm.DB {
		db, cleanup, err := gormstore.Open(ctx, gormstore.Config{URL: url}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cleanup)
		return db
	}
	db := open()
	writer := db.Begin() // holds the lock an insert takes, until it rolls back
	t.Cleanup(func() { writer.Rollback() })
	if err := writer.Exec("LOCK TABLE generations, generation_contents IN ROW EXCLUSIVE MODE").Error; err != nil {
		t.Fatal(err)
	}
	from := generation.Day(t0).AddDate(0, 0, 100)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		s := gormstore.NewGenerationStore(open())
		wg.Go(func() { errs <- s.PrepareDays(ctx, from, from.AddDate(0, 0, 9)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	writer.Rollback()
	for _, table := range []string{"generations", "generation_contents"} {
		if got := partitionNames(t, db, table); !containsAll(got, days(table, from, 10)) {
			t.Fatalf("%s's partitions: %v, want the ten days from %s", table, got, from.Format(time.DateOnly))
		}
	}
	s := gormstore.NewGenerationStore(db)
	var batch []generation.Entry
	for d := range 10 {
		at := from.AddDate(0, 0, d).Add(time.Duration(d) * time.Hour)
		batch = append(batch, fullEntry(contract.ID(at, "d"), at))
	}
	if err := s.InsertGenerations(ctx, batch); err != nil {
		t.Fatal(err)
	}
	readsBack(t, s, batch...)
}

// TestRetentionDropsDays: on PostgreSQL a purge drops the days before its bound, contents first and records after
// (a content purge leaves the records' days), and the day an interrupted purge detached; a record whose day is gone
// is not found (404), like any unknown id, rather than an error.
func TestRetentionDropsDays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Postgres(t)
	s := gormstore.NewGenerationStore(db)
	first := generation.Day(t0).AddDate(0, 0, -40)
	var batch []generation.Entry
	for d := range 40 {
		at := first.AddDate(0, 0, d).Add(12 * time.Hour)
		batch = append(batch, fullEntry(contract.ID(at, "r"), at))
	}
	if err := s.InsertGenerations(ctx, batch); err != nil {
		t.Fatal(err)
	}
	cut := first.AddDate(0, 0, 30)
	if _, err := s.PurgeContents(ctx, cut, 1000); err != nil {
		t.Fatal(err)
	}
	if got := partitionNames(t, db, "generation_contents"); containsAll(got, days("generation_contents", first, 1)) ||
		!containsAll(got, days("generation_contents", cut, 10)) {
		t.Fatalf("contents' days after a purge before %s: %v", cut.Format(time.DateOnly), got)
	}
	if got := partitionNames(t, db, "generations"); !containsAll(got, days("generations", first, 40)) {
		t.Fatalf("a content purge dropped days of records: %v", got)
	}
	// A purge that detached a day and stopped before dropping it (a crash between the two) left it behind.
	orphan := days("generations", first, 1)[0]
	if err := db.Exec("ALTER TABLE generations DETACH PARTITION " + orphan).Error; err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeGenerations(ctx, cut, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := partitionNames(t, db, "generations"); containsAll(got, days("generations", first, 1)) ||
		!containsAll(got, days("generations", cut, 10)) {
		t.Fatalf("records' days after a purge before %s: %v", cut.Format(time.DateOnly), got)
	}
	for _, name := range append(days("generations", first, 30), days("generation_contents", first, 30)...) {
		var left bool
		if err := db.Raw("SELECT to_regclass(?) IS NOT NULL", name).Scan(&left).Error; err != nil || left {
			t.Fatalf("the table of a dropped day, %s, is left (%v)", name, err)
		}
	}
	t.Logf("purge dropped 30 days, %d records as estimated", n)
	for i, e := range batch {
		_, err := s.Generation(ctx, e.Record.ID)
		if gone := errors.Is(err, generation.ErrNotFound); gone != (i < 30) || (err != nil && !gone) {
			t.Fatalf("record of day %d after the purge: %v", i, err)
		}
	}
}

// TestSeed: the seed writes realistic records, their contents and their activity (by COPY on PostgreSQL, through
// the store elsewhere), which read back as the spec makes them and add up.
func TestSeed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewGenerationStore(db)
		spec := recordseed.Spec{Records: 5000, From: t0.AddDate(0, 0, -3), To: t0, Workspaces: []string{"w1", "w2"}, Keys: 20, ContentBytes: 300}
		n, err := s.Seed(ctx, spec.From, spec.To, spec.Entries())
		if err != nil || n != spec.Records {
			t.Fatalf("seeded %d of %d (%v)", n, spec.Records, err)
		}
		readsBack(t, s, spec.Entry(0), spec.Entry(2500), spec.Entry(4999))
		var records, cost int64
		for k := range spec.Keys {
			calls, c := contract.ActivityMatchesRecords(t, s, recordseed.KeyHash(k))
			records, cost = records+calls, cost+int64(c)
		}
		var want int64
		for i := range spec.Records {
			want += int64(spec.Entry(i).Record.TotalCost)
		}
		if records != int64(spec.Records) || cost != want {
			t.Fatalf("the keys' records: %d costing %d, want %d costing %d", records, cost, spec.Records, want)
		}
	})
}
