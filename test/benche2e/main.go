//go:build linux

// Command benche2e measures the gateway as a user does: the built binary as its own process on the chosen
// database, a fake OpenAI upstream as another process, and the load from a third, with direct calls to the
// same fake alternated with calls through the gateway in the same run, so the figures are ratios and
// differences rather than absolute timings. Run it with `make bench-e2e` (BENCH_ARGS="-h" lists the knobs):
//
//	go run ./test/benche2e -dialects sqlite,postgres
//
// It prints one table per scenario (a modality and its request: add a row to scenarios to measure another):
// added latency at concurrency 1, throughput through the gateway over direct at concurrency 32, flatness (the
// last 10k calls of a long run against the first 10k), the gateway's CPU per call (from /proc), its heap per
// stream in flight (from GODEBUG=gctrace=1), and GET /generation latency with many records seeded through the
// store. The same binary plays the fake (`benche2e fake`) and the load generator (`benche2e load`). It reads
// /proc, so it runs on Linux only.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
)

// upstreamKey is the fake's API key.
const upstreamKey = "sk-bench-upstream"

// scenario is one kind of call, made directly to the fake and through the gateway.
type scenario struct {
	name string
	// models is the gateway configuration's models section for this scenario (YAML list items), with %s for the
	// provider slug.
	models string
	// path is the route, the same on the fake (under /v1) and on the gateway (under /api/v1), unless directPath
	// names the fake's (a request of another wire format than the upstream's, which the gateway translates).
	path, directPath string
	// direct and gateway are the request bodies; hold asks the fake to send a little and then stall, for the
	// streams-in-flight measurement.
	direct, gateway, hold string
	// first, when set, marks the first token of a streamed answer: latency is measured to the first line that
	// holds it (time to first token) rather than to the answer's end, whose length is not checked.
	first string
	// anyLength says the answer's length is not -clip's (nor checked); no hold says nothing is held in flight.
	anyLength bool
}

