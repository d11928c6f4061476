// Command benchrecords measures generation records at scale on PostgreSQL (issue 37): with a database of -records
// realistic records over -days days (seeded by COPY, test/recordseed), the built gateway's GET /generation, the
// activity and list reads the console and /activity make, the recorder's throughput into the big tables, and
// retention dropping a month; or, with -migrate, the migration of a deployment's tables of that size into the
// layout by day, with the longest a reader and a writer were held up meanwhile. See docs/records.md.
//
//	go run ./test/benchrecords -records 10000000              # seed a scratch database, measure, drop it
//	go run ./test/benchrecords -records 10000000 -keep-db     # ... and keep it (its URL is printed)
//	go run ./test/benchrecords -db postgres://.../name        # measure a database seeded before (same spec)
//	go run ./test/benchrecords -migrate -records 10000000     # the migration of 0010 and 0011
//
// Reads go through the built binary where the gateway serves them (GET /generation); the activity and the list,
// which have no route yet (issue 35), are read through the store from this process, as another replica would.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/spool"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/recordseed"
)

type options struct {
	pg, dbURL, bin, phases string
	until                  string
	records, days, keys    int
	content                int
	keepDB, migrate        bool
	gets, reads            int
	recorded               int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchrecords: ")
	var o options
	flag.StringVar(&o.pg, "pg", envOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server to create the scratch database on")
	flag.StringVar(&o.dbURL, "db", "", "measure this database, seeded before with the same -records, -days, -keys and -content, instead of seeding one")
	flag.StringVar(&o.bin, "bin", "", "gateway binary (default: build ./cmd/switchboard)")
	flag.StringVar(&o.phases, "phases", "get,routes,activity,list,recorder,drop", "what to measure, in order (get, routes, activity, list, console, recorder, drop; drop last: it removes a month)")
	flag.IntVar(&o.records, "records", 1_000_000, "records to seed (or to migrate, with -migrate)")
	flag.IntVar(&o.days, "days", 40, "days the records span, ending at -until")
	flag.StringVar(&o.until, "until", "", "the day after the records' last, YYYY-MM-DD (default today: give the seeding's day with -db)")
	flag.IntVar(&o.keys, "keys", 200, "keys the records are spread over (a Zipf law: a few make most calls)")
	flag.IntVar(&o.content, "content", 1000, "bytes of prompt and completion a record keeps (0: none)")
	flag.BoolVar(&o.keepDB, "keep-db", false, "keep the scratch database (its URL is printed) for -db")
	flag.BoolVar(&o.migrate, "migrate", false, "measure migrations 0010 and 0011 on a database at schema 9 holding -records")
	flag.IntVar(&o.gets, "gets", 5000, "GET /generation calls at concurrency 1, after 500 to warm up")
	flag.IntVar(&o.reads, "reads", 200, "reads of each kind of activity and list query")
	flag.IntVar(&o.recorded, "recorded", 100_000, "entries the recorder writes in its phase")
	flag.Parse()
	ctx := context.Background()
	until := generation.Day(time.Now())
	if o.until != "" {
		var err error
		if until, err = time.Parse(time.DateOnly, o.until); err != nil {
			log.Fatalf("-until: %v", err)
		}
	}
	spec := recordseed.Spec{Records: o.records, From: until.AddDate(0, 0, -o.days), To: until, Keys: o.keys, ContentBytes: o.content}
	fmt.Printf("benchrecords: %d records over the %d days before %s, %d keys, %d bytes of content each; %s\n", o.records, o.days,
		until.Format(time.DateOnly), o.keys, o.content, time.Now().UTC().Format(time.RFC3339))
	if o.migrate {
		if err := measureMigration(ctx, o, spec); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := measure(ctx, o, spec); err != nil {
		log.Fatal(err)
	}
}

// measure seeds (unless -db) and runs the phases.
func measure(ctx context.Context, o options, spec recordseed.Spec) error {
	dir, err := os.MkdirTemp("", "benchrecords-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := binary(o, dir)
	if err != nil {
		return err
	}
	dbURL := o.dbURL
	if dbURL == "" {
		u, drop, err := scratch(ctx, o.pg, fmt.Sprintf("switchboard_records_%d", os.Getpid()))
		if err != nil {
			return err
		}
		if o.keepDB {
			fmt.Printf("database kept: %s\n", u)
		} else {
			defer drop()
		}
		dbURL = u
	}
	cfg := filepath.Join(dir, "switchboard.yaml")
	addr := freeAddr()
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "log: {level: warn}\nserver: {addr: %q}\ndatabase: {url: %q}\n", addr, dbURL), 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "SWITCHBOARD_GENERATIONS_SPOOL_DIR="+filepath.Join(dir, "spool"))
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--config", cfg}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("switchboard %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return strings.TrimSpace(string(out)), err
	}
	if _, err := cli("migrate"); err != nil {
		return err
	}
	db, closeDB, err := gormstore.Open(ctx, gormstore.Config{URL: dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer closeDB()
	var ws string
	if err := db.Raw("SELECT id FROM workspaces WHERE slug = 'default'").Scan(&ws).Error; err != nil {
		return err
	}
	spec.Workspaces = []string{ws}
	store := gormstore.NewGenerationStore(db)
	if o.dbURL == "" {
		log.Printf("seeding %d records", spec.Records)
		start := time.Now()
		if _, err := store.Seed(ctx, spec.From, spec.To, spec.Entries()); err != nil {
			return err
		}
		took := time.Since(start)
		log.Printf("settling (VACUUM ANALYZE, CHECKPOINT)")
		settled := time.Now()
		for _, q := range []string{"VACUUM (ANALYZE) generations, generation_contents, generation_activity", "CHECKPOINT"} {
			if err := db.Exec(q).Error; err != nil {
				return err
			}
		}
		fmt.Printf("| seeding by COPY | %d records in %.0f s: %.0f records/s (settled in %.0f s) |\n", spec.Records,
			took.Seconds(), float64(spec.Records)/took.Seconds(), time.Since(settled).Seconds())
	}
	var size string
	if err := db.Raw(`SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c
		WHERE c.relname LIKE 'generation%' AND c.relkind = 'r'`).Scan(&size).Error; err != nil {
		return err
	}
	fmt.Printf("| the records' tables, contents and indexes | %s on disk |\n", size)
	serve := func(keyArgs ...string) (string, func(), error) {
		key, err := cli(append([]string{"keys", "create"}, keyArgs...)...)
		if err != nil {
			return "", nil, err
		}
		gw, err := startGateway(bin, cfg, env, "http://"+addr)
		if err != nil {
			return "", nil, err
		}
		return key, gw.stop, nil
	}
	for _, phase := range strings.Split(o.phases, ",") {
		var err error
		switch phase {
		case "get":
			err = measureGet(ctx, o, spec, addr, serve)
		case "routes":
			err = measureRoutes(ctx, o, spec, addr, serve)
		case "activity":
			err = measureActivity(ctx, o, spec, store)
		case "list":
			err = measureList(ctx, o, spec, store)
		case "console":
			err = measureConsole(ctx, o, spec, addr, serve)
		case "recorder":
			err = measureRecorder(ctx, o, db, store)
		case "drop":
			err = measureDrop(ctx, spec, db, store)
		default:
			err = fmt.Errorf("unknown phase %q", phase)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", phase, err)
		}
	}
	return nil
}

// measureGet starts the gateway and calls, at concurrency 1 and in turn: GET /generation of a record drawn from
// all of them, of one drawn from the newest day's (a client asks for a call's record soon after it), GET /key (a
// route whose reads are small rows of small tables) and GET /healthz (the HTTP path and no database), with a key
// of the default workspace: the last two are the floors the machine and the gateway give a lookup at the time.
func measureGet(ctx context.Context, o options, spec recordseed.Spec, addr string, serve serveFunc) error {
	key, stop, err := serve("--name", "bench")
	if err != nil {
		return err
	}
	defer stop()
	r := rand.New(rand.NewPCG(1, 2))
	newestDay := spec.Records - spec.Records/o.days
	series := []getSeries{
		{fmt.Sprintf("GET /generation, any of the %d records", spec.Records),
			func() string { return "/api/v1/generation?id=" + url.QueryEscape(spec.ID(r.IntN(spec.Records))) }, nil},
		{"GET /generation, a record of the newest day",
			func() string {
				return "/api/v1/generation?id=" + url.QueryEscape(spec.ID(newestDay+r.IntN(spec.Records-newestDay)))
			}, nil},
		{"GET /key (the key and its usage read from the database: a route of small reads)", func() string { return "/api/v1/key" }, nil},
		{"GET /healthz (no database: the HTTP floor)", func() string { return "/healthz" }, nil},
	}
	// The first 500 warm the gateway's caches and connections.
	return timeGets(ctx, "http://"+addr, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }, 500, o.gets, series)
}

// serveFunc creates a key with the CLI (keyArgs follow "keys create") and starts the built gateway; it returns the
// key's secret and what stops the gateway.
type serveFunc func(keyArgs ...string) (key string, stop func(), err error)

// getSeries is one kind of GET a phase times: its name, the path of each call, and the latencies measured.
type getSeries struct {
	name string
	path func() string
	lat  []time.Duration
}

// timeGets calls each series in turn, warm+n times at concurrency 1, each request with its credentials set by auth,
// and prints the quantiles of the last n calls of each.
func timeGets(ctx context.Context, base string, auth func(*http.Request), warm, n int, series []getSeries) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for i := range warm + n {
		for j := range series {
			path := series[j].path()
			req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
			auth(req)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
			}
			if i >= warm {
				series[j].lat = append(series[j].lat, took)
			}
		}
	}
	for _, s := range series {
		fmt.Printf("| %s, c=1 through the gateway | p50 %s, p99 %s, max %s (%d calls) |\n", s.name,
			ms(quantile(s.lat, 0.5)), ms(quantile(s.lat, 0.99)), ms(slices.Max(s.lat)), len(s.lat))
	}
	return nil
}

// measureRoutes starts the gateway and calls the management routes an operator's client calls, with a management
// key: GET /activity (today and the 30 days before it, every key), the same split by workspace, and GET /generations
// of a key's last 7 days, first page of 50 (the heaviest key, and any key drawn as calls are), each -gets times in
// turn, with /healthz beside them as the floor.
func measureRoutes(ctx context.Context, o options, spec recordseed.Spec, addr string, serve serveFunc) error {
	key, stop, err := serve("--management", "--name", "bench-management")
	if err != nil {
		return err
	}
	defer stop()
	r := rand.New(rand.NewPCG(7, 8))
	week := "&from=" + url.QueryEscape(spec.To.AddDate(0, 0, -7).Format(time.RFC3339)) + "&to=" + url.QueryEscape(spec.To.Format(time.RFC3339))
	series := []getSeries{
		{"GET /activity (30 days by day, model, provider and endpoint)", func() string { return "/api/v1/activity" }, nil},
		{"GET /activity?group_by=workspace", func() string { return "/api/v1/activity?group_by=workspace" }, nil},
		{"GET /generations, the heaviest key's 7 days, first page of 50",
			func() string { return "/api/v1/generations?api_key_hash=" + recordseed.KeyHash(0) + week }, nil},
		{"GET /generations, a key's 7 days, first page of 50",
			func() string {
				return "/api/v1/generations?api_key_hash=" + recordseed.KeyHash(r.IntN(spec.Keys)) + week
			}, nil},
		{"GET /healthz (no database: the HTTP floor at the time)", func() string { return "/healthz" }, nil},
	}
	return timeGets(ctx, "http://"+addr, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) }, 500, o.gets, series)
}