var scenarios = []scenario{{
	name: "speech",
	models: `
  - {id: bench/tts, modality: tts, endpoints: [{provider: %[1]s, upstream_model: tts-1, pricing: {per_million_characters: 15}}]}
  - {id: bench/tts-hold, modality: tts, endpoints: [{provider: %[1]s, upstream_model: tts-hold, pricing: {per_million_characters: 15}}]}`,
	path:    "/audio/speech",
	direct:  `{"model":"tts-1","input":"Hello from the benchmark.","voice":"alloy","response_format":"pcm"}`,
	gateway: `{"model":"bench/tts","input":"Hello from the benchmark.","voice":"alloy","response_format":"pcm"}`,
	hold:    `{"model":"bench/tts-hold","input":"Hello from the benchmark.","voice":"alloy","response_format":"pcm"}`,
}, {
	name: "chat",
	models: `
  - {id: bench/chat, modality: chat, endpoints: [{provider: %[1]s, upstream_model: chat-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: bench/chat-hold, modality: chat, endpoints: [{provider: %[1]s, upstream_model: chat-hold, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}`,
	path:    "/chat/completions",
	direct:  `{"model":"chat-1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	gateway: `{"model":"bench/chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	hold:    `{"model":"bench/chat-hold","stream":true,"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	first:   `"content":"w`,
}, {
	// messages is chat's call as Anthropic's Messages, to an anthropic upstream: the caller's body passed on, the
	// upstream's events passed back as they came.
	name: "messages",
	models: `
  - {id: bench/messages, modality: chat, endpoints: [{provider: %[1]s-anthropic, upstream_model: messages-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: bench/messages-hold, modality: chat, endpoints: [{provider: %[1]s-anthropic, upstream_model: chat-hold, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}`,
	path:    "/messages",
	direct:  `{"model":"messages-1","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	gateway: `{"model":"bench/messages","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	hold:    `{"model":"bench/messages-hold","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	first:   `"text":"w`,
}, {
	// A Responses API stream translated to the chat completions of the upstream, beside the direct chat call: the
	// first token is the same word in both formats.
	name: "responses",
	models: `
  - {id: bench/chat, modality: chat, endpoints: [{provider: %[1]s, upstream_model: chat-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: bench/chat-hold, modality: chat, endpoints: [{provider: %[1]s, upstream_model: chat-hold, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}`,
	path:       "/responses",
	directPath: "/chat/completions",
	direct:     `{"model":"chat-1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	gateway:    `{"model":"bench/chat","stream":true,"input":"Write two hundred words."}`,
	hold:       `{"model":"bench/chat-hold","stream":true,"input":"Write two hundred words."}`,
	first:      `"w0 `,
}, {
	// A retrieval batch as the openai package sends it (base64, its default): four passages, 1,536 numbers each.
	// The answer is whole or nothing, so nothing is held in flight; its length differs through the gateway (id,
	// provider, cost), and is not checked.
	name: "embeddings",
	models: `
  - {id: bench/embed, modality: embeddings, endpoints: [{provider: %[1]s, upstream_model: embed-1, pricing: {per_million_prompt_tokens: 0.02}}]}`,
	path:      "/embeddings",
	direct:    `{"model":"embed-1","encoding_format":"base64","input":["` + embedPassages + `"]}`,
	gateway:   `{"model":"bench/embed","encoding_format":"base64","input":["` + embedPassages + `"]}`,
	anyLength: true,
}}

// embedPassages are the embeddings scenario's four inputs, joined for a JSON list.
var embedPassages = strings.Join([]string{embedPassage, embedPassage, embedPassage, embedPassage}, `","`)

const embedPassage = "A passage of a document to retrieve later, about a hundred bytes long, give or take a few words."

type options struct {
	dialects, scenarios string
	bin, pgURL, keep    string
	clip, tokens        int
	tokenGap            time.Duration
	latencyCalls        int
	pause               time.Duration
	throughputCalls     int
	block               int
	flatCalls, window   int
	holdStreams         int
	rows, getCalls      int
	conc                int
	h2cCalls            int
	credits             bool
	settle              bool
	pprof               string
	pprofSeconds        int
	pprofLatencySeconds int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("benche2e: ")
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "fake":
			runFake(os.Args[2:])
			return
		case "load":
			runLoad(os.Args[2:])
			return
		case "trace":
			runTraceSummary(os.Args[2:])
			return
		case "--config": // -bin proxy: this program stands in for the gateway
			runProxy(os.Args[2], os.Args[3:])
			return
		}
	}
	var o options
	fs := flag.NewFlagSet("benche2e", flag.ExitOnError)
	fs.StringVar(&o.dialects, "dialects", "sqlite,postgres", "databases to measure, comma-separated: sqlite, postgres")
	fs.StringVar(&o.scenarios, "scenarios", "speech", "scenarios to measure, comma-separated")
	fs.StringVar(&o.bin, "bin", "", "gateway binary (default: build ./cmd/switchboard with CGO_ENABLED=0); "+
		"\"proxy\" measures a bare net/http proxy in its place, the floor under the gateway's figures (no records: -rows and -get-calls are 0)")
	fs.StringVar(&o.pgURL, "pg", envOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server to create a scratch database on")
	fs.IntVar(&o.clip, "clip", 16<<10, "bytes the fake answers per call")
	fs.IntVar(&o.tokens, "tokens", 200, "tokens in the fake's chat answer (a handful measures the gateway's way to the first token "+
		"without the rest of the stream competing with it for the cores)")
	fs.DurationVar(&o.tokenGap, "token-gap", 0, "pause of the fake between the events of a chat answer, as a model's tokens come "+
		"(0: the whole answer at once, faster than any model streams; Go's timers round a pause below 1ms up to about 1ms here)")
	fs.IntVar(&o.latencyCalls, "latency-calls", 2000, "pairs of calls (direct, gateway) at concurrency 1")
	fs.DurationVar(&o.pause, "pause", 0, "pause before each latency pair, as a sparse caller's calls come (e.g. 4s: "+
		"past the gateway's 3 s key cache, so each call finds its key's entry stale)")
	fs.IntVar(&o.throughputCalls, "throughput-calls", 20000, "calls each way at -conc, in alternating blocks")
	fs.IntVar(&o.block, "block", 2000, "calls in one block of the throughput phase")
	fs.IntVar(&o.flatCalls, "flat-calls", 100000, "calls in a row through the gateway at -conc, for flatness and CPU per call")
	fs.IntVar(&o.window, "window", 10000, "calls compared at the start and the end of the flatness run")
	fs.IntVar(&o.holdStreams, "hold", 256, "streams held in flight for the heap measurement")
	fs.IntVar(&o.rows, "rows", 1000000, "generation records seeded through the store before GET /generation is measured")
	fs.IntVar(&o.getCalls, "get-calls", 2000, "GET /generation calls at concurrency 1")
	fs.BoolVar(&o.settle, "settle", false, "let the database settle after seeding, as a deployment's does between writing its records and "+
		"reading them: on PostgreSQL VACUUM (ANALYZE) of the seeded tables, what autovacuum does to a table that grew, and a CHECKPOINT, "+
		"which writes out what the seed left dirty; on SQLite ANALYZE and a WAL checkpoint")
	fs.IntVar(&o.conc, "conc", 32, "concurrency of the throughput and flatness phases")
	fs.IntVar(&o.h2cCalls, "h2c", 0, "calls made at once over one unencrypted HTTP/2 connection to the gateway (prior knowledge, "+
		"as a load balancer that multiplexes sends them), each checked whole, after a call that opens the connection (0: skipped; "+
		"a gateway without h2c fails it)")
	fs.BoolVar(&o.credits, "credits", false, "turn credits.enabled on (the organization's balance is checked on every call)")
	fs.StringVar(&o.pprof, "pprof", "", "write the gateway's CPU profile of the throughput phase into this folder "+
		"(<scenario>-<dialect>.pprof; view with go tool pprof -top BIN FILE), what it allocated until then (.allocs.pprof), "+
		"and the latency phase's first seconds at c=1 as a CPU profile (.latency.pprof) and an execution trace (.latency.trace; "+
		"go tool trace -pprof=sched|sync|net|syscall FILE says where a call waited)")
	fs.IntVar(&o.pprofSeconds, "pprof-seconds", 20, "longest CPU profile -pprof records (the throughput phase's first seconds)")
	fs.IntVar(&o.pprofLatencySeconds, "pprof-latency-seconds", 5, "seconds of the latency phase -pprof profiles and traces "+
		"(at c=1 a second holds some 15 samples of a call's CPU: 30 s and -latency-calls 40000 tell one function's share)")
	fs.StringVar(&o.keep, "keep", "", "keep the scratch files in this folder (default: a temporary one, removed)")
	_ = fs.Parse(os.Args[1:])
	if err := o.check(); err != nil {
		log.Fatal(err)
	}

	dir := o.keep
	if dir == "" {
		d, err := os.MkdirTemp("", "benche2e-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		log.Fatal(err)
	}
	if o.bin == "proxy" {
		exe, err := os.Executable()
		if err != nil {
			log.Fatal(err)
		}
		o.bin, o.rows, o.getCalls = exe, 0, 0
	}
	if o.bin == "" {
		o.bin = filepath.Join(dir, "switchboard")
		build := exec.Command("go", "build", "-trimpath", "-o", o.bin, "./cmd/switchboard")
		build.Dir = repoRoot()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			log.Fatalf("build: %v", err)
		}
	}
	fmt.Printf("benche2e: clip %d B, chat tokens %d, gap %v, %d latency pairs (pause %v), %d throughput calls each way (blocks of %d) at c=%d, "+
		"%d flatness calls, %d streams held, %d records seeded (settled %t), credits %t; %s\n", o.clip, o.tokens, o.tokenGap, o.latencyCalls,
		o.pause, o.throughputCalls, o.block, o.conc, o.flatCalls, o.holdStreams, o.rows, o.settle, o.credits, time.Now().UTC().Format(time.RFC3339))

	fake := startFake(o.clip, o.tokens, o.tokenGap)
	defer fake.stop()
	for _, name := range split(o.scenarios) {
		sc := findScenario(name)
		var results []*result
		for _, dialect := range split(o.dialects) {
			r, err := measure(o, dir, dialect, sc, fake)
			if err != nil {
				log.Fatalf("%s on %s: %v", sc.name, dialect, err)
			}
			results = append(results, r)
		}
		printTable(o, sc, results)
	}
}

func findScenario(name string) scenario {
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	log.Fatalf("unknown scenario %q", name)
	return scenario{}
}

// result is one dialect's figures for one scenario.
type result struct {
	dialect, scenario                    string
	seedRate                             float64       // records/s through InsertGenerations
	settled                              time.Duration // how long -settle took
	directP50, directP99, addP50, addP99 time.Duration
	ownP50                               time.Duration // the gateway's overhead metric's median over the latency phase; -1 when none
	directRate, gatewayRate              float64       // calls/s at -conc
	firstRate, lastRate                  float64       // gateway calls/s, first and last window of the long run
	directBefore, directAfter            float64       // direct calls/s, a window's worth before and after it
	cpuPerCall, upstreamCPUPerCall       time.Duration
	dbCPUPerCall                         time.Duration // PostgreSQL's backends
	commitsPerKCall                      float64       // PostgreSQL's commits
	gcPerKCall                           float64
	syscallsPerCall                      float64 // reads and writes
	heapPerStream                        float64 // bytes
	heapBase, heapHeld                   int64   // MB
	getP50, getP99                       time.Duration
	h2cFailed, h2cConns                  int     // of -h2c calls at once over one HTTP/2 connection
	h2cRate                              float64 // their calls/s
	gatewayErrors                        []string
	flatCalls, holdStreams, rows         int
}

func printTable(o options, sc scenario, rs []*result) {
	fmt.Printf("\n%s, through the gateway vs direct to the same fake (ratios and differences from one run)\n\n", sc.name)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	head := "| measure\t"
	sep := "|---\t"
	for _, r := range rs {
		head += " " + r.dialect + "\t"
		sep += "---\t"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	// A phase run for no calls is skipped: its row says so.
	row := func(name string, f func(r *result) string, ran func(options) bool) {
		line := "| " + name + "\t"
		for _, r := range rs {
			if ran(o) {
				line += " " + f(r) + "\t"
			} else {
				line += " skipped\t"
			}
		}
		fmt.Fprintln(w, line)
	}
	latency := "added latency c=1, p50 / p99"
	if sc.first != "" {
		latency = "added time to first token c=1, p50 / p99"
	}
	row(latency, func(r *result) string {
		return fmt.Sprintf("%s / %s ms (direct %s / %s)", ms(r.addP50), ms(r.addP99), ms(r.directP50), ms(r.directP99))
	}, latencyRan)
	row("gateway's own time before its upstream call, c=1 p50", func(r *result) string {
		if r.ownP50 < 0 {
			return "not reported"
		}
		return fmt.Sprintf("%d µs (its overhead metric)", r.ownP50.Microseconds())
	}, latencyRan)
	row("throughput c=32, gateway / direct", func(r *result) string {
		return fmt.Sprintf("%.2f (%.0f / %.0f calls/s)", r.gatewayRate/r.directRate, r.gatewayRate, r.directRate)
	}, throughputRan)
	row("flatness: last / first window", func(r *result) string {
		return fmt.Sprintf("%.2f (%.0f / %.0f calls/s, %dk calls)", r.lastRate/r.firstRate, r.lastRate, r.firstRate, r.flatCalls/1000)
	}, flatRan)
	row("the machine's own drift: direct after / before", func(r *result) string {
		return fmt.Sprintf("%.2f (%.0f / %.0f calls/s)", r.directAfter/r.directBefore, r.directAfter, r.directBefore)
	}, flatRan)
	row("gateway CPU per call", func(r *result) string {
		return fmt.Sprintf("%d µs (fake + load: %d µs)", r.cpuPerCall.Microseconds(), r.upstreamCPUPerCall.Microseconds())
	}, flatRan)
	row("database server CPU per call", func(r *result) string {
		if r.dialect != "postgres" {
			return "in the gateway's"
		}
		return fmt.Sprintf("%d µs (PostgreSQL's backends; %.0f commits per 1k calls)", r.dbCPUPerCall.Microseconds(), r.commitsPerKCall)
	}, flatRan)
	row("gateway GC cycles per 1k calls", func(r *result) string { return fmt.Sprintf("%.1f", r.gcPerKCall) }, flatRan)
	row("gateway read+write syscalls per call", func(r *result) string { return fmt.Sprintf("%.1f", r.syscallsPerCall) }, flatRan)
	row("heap per stream in flight", func(r *result) string {
		return fmt.Sprintf("%.1f KiB (%d streams: %d -> %d MB)", r.heapPerStream/1024, r.holdStreams, r.heapBase, r.heapHeld)
	}, func(o options) bool { return heapRan(o) && sc.hold != "" })
	row("calls at once over one h2c connection", func(r *result) string {
		return fmt.Sprintf("%d: %d failed, over %d connection(s), %.0f calls/s", o.h2cCalls, r.h2cFailed, r.h2cConns, r.h2cRate)
	}, h2cRan)
	row("GET /generation c=1, p50 / p99", func(r *result) string {
		return fmt.Sprintf("%s / %s ms (%d records)", ms(r.getP50), ms(r.getP99), r.rows)
	}, getRan)
	row("seeding through the store", func(r *result) string {
		if o.settle {
			return fmt.Sprintf("%.0f records/s, then settled in %.1f s", r.seedRate, r.settled.Seconds())
		}
		return fmt.Sprintf("%.0f records/s, not settled (-settle)", r.seedRate)
	}, seedRan)
	_ = w.Flush()
	for _, r := range rs {
		for _, e := range r.gatewayErrors {
			fmt.Printf("%s gateway log: %s\n", r.dialect, e)
		}
	}
}

// Which phases a run makes: a count of 0 skips its phase.
func latencyRan(o options) bool    { return o.latencyCalls > 0 }
func throughputRan(o options) bool { return o.throughputCalls > 0 }
func flatRan(o options) bool       { return o.flatCalls > 0 }
func heapRan(o options) bool       { return o.holdStreams > 0 }
func h2cRan(o options) bool        { return o.h2cCalls > 0 }
func seedRan(o options) bool       { return o.rows > 0 }
func getRan(o options) bool        { return seedRan(o) && o.getCalls > 0 }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// measure runs every phase of one scenario against a gateway on a fresh database of the dialect.
func measure(o options, dir, dialect string, sc scenario, fake *fakeProc) (*result, error) {
	r := &result{dialect: dialect, scenario: sc.name, flatCalls: o.flatCalls, holdStreams: o.holdStreams, rows: o.rows}
	ctx := context.Background()
	var dbURL string
	var db *backends
	switch dialect {
	case "sqlite":
		path := filepath.Join(dir, "sqlite-"+sc.name, "switchboard.db")
		_ = os.RemoveAll(filepath.Dir(path))
		dbURL = "sqlite:" + path
	case "postgres":
		// The process id keeps runs side by side on one server apart.
		name := fmt.Sprintf("switchboard_bench_%s_%d", sc.name, os.Getpid())
		u, conn, drop, err := scratchPostgres(ctx, o.pgURL, name)
		if err != nil {
			return nil, err
		}
		defer drop()
		dbURL, db = u, &backends{conn: conn, name: name}
	default:
		return nil, fmt.Errorf("unknown dialect %q", dialect)
	}
	addr, pprofAddr, server := freeAddr(), "", ""
	if o.pprof != "" {
		pprofAddr = freeAddr()
		server = fmt.Sprintf(", pprof_addr: %q", pprofAddr) // only then: binaries before server.pprof_addr refuse it
	}
	cfgPath := filepath.Join(dir, "switchboard-"+dialect+".yaml")
	cfg := fmt.Sprintf(`log: {level: warn}
server: {addr: %q%s}
database: {url: %q}
limits: {requests_per_minute: 1000000000}
credits: {enabled: %t}
providers:
  - {slug: fake, kind: openai, base_url: %[5]s/v1, api_key: %[6]s}
  - {slug: fake-anthropic, kind: anthropic, base_url: %[5]s/v1, api_key: %[6]s}
models:%[7]s
`, addr, server, dbURL, o.credits, fake.url, upstreamKey, fmt.Sprintf(sc.models, "fake"))
	// The spool's place goes in the environment, which binaries from before the spool ignore (their file refuses
	// settings it does not know).
	env := append(os.Environ(), "SWITCHBOARD_GENERATIONS_SPOOL_DIR="+filepath.Join(dir, "spool-"+dialect))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(o.bin, append([]string{"--config", cfgPath}, args...)...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			return "", fmt.Errorf("switchboard %s: %v: %s", strings.Join(args, " "), err, stderr)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := cli("migrate"); err != nil {
		return nil, err
	}
	key, err := cli("keys", "create", "--name", "bench")
	if err != nil {
		return nil, err
	}
	if _, err := cli("credits", "add", "1000000000"); err != nil {
		return nil, err
	}
	log.Printf("%s: seeding %d generation records through the store", dialect, o.rows)
	if r.seedRate, err = seed(ctx, dbURL, o.rows); err != nil {
		return nil, err
	}
	if o.settle && seedRan(o) {
		log.Printf("%s: letting the database settle", dialect)
		if r.settled, err = settle(ctx, dbURL); err != nil {
			return nil, err
		}
	}

	gw, err := startGateway(o.bin, cfgPath, "http://"+addr, env)
	if err != nil {
		return nil, err
	}
	defer func() { r.gatewayErrors = gw.stop() }()
	base := loadArgs{Gateway: gw.url + "/api/v1" + sc.path, Direct: fake.url + "/v1" + cmp.Or(sc.directPath, sc.path), Key: key,
		UpstreamKey: upstreamKey, DirectBody: sc.direct, GatewayBody: sc.gateway, Clip: o.clip, First: sc.first}
	if sc.first != "" || sc.anyLength {
		base.Clip = -1
	}

	log.Printf("%s: warming up", dialect)
	warm := base
	warm.Mode, warm.Conc, warm.N = "flat", 8, 1000
	if _, err := runLoadProc(warm, nil); err != nil {
		return nil, err
	}

	if latencyRan(o) {
		if err := latency(r, o, base, gw.url, pprofAddr); err != nil {
			return nil, err
		}
	}
	if throughputRan(o) {
		if err := throughput(r, o, base, pprofAddr); err != nil {
			return nil, err
		}
	}
	if flatRan(o) {
		if err := flatness(r, o, base, gw, fake, db); err != nil {
			return nil, err
		}
	}
	if heapRan(o) && sc.hold != "" {
		if err := heldHeap(r, o, base, sc.hold, gw); err != nil {
			return nil, err
		}
	}
	if h2cRan(o) {
		log.Printf("%s: %d calls at once over one h2c connection", r.dialect, o.h2cCalls)
		h2c := base
		h2c.Mode, h2c.N = "h2c", o.h2cCalls
		out, err := runLoadProc(h2c, nil)
		if err != nil {
			return nil, err
		}
		r.h2cFailed, r.h2cConns, r.h2cRate = out.Failed, out.Conns, out.GatewayRate
	}
	if getRan(o) {
		log.Printf("%s: GET /generation, %d calls at c=1 over %d records", r.dialect, o.getCalls, o.rows)
		get := base
		get.Mode, get.N, get.Rows, get.Gateway = "get", o.getCalls, o.rows, gw.url+"/api/v1/generation"
		out, err := runLoadProc(get, nil)
		if err != nil {
			return nil, err
		}
		r.getP50, r.getP99 = out.GatewayP50, out.GatewayP99
	}
	return r, nil
}

// latency measures the added latency at c=1, and how much of it the gateway reports as its own work.
func latency(r *result, o options, base loadArgs, gwURL, pprofAddr string) error {
	log.Printf("%s: added latency, %d pairs at c=1", r.dialect, o.latencyCalls)
	lat := base
	lat.Mode, lat.Conc, lat.N, lat.Pause = "pairs", 1, o.latencyCalls, o.pause
	before, berr := overheadBuckets(gwURL)
	profiled := make(chan error, 2)
	if o.pprof != "" {
		// At c=1 a call's time is mostly waiting: the execution trace shows where one call waits, the CPU
		// profile what it runs. Both cover the phase's first seconds.
		for kind, ext := range map[string]string{"profile": ".latency.pprof", "trace": ".latency.trace"} {
			go func() {
				url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", pprofAddr, kind, o.pprofLatencySeconds)
				profiled <- saveProfile(url, filepath.Join(o.pprof, r.scenario+"-"+r.dialect+ext))
			}()
		}
	}
	out, err := runLoadProc(lat, nil)
	if err != nil {
		return err
	}
	if o.pprof != "" {
		if err := errors.Join(<-profiled, <-profiled); err != nil {
			return err
		}
	}
	r.directP50, r.directP99 = out.DirectP50, out.DirectP99
	r.addP50, r.addP99 = out.GatewayP50-out.DirectP50, out.GatewayP99-out.DirectP99
	r.ownP50 = -1
	if after, aerr := overheadBuckets(gwURL); berr == nil && aerr == nil {
		r.ownP50 = median(before, after)
	}
	return nil
}

// bucket is one cumulative bucket of a histogram: the calls of at most le seconds.
type bucket struct {
	le    float64
	count float64
}

// overheadBuckets reads the gateway's switchboard_gateway_overhead_seconds histogram (summed over modalities:
// one scenario runs at a time) from its /metrics: the time it spent on a call before its upstream call, as the
// gateway itself measures it. The bare proxy has none: an error.
func overheadBuckets(gwURL string) ([]bucket, error) {
	resp, err := http.Get(gwURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: status %d", resp.StatusCode)
	}
	sums := map[float64]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "switchboard_gateway_overhead_seconds_bucket{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		_, le, _ := strings.Cut(labels, `le="`)
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"`), 64)
		n, err2 := strconv.ParseFloat(value, 64)
		if err != nil || err2 != nil {
			return nil, fmt.Errorf("/metrics: %q", sc.Text())
		}
		sums[bound] += n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, errors.New("/metrics: no switchboard_gateway_overhead_seconds")
	}
	out := make([]bucket, 0, len(sums))
	for le, n := range sums {
		out = append(out, bucket{le, n})
	}
	slices.SortFunc(out, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	return out, nil
}

// median is the median of the calls counted between two reads of one histogram, interpolated within its bucket
// as Prometheus's histogram_quantile does; -1 when there were none.
func median(before, after []bucket) time.Duration {
	if len(before) != len(after) {
		return -1
	}
	total := after[len(after)-1].count - before[len(before)-1].count
	if total <= 0 {
		return -1
	}
	lower, below := 0.0, 0.0
	for i := range after {
		n := after[i].count - before[i].count
		if n >= total/2 {
			if math.IsInf(after[i].le, 1) {
				return time.Duration(lower * float64(time.Second))
			}
			v := lower + (after[i].le-lower)*(total/2-below)/(n-below)
			return time.Duration(v * float64(time.Second))
		}
		lower, below = after[i].le, n
	}
	return -1
}

// throughput measures the gateway's rate against direct calls' at -conc, with a CPU profile when asked.
func throughput(r *result, o options, base loadArgs, pprofAddr string) error {
	log.Printf("%s: throughput, %d calls each way at c=%d", r.dialect, o.throughputCalls, o.conc)
	tp := base
	tp.Mode, tp.Conc, tp.N, tp.Block = "blocks", o.conc, o.throughputCalls, o.block
	profiled := make(chan error, 1)
	if o.pprof != "" {
		go func() {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, o.pprofSeconds)
			profiled <- saveProfile(url, filepath.Join(o.pprof, r.scenario+"-"+r.dialect+".pprof"))
		}()
	}
	out, err := runLoadProc(tp, nil)
	if err != nil {
		return err
	}
	if o.pprof != "" {
		if err := <-profiled; err != nil {
			return err
		}
		// What the gateway allocated since it started (the warm-up, latency and throughput phases).
		url := "http://" + pprofAddr + "/debug/pprof/allocs"
		if err := saveProfile(url, filepath.Join(o.pprof, r.scenario+"-"+r.dialect+".allocs.pprof")); err != nil {
			return err
		}
	}
	r.directRate, r.gatewayRate = out.DirectRate, out.GatewayRate
	return nil
}