// measureConsole signs in to the web console of the built gateway with a management key and loads its pages, -reads
// times each at concurrency 1, as a browser does (the whole page, its HTML rendered): the overview (30 days of
// activity by day, model, provider and key), the newest page of the generations list, a key's, a page deep in the
// list (a cursor in the middle of the records), a record's detail with its content, the keys and the health.
func measureConsole(ctx context.Context, o options, spec recordseed.Spec, addr string, serve serveFunc) error {
	key, stop, err := serve("--management", "--name", "console bench")
	if err != nil {
		return err
	}
	defer stop()
	base := "http://" + addr
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/console/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		return fmt.Errorf("sign in: %d", resp.StatusCode)
	}
	r := rand.New(rand.NewPCG(3, 4))
	deep := func() string {
		i := spec.Records/4 + r.IntN(spec.Records/2)
		return "/console/generations?after=" + generation.Cursor{CreatedAt: spec.At(i).UTC(), ID: spec.ID(i)}.String()
	}
	series := []getSeries{
		{"console overview (30 days by day, model, provider, key)", func() string { return "/console/overview" }, nil},
		{"console generations, the newest page", func() string { return "/console/generations" }, nil},
		{"console generations of the busiest key", func() string { return "/console/generations?key=" + recordseed.KeyHash(0) }, nil},
		{"console generations, a page in the middle (cursor)", deep, nil},
		{"console generation detail with content", func() string { return "/console/generations/" + spec.ID(r.IntN(spec.Records)) }, nil},
		{"console keys", func() string { return "/console/keys" }, nil},
		{"console health", func() string { return "/console/health" }, nil},
	}
	return timeGets(ctx, base, func(r *http.Request) { r.AddCookie(cookies[0]) }, 20, o.reads, series)
}

// measureActivity reads the activity /activity shows (30 days by day, model, provider and endpoint, every key), a
// key's and a workspace's spend over 30 days (what a budget reserves against), each -reads times.
func measureActivity(ctx context.Context, o options, spec recordseed.Spec, store *gormstore.GenerationStore) error {
	to := spec.To
	from := to.AddDate(0, 0, -30)
	r := rand.New(rand.NewPCG(3, 4))
	for _, q := range []struct {
		name string
		f    func() ports.ActivityFilter
	}{
		{"/activity: 30 days by day, model, provider and endpoint", func() ports.ActivityFilter {
			return ports.ActivityFilter{From: from, To: to, GroupBy: ports.ByDay | ports.ByModel | ports.ByProvider | ports.ByEndpoint}
		}},
		{"/activity split by workspace", func() ports.ActivityFilter {
			return ports.ActivityFilter{From: from, To: to, GroupBy: ports.ByDay | ports.ByWorkspace | ports.ByModel | ports.ByProvider | ports.ByEndpoint}
		}},
		{"a key's 30 days by day and model", func() ports.ActivityFilter {
			return ports.ActivityFilter{From: from, To: to, KeyHash: recordseed.KeyHash(r.IntN(spec.Keys)), GroupBy: ports.ByDay | ports.ByModel}
		}},
		{"a workspace's spend over 30 days (a budget's window)", func() ports.ActivityFilter {
			return ports.ActivityFilter{From: from, To: to, WorkspaceID: spec.Workspaces[0]}
		}},
	} {
		var rows int
		lat := make([]time.Duration, o.reads)
		for i := range lat {
			start := time.Now()
			got, err := store.Activity(ctx, q.f())
			if err != nil {
				return err
			}
			lat[i], rows = time.Since(start), len(got)
		}
		fmt.Printf("| activity: %s | p50 %s, p99 %s (%d rows) |\n", q.name, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), rows)
	}
	return nil
}