// flatness runs -flat-calls through the gateway at -conc: the first and last window's rates, and the gateway's
// (and on PostgreSQL the database server's) CPU, GC cycles and system calls per call. A window's worth of direct
// calls before and after the run, outside what is counted per call, says how much the machine itself drifted
// meanwhile (a shared machine's pace moves within minutes): the ratio the targets speak of is the gateway's alone
// only when the direct one stayed near 1.
func flatness(r *result, o options, base loadArgs, gw *gateway, fake *fakeProc, db *backends) error {
	log.Printf("%s: flatness and CPU, %d calls through the gateway at c=%d", r.dialect, o.flatCalls, o.conc)
	flat := base
	flat.Mode, flat.Conc, flat.N, flat.Window = "flat", o.conc, o.flatCalls, min(o.window, o.flatCalls/2)
	direct := flat
	direct.Mode, direct.N = "direct", flat.Window
	before, err := runLoadProc(direct, nil)
	if err != nil {
		return err
	}
	cpu0, fake0, gc0, sys0 := procCPU(gw.pid()), procCPU(fake.pid()), gw.gcCount(), procSyscalls(gw.pid())
	db0, err := db.cpu()
	if err != nil {
		return err
	}
	var load time.Duration
	out, err := runLoadProc(flat, &load)
	if err != nil {
		return err
	}
	cpu1, fake1, gc1, sys1 := procCPU(gw.pid()), procCPU(fake.pid()), gw.gcCount(), procSyscalls(gw.pid())
	db1, err := db.cpu()
	if err != nil {
		return err
	}
	n := time.Duration(o.flatCalls)
	r.syscallsPerCall = float64(sys1-sys0) / float64(o.flatCalls)
	r.cpuPerCall = (cpu1 - cpu0) / n
	r.upstreamCPUPerCall = (fake1 - fake0 + load) / n
	r.dbCPUPerCall = db1.since(db0) / n
	r.commitsPerKCall = float64(db1.commits-db0.commits) * 1000 / float64(o.flatCalls)
	r.gcPerKCall = float64(gc1-gc0) * 1000 / float64(o.flatCalls)
	r.firstRate, r.lastRate = out.FirstRate, out.LastRate
	after, err := runLoadProc(direct, nil)
	if err != nil {
		return err
	}
	r.directBefore, r.directAfter = before.DirectRate, after.DirectRate
	return nil
}

// heldHeap measures the gateway's live heap with -hold streams in flight and without.
func heldHeap(r *result, o options, base loadArgs, body string, gw *gateway) error {
	log.Printf("%s: heap with %d streams in flight", r.dialect, o.holdStreams)
	churn := base
	churn.Mode, churn.Conc, churn.N = "flat", 4, 3000
	heap := func() (int64, error) {
		n := gw.gcCount()
		for range 20 {
			if _, err := runLoadProc(churn, nil); err != nil {
				return 0, err
			}
			if gw.gcCount() >= n+3 {
				break
			}
		}
		return gw.lastLive(), nil
	}
	hold := base
	hold.Mode, hold.N, hold.GatewayBody = "hold", o.holdStreams, body
	holder, err := startHolder(hold)
	if err != nil {
		return err
	}
	held, err := heap()
	holder.release()
	if err != nil {
		return err
	}
	baseline, err := heap()
	if err != nil {
		return err
	}
	r.heapBase, r.heapHeld = baseline, held
	r.heapPerStream = float64(held-baseline) * (1 << 20) / float64(o.holdStreams)
	return nil
}

// saveProfile saves a profile of the gateway (from server.pprof_addr) into path.
func saveProfile(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	log.Printf("profile of the gateway: %s", path)
	return f.Close()
}