// measureList reads the console's list of a key's records over the last 7 days, newest first: its first page,
// and its tenth by cursor, for keys drawn as calls are (a few heavy keys most often).
func measureList(ctx context.Context, o options, spec recordseed.Spec, store *gormstore.GenerationStore) error {
	to := spec.To
	from := to.AddDate(0, 0, -7)
	r := rand.New(rand.NewPCG(5, 6))
	heavy := recordseed.KeyHash(0)
	for _, q := range []struct {
		name  string
		key   func() string
		pages int
	}{
		{"a key's 7 days, first page of 50 (the heaviest key)", func() string { return heavy }, 1},
		{"a key's 7 days, first page of 50 (any key)", func() string { return recordseed.KeyHash(r.IntN(spec.Keys)) }, 1},
		{"a key's 7 days, tenth page by cursor (the heaviest key)", func() string { return heavy }, 10},
		{"every key's 7 days, first page (no filter but time)", func() string { return "" }, 1},
	} {
		lat := make([]time.Duration, o.reads)
		for i := range lat {
			f := ports.GenerationFilter{KeyHash: q.key(), From: from, To: to}
			var took time.Duration
			for range q.pages {
				start := time.Now()
				page, err := store.ListGenerations(ctx, f)
				if err != nil {
					return err
				}
				took = time.Since(start)
				if page.Next == nil {
					break
				}
				f.After = page.Next
			}
			lat[i] = took
		}
		fmt.Printf("| list: %s | p50 %s, p99 %s |\n", q.name, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)))
	}
	return nil
}

// measureRecorder holds the tables locked while -recorded entries are recorded (they wait in the spool, as behind a
// database outage), then lets go and times the recorder draining them into the database: its throughput with the
// records already there, the gateway's recorder (app.Recorder, its default configuration) on its spool.
func measureRecorder(ctx context.Context, o options, db *gorm.DB, store *gormstore.GenerationStore) error {
	dir, err := os.MkdirTemp("", "benchrecords-spool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sp, err := spool.Open(spool.Config{Dir: dir, MaxBytes: 8 << 30}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer sp.Close()
	now := time.Now().UTC()
	fresh := recordseed.Spec{Records: o.recorded, From: now, To: now.Add(time.Minute), Keys: 200, ContentBytes: 1000,
		Workspaces: []string{"w"}}
	lock := db.Begin()
	if err := lock.Exec("LOCK TABLE generations IN EXCLUSIVE MODE").Error; err != nil {
		lock.Rollback()
		return err
	}
	rec := app.NewRecorder(store, sp, slog.New(slog.DiscardHandler), ports.NoMetrics{}, app.DefaultRecorderConfig())
	workers := app.StartWorkers(slog.New(slog.DiscardHandler), rec.Worker())
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < fresh.Records; i = int(next.Add(1) - 1) {
				e := fresh.Entry(i)
				e.Record.ID = generation.NewID(e.Record.CreatedAt, fmt.Sprintf("rec%d", i)) // not a seeded id
				rec.Record(ctx, e)
			}
		})
	}
	wg.Wait()
	start := time.Now()
	lock.Rollback()
	for rec.Stats().Records > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	workers.Stop()
	fmt.Printf("| recorder: %d entries from its spool into the tables | %.0f records/s (%.1f s) |\n", fresh.Records,
		float64(fresh.Records)/took.Seconds(), took.Seconds())
	return nil
}