// check refuses counts that no phase can run: negative ones, and blocks or windows of no calls for a phase
// that runs (a count of 0 skips its phase).
func (o options) check() error {
	for name, n := range map[string]int{"-latency-calls": o.latencyCalls, "-throughput-calls": o.throughputCalls,
		"-flat-calls": o.flatCalls, "-hold": o.holdStreams, "-rows": o.rows, "-get-calls": o.getCalls, "-h2c": o.h2cCalls} {
		if n < 0 {
			return fmt.Errorf("%s must not be negative (0 skips its phase)", name)
		}
	}
	switch {
	case o.pause < 0:
		return errors.New("-pause must not be negative")
	case o.conc < 1:
		return errors.New("-conc must be at least 1")
	case o.tokens < 1:
		return errors.New("-tokens must be at least 1 (the load waits for the first)")
	case throughputRan(o) && o.block < 1:
		return errors.New("-block must be at least 1 when -throughput-calls is not 0")
	case flatRan(o) && o.window < 1:
		return errors.New("-window must be at least 1 when -flat-calls is not 0")
	}
	return nil
}

// settle does to the seeded database what a deployment's gets between writing its records and reading them, and
// says how long it took. A million records written in seconds leave on PostgreSQL rows no reader has checked
// (each first read sets their hint bits, dirtying the page it reads), no statistics, and up to shared_buffers of
// dirty pages, which the backends serving the calls then write out themselves; autovacuum (its insert threshold)
// and the checkpointer do this in a deployment, over time. On SQLite, ANALYZE and a checkpoint of its WAL.
func settle(ctx context.Context, dbURL string) (time.Duration, error) {
	db, closeDB, err := gormstore.Open(ctx, gormstore.Config{URL: dbURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	defer closeDB()
	steps := []string{"ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"}
	if gormstore.Dialect(db) == gormstore.Postgres {
		steps = []string{"VACUUM (ANALYZE) generations, generation_contents, key_usage, credit_balance", "CHECKPOINT"}
	}
	start := time.Now()
	for _, q := range steps {
		if err := db.WithContext(ctx).Exec(q).Error; err != nil {
			return 0, fmt.Errorf("settle: %s: %w", q, err)
		}
	}
	return time.Since(start), nil
}

// scratchPostgres creates an empty database next to the one base names and returns its URL, a connection to
// base (until the drop) and a drop.
func scratchPostgres(ctx context.Context, base, name string) (string, *pgx.Conn, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, nil, fmt.Errorf("postgres (-pg): %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		conn.Close(ctx)
		return "", nil, nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		conn.Close(ctx)
		return "", nil, nil, err
	}
	u.Path = "/" + name
	return u.String(), conn, func() {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
		conn.Close(ctx)
	}, nil
}

// backends are the PostgreSQL server's processes serving one database, whose CPU is what the gateway's calls
// cost the server (read from /proc: when the server runs on this machine); nil on SQLite, whose work is the
// gateway's own.
type backends struct {
	conn *pgx.Conn
	name string
}

// backendCPU is the CPU time each backend had used, by process id, and the database's commits so far.
type backendCPU struct {
	pids    map[int]time.Duration
	commits int64
}

func (b *backends) cpu() (backendCPU, error) {
	if b == nil {
		return backendCPU{}, nil
	}
	ctx := context.Background()
	// The statistics a backend gathers reach pg_stat_database when its transaction ends, at most once a second.
	var out backendCPU
	if err := b.conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", b.name).Scan(&out.commits); err != nil {
		return out, fmt.Errorf("read commits: %w", err)
	}
	rows, err := b.conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", b.name)
	if err != nil {
		return out, fmt.Errorf("list backends: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return out, fmt.Errorf("list backends: %w", err)
	}
	out.pids = map[int]time.Duration{}
	for _, pid := range pids {
		if d, err := pidCPU(int(pid)); err == nil {
			out.pids[int(pid)] = d
		}
	}
	return out, nil
}

// since is the CPU the backends used after then, all of theirs for those started since (what those that ended
// in between used is missed).
func (c backendCPU) since(then backendCPU) time.Duration {
	var d time.Duration
	for pid, t := range c.pids {
		d += t - then.pids[pid]
	}
	return d
}

// gateway is the switchboard process.
type gateway struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	gcs  int
	live int64
	errs []string
	done chan struct{}
}

// gcLine matches GODEBUG=gctrace=1's report: "gc 12 @3.1s 2%: ..., 4->5->1 MB, ...": the last is the live heap.
var gcLine = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

func startGateway(bin, cfgPath, url string, env []string) (*gateway, error) {
	g := &gateway{url: url, done: make(chan struct{})}
	g.cmd = child(exec.Command(bin, "--config", cfgPath, "serve"))
	g.cmd.Env = append(slices.Clip(env), "GODEBUG=gctrace=1")
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			if m := gcLine.FindStringSubmatch(line); m != nil {
				g.gcs++
				g.live, _ = strconv.ParseInt(m[3], 10, 64)
			} else if len(g.errs) < 20 && strings.Contains(line, "level=ERROR") {
				g.errs = append(g.errs, line)
			}
			g.mu.Unlock()
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return g, nil
			}
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("the gateway did not get ready: %v", g.errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gateway) pid() int { return g.cmd.Process.Pid }

func (g *gateway) gcCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gcs
}

func (g *gateway) lastLive() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}

// stop sends SIGTERM, waits, and returns the errors the gateway logged.
func (g *gateway) stop() []string {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	<-g.done
	_ = g.cmd.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.errs
}

// procCPU is a process's user and system CPU time so far, from /proc.
func procCPU(pid int) time.Duration {
	d, err := pidCPU(pid)
	if err != nil {
		log.Fatalf("read /proc: %v (benche2e needs Linux)", err)
	}
	return d
}

func pidCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces: utime and stime are 14 and 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// procSyscalls is how many read and write system calls a process made so far, from /proc.
func procSyscalls(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		log.Fatalf("read /proc: %v", err)
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && (k == "syscr" || k == "syscw") {
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// repoRoot is the module's root, found from the working directory up.
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// self runs this program again in another role.
func self(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	return child(exec.Command(exe, args...))
}

// child makes cmd die with this process, so that no fake or gateway outlives a failed run.
func child(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// writeJSON prints v as one line.
func writeJSON(w io.Writer, v any) {
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Fatal(err)
	}
}