// measureDrop removes the oldest 30 days (a month of records and contents) as retention does, while a reader looks
// records up by id every millisecond: how long until the days have left the table, how long until their files
// are gone too, and the reader's longest lookup then and in the 3 s before.
func measureDrop(ctx context.Context, spec recordseed.Spec, db *gorm.DB, store *gormstore.GenerationStore) error {
	var before int64
	if err := db.Raw("SELECT count(*) FROM generations").Scan(&before).Error; err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(7, 8))
	reader := startProbe("reader", func(int) error {
		_, err := store.Generation(ctx, spec.ID(spec.Records-1-r.IntN(spec.Records/4))) // the newest quarter: kept
		return err
	})
	cut := generation.Day(spec.From).AddDate(0, 0, 30)
	older := func() (int64, error) {
		var n int64
		err := db.Raw(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'generations'::regclass AND inhrelid::regclass::text < ?`,
			"generations_p"+cut.Format("20060102")).Scan(&n).Error
		return n, err
	}
	days, err := older()
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	idle := reader.mark()
	// When the last of those days has left the table, its records are gone from every read; their files are
	// removed after.
	detached := make(chan time.Time, 1)
	var whileDetaching time.Duration
	go func() {
		for {
			if left, err := older(); err != nil || left == 0 {
				whileDetaching = reader.mark()
				detached <- time.Now()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	n, err := store.PurgeGenerations(ctx, cut, 5000)
	took := time.Since(start)
	gone := (<-detached).Sub(start)
	whileRemoving, _, rerr := reader.stop()
	if err := errors.Join(err, rerr); err != nil {
		return err
	}
	var after int64
	if err := db.Raw("SELECT count(*) FROM generations").Scan(&after).Error; err != nil {
		return err
	}
	fmt.Printf("| retention: the oldest %d days (%d records, %d estimated, and their contents) out of the table | %s; their files removed after, in all %s |\n",
		days, before-after, n, ms(gone), ms(took))
	fmt.Printf("| a lookup's longest wait meanwhile (every ms) | %s while the days left, %s while their files went (%s in the 3 s before) |\n",
		ms(whileDetaching), ms(whileRemoving), ms(idle))
	return nil
}

// measureMigration fills a database at schema 9 with -records records in the layout before 0010, then migrates it
// with the built binary while a reader (a lookup by id) and a writer (a record inserted as an earlier release
// did) each run every 2 ms, and reports the migration's time and the longest each of them waited.
func measureMigration(ctx context.Context, o options, spec recordseed.Spec) error {
	dir, err := os.MkdirTemp("", "benchrecords-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := binary(o, dir)
	if err != nil {
		return err
	}
	dbURL, drop, err := scratch(ctx, o.pg, fmt.Sprintf("switchboard_migrate_%d", os.Getpid()))
	if err != nil {
		return err
	}
	if !o.keepDB {
		defer drop()
	}
	db, closeDB, err := gormstore.Open(ctx, gormstore.Config{URL: dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer closeDB()
	if err := gormstore.MigrateTo(ctx, db, 9); err != nil {
		return err
	}
	spec.Workspaces = []string{"w"}
	log.Printf("writing %d records as a release before 0010 did", spec.Records)
	start := time.Now()
	total, err := recordseed.OldLayout(ctx, db, spec)
	if err != nil {
		return err
	}
	for _, q := range []string{"VACUUM (ANALYZE) generations, generation_contents", "CHECKPOINT"} {
		if err := db.Exec(q).Error; err != nil {
			return err
		}
	}
	log.Printf("written in %.0f s", time.Since(start).Seconds())
	var known string
	if err := db.Raw("SELECT id FROM generations ORDER BY created_at DESC LIMIT 1").Scan(&known).Error; err != nil {
		return err
	}
	reader := startProbe("reader", func(int) error {
		var id string
		return db.Raw("SELECT id FROM generations WHERE id = ?", known).Scan(&id).Error
	})
	writer := startProbe("writer", func(i int) error {
		now := time.Now().UTC()
		return db.Exec(`INSERT INTO generations (id, request_id, upstream_id, api_type, workspace_id, key_hash, model,
			provider_name, origin, http_referer, user_agent, external_user, status, streamed, cancelled, is_byok,
			finish_reason, native_finish_reason, latency_us, generation_time_us, moderation_latency_us, tokens_prompt,
			tokens_completion, native_tokens_prompt, native_tokens_completion, native_tokens_completion_images,
			native_tokens_reasoning, native_tokens_cached, num_input_audio_prompt, num_media_prompt, num_media_completion,
			num_search_results, num_fetches, total_cost_micros, upstream_cost_micros, data_region, attempts, flags, created_at)
			VALUES (?, '', '', 'completions', 'w', 'probe', 'm', 'p', '', '', '', '', 200, false, false, false, '', '', 0, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'global', '[]', '[]', ?) ON CONFLICT DO NOTHING`,
			generation.NewID(now, fmt.Sprintf("probe%d", i)), now).Error
	})
	// The longest any statement has been waiting for a lock (not counting the waits of an index built
	// concurrently for the transactions before it, which hold up nobody), sampled every millisecond.
	var lockWait atomic.Int64 // nanoseconds
	locks := startProbe("lock sampler", func(int) error {
		var secs float64
		err := db.Raw(`SELECT COALESCE(max(extract(epoch FROM clock_timestamp() - query_start)), 0) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'virtualxid'`).Scan(&secs).Error
		if w := int64(secs * float64(time.Second)); w > lockWait.Load() {
			lockWait.Store(w)
		}
		return err
	})
	time.Sleep(5 * time.Second) // what the probes wait with no migration running: the machine's own delays
	readIdle, writeIdle := reader.mark(), writer.mark()
	lockWait.Store(0)
	time.Sleep(200 * time.Millisecond)
	cfg := filepath.Join(dir, "switchboard.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "log: {level: info}\ndatabase: {url: %q}\n", dbURL), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--config", cfg, "migrate")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start = time.Now()
	err = cmd.Run()
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	readWorst, reads, rerr := reader.stop()
	writeWorst, writes, werr := writer.stop()
	_, _, lerr := locks.stop()
	if err := errors.Join(err, rerr, werr, lerr); err != nil {
		return err
	}
	var n, cost int64
	if err := db.Raw("SELECT count(*), COALESCE(SUM(total_cost_micros), 0) FROM generations WHERE key_hash <> 'probe'").Row().Scan(&n, &cost); err != nil {
		return err
	}
	var probes int64
	if err := db.Raw("SELECT count(*) FROM generations WHERE key_hash = 'probe'").Scan(&probes).Error; err != nil {
		return err
	}
	if n != int64(spec.Records) || cost != int64(total) || probes != int64(writes) {
		return fmt.Errorf("after the migration: %d records costing %d and %d of %d probes; before %d costing %d",
			n, cost, probes, writes, spec.Records, total)
	}
	fmt.Printf("| migration 0010-0011 of %d records (with contents) by `switchboard migrate` | %.1f s; every record kept |\n", spec.Records, took.Seconds())
	fmt.Printf("| longest a statement waited for a lock meanwhile (pg_stat_activity, sampled every ms) | %s |\n", ms(time.Duration(lockWait.Load())))
	fmt.Printf("| longest a lookup by id waited meanwhile (%d lookups, every 2 ms) | %s (%s in the 5 s before) |\n", reads,
		ms(readWorst), ms(readIdle))
	fmt.Printf("| longest an insert of a record waited meanwhile (%d inserts, every 2 ms) | %s (%s in the 5 s before) |\n", writes,
		ms(writeWorst), ms(writeIdle))
	return nil
}

// probe runs a statement every 2 ms and keeps the longest it took.
type probe struct {
	mu    sync.Mutex
	worst time.Duration
	n     int
	err   error
	done  chan struct{}
	ended chan struct{}
}

func startProbe(name string, stmt func(i int) error) *probe {
	p := &probe{done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(p.ended)
		for i := 0; ; i++ {
			select {
			case <-p.done:
				return
			default:
			}
			start := time.Now()
			err := stmt(i)
			took := time.Since(start)
			p.mu.Lock()
			if err != nil && p.err == nil {
				p.err = fmt.Errorf("%s: %w", name, err)
			}
			p.worst, p.n = max(p.worst, took), p.n+1
			p.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p
}

// mark returns the longest wait so far and starts over.
func (p *probe) mark() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.worst
	p.worst = 0
	return w
}

// stop ends the probe: the longest wait since the mark, how many statements it ran and the first error.
func (p *probe) stop() (time.Duration, int, error) {
	close(p.done)
	<-p.ended
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.worst, p.n, p.err
}

// binary is -bin, or the gateway built into dir.
func binary(o options, dir string) (string, error) {
	if o.bin != "" {
		return o.bin, nil
	}
	bin := filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/switchboard")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return bin, build.Run()
}

// scratch creates an empty database next to the one base names, and returns its URL and a drop.
func scratch(ctx context.Context, base, name string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("postgres (-pg): %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
		conn.Close(ctx)
	}, nil
}

// gateway is the switchboard process.
type gateway struct{ cmd *exec.Cmd }

func startGateway(bin, cfg string, env []string, base string) (*gateway, error) {
	cmd := exec.Command(bin, "--config", cfg, "serve")
	cmd.Env, cmd.Stderr = env, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &gateway{cmd: cmd}
	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, nil
			}
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, errors.New("the gateway did not get ready in a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	_ = g.cmd.Wait()
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
