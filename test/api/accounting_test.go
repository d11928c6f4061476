package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/logsink"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// outageFor is how long TestOutageLosesNothing keeps the database away: short in the default run,
// SWITCHBOARD_OUTAGE (e.g. 60s, make soak) for the full minute.
func outageFor(t *testing.T) time.Duration {
	if v := os.Getenv("SWITCHBOARD_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 2 * time.Second
}

// listening waits until the gateway's cache listener has connected (and flushed its caches, which it does once
// connected), so that keys cached after this stay cached through an outage.
func listening(t *testing.T, dbURL string) {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dbURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 10*time.Second, func() bool {
		var n int
		db.Raw("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'").Scan(&n)
		return n > 0
	})
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
}

// TestOutageLosesNothing cuts PostgreSQL (through a TCP proxy) while speech calls go on: afterwards every call
// answered 200 has its record, and the key's usage and the credits' usage equal the sum of the records' costs.
// PostgreSQL only: the embedded SQLite file has no connection a proxy could cut (its kill -9 case is
// TestKillDuringBurstSQLite in test/replicas).
func TestOutageLosesNothing(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	u.timeout = "1m"
	dbURL := testdb.PostgresURL(t)
	pu, _ := url.Parse(dbURL)
	p := newProxy(t, pu.Host)
	pu.Host = p.ln.Addr().String()
	g := harness.Start(t, harness.WithConfig(u.config("openai")), harness.WithEnv("DATABASE_URL", pu.String()))
	listening(t, dbURL)
	key, hash := g.Key(t, nil)
	if r := speak(t, g, key, nil); r.Status != 200 { // warms the key's caches
		t.Fatalf("before the outage: %d %s", r.Status, r.Body)
	}

	p.cut()
	var mu sync.Mutex
	answered, other := []string{}, 0
	var wg sync.WaitGroup
	stop := time.Now().Add(outageFor(t))
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				r := speak(t, g, key, nil)
				mu.Lock()
				if r.Status == 200 {
					answered = append(answered, r.Header.Get("X-Generation-Id"))
				} else {
					other++ // refused before any work: the key's cache entry (30 s) expired with the database away
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if st := g.App.Recorder.Stats(); st.Records == 0 && len(answered) > 0 {
		t.Fatalf("spool empty during the outage: %+v", st)
	}
	p.resume(t)
	g.Stop() // drains the spool into the database

	db, err := gorm.Open(postgres.Open(dbURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	db.Raw("SELECT COUNT(*) FROM generations WHERE id IN ?", answered).Scan(&stored)
	if int(stored) != len(answered) {
		t.Fatalf("%d of %d calls answered 200 during the outage have a record", stored, len(answered))
	}
	var sum, usage, used int64
	db.Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations WHERE key_hash = ?", hash).Scan(&sum)
	db.Raw("SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ?", hash).Scan(&usage)
	db.Raw("SELECT used_micros FROM credit_balance").Scan(&used)
	if usage != sum || used != sum {
		t.Fatalf("records sum to %d; key usage %d, credit usage %d", sum, usage, used)
	}
	contract.ActivityMatchesRecords(t, gormstore.NewGenerationStore(db), hash) // and so does the activity
	t.Logf("outage %v: %d calls answered 200 (all recorded), %d refused; $%.6f booked", outageFor(t), len(answered),
		other, float64(sum)/1e6)
}

// TestSpoolFullRefusesBeforeUpstream: with the database stalled (the generations table locked) and the spool at
// its bound, an inference call is a 503 with Retry-After before any upstream call, and so is /readyz, with the same
// reason and the spool's depth, so that a load balancer stops sending calls; the episode is logged once, not once
// a call. Once the database is back, /readyz is 200 with the spool's depth, and the episode's end is logged.
func TestSpoolFullRefusesBeforeUpstream(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	var logs logsink.Buffer
	g := harness.Start(t, harness.WithConfig(u.config("openai")), harness.WithEnv("SWITCHBOARD_GENERATIONS_SPOOL_MAX_BYTES", "1"),
		harness.WithLog(&logs))
	key, _ := g.Key(t, nil)
	if r := speak(t, g, key, nil); r.Status != 200 {
		t.Fatalf("first call: %d %s", r.Status, r.Body)
	}
	harness.Eventually(t, 5*time.Second, func() bool { return g.App.Recorder.Stats().Records == 0 })
	db, err := gorm.Open(postgres.Open(g.DatabaseURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	if err := tx.Exec("LOCK TABLE generations IN EXCLUSIVE MODE").Error; err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if r := speak(t, g, key, nil); r.Status != 200 { // spooled: the spool now holds more than 1 byte
		t.Fatalf("call while the database is stalled: %d %s", r.Status, r.Body)
	}
	calls := u.openai.Calls()
	r := speak(t, g, key, nil)
	e := harness.AssertError(t, r, 503)
	// docs/operating.md's 503 section gives the reason and the Retry-After an operator sees.
	if e["metadata"].(map[string]any)["reason"] != "spool_full" || r.Header.Get("Retry-After") != "5" || u.openai.Calls() != calls {
		t.Fatalf("spool full: Retry-After %q, upstream calls %d -> %d (%v), want spool_full with Retry-After 5 before any",
			r.Header.Get("Retry-After"), calls, u.openai.Calls(), e)
	}
	for range 5 {
		harness.AssertError(t, speak(t, g, key, nil), 503)
	}
	ready := g.Do(t, "GET", "/readyz", "", nil)
	if e := harness.AssertError(t, ready, 503); e["metadata"].(map[string]any)["reason"] != "spool_full" || e["metadata"].(map[string]any)["spool"] == nil {
		t.Fatalf("readyz while calls are refused: %s", ready.Body)
	}
	tx.Rollback()
	harness.Eventually(t, 10*time.Second, func() bool { return g.App.Recorder.Stats().Records == 0 })
	ready = g.Do(t, "GET", "/readyz", "", nil)
	if ready.Status != 200 || ready.JSON(t)["spool"] == nil {
		t.Fatalf("readyz: %d %s", ready.Status, ready.Body)
	}
	if r := speak(t, g, key, nil); r.Status != 200 {
		t.Fatalf("once the spool drained: %d %s", r.Status, r.Body)
	}
	out := logs.String()
	if n := strings.Count(out, "the spool is full"); n != 1 || !strings.Contains(out, "the spool has room again") ||
		strings.Count(out, "not ready: inference calls would be refused") != 1 || strings.Count(out, `"level":"ERROR"`) != 0 {
		t.Fatalf("the episode logged %d times (want once, with its end), the readiness's once; errors: %d\n%s", n,
			strings.Count(out, `"level":"ERROR"`), out)
	}
}

// hammer makes n calls through gateways, c at a time (round robin), and returns how many were answered 200.
func hammer(t *testing.T, gws []*harness.Gateway, key string, body map[string]any, n, c int) (ok int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := speak(t, gws[i%len(gws)], key, body)
				if r.Status == 200 {
					mu.Lock()
					ok++
					mu.Unlock()
				} else if r.Status != 402 && r.Status != 403 {
					t.Errorf("call %d: %d %s", i, r.Status, r.Body)
				}
			}
		}()
	}
	wg.Wait()
	return ok
}

// TestLimitsHoldAcrossGateways: a key limit of $0.05, a guardrail of $0.05 and per-second pricing (with a slower
// speed passed through provider.options), hammered at c=32 through two gateways on one PostgreSQL: what is spent
// never exceeds either limit, and usage equals the records' sum.
func TestLimitsHoldAcrossGateways(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	u.timeout = "1m"
	cfg := u.config("gemini")
	a := harness.Start(t, harness.WithConfig(cfg))
	b := harness.Start(t, harness.WithConfig(cfg), harness.WithEnv("DATABASE_URL", a.DatabaseURL))
	key, hash := a.Key(t, map[string]any{"limit": 0.05})
	railedKey, railedHash := a.Key(t, nil)
	gr := createGuardrail(t, a, `{"name":"budget","limit_usd":0.05,"reset_interval":"daily"}`)
	if r := a.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", a.Admin, map[string]any{"key_hashes": []string{railedHash}}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	body := map[string]any{"input": strings.Repeat("Hello there, ", 8), "provider": map[string]any{
		"options": map[string]any{"gemini": map[string]any{"speed": 0.9}}}}
	okKey := hammer(t, []*harness.Gateway{a, b}, key, body, 96, 32)
	okRail := hammer(t, []*harness.Gateway{a, b}, railedKey, body, 96, 32)
	a.Stop()
	b.Stop()

	db, err := gorm.Open(postgres.Open(a.DatabaseURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name, hash string
		ok         int
	}{{"key limit", hash, okKey}, {"guardrail", railedHash, okRail}} {
		var sum, usage int64
		db.Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations WHERE key_hash = ?", k.hash).Scan(&sum)
		db.Raw("SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ?", k.hash).Scan(&usage)
		t.Logf("%s $0.05: %d of 96 calls answered, $%.6f spent", k.name, k.ok, float64(sum)/1e6)
		var costs []int64
		db.Raw("SELECT total_cost_micros FROM generations WHERE key_hash = ? AND status = 200", k.hash).Scan(&costs)
		t.Logf("costs %v", costs)
		if sum > 50_000 || usage != sum || k.ok == 0 {
			t.Errorf("%s: spent %d micro-dollars of 50,000 (usage %d) in %d calls", k.name, sum, usage, k.ok)
		}
	}
	var spent int64
	db.Raw("SELECT COALESCE(SUM(spent_micros), 0) FROM guardrail_budgets WHERE guardrail_id = ?", gr).Scan(&spent)
	if spent > 50_000 {
		t.Errorf("guardrail budget spent %d of 50,000", spent)
	}
}

// serveOwn serves g on a listener of its own, as serve does, and returns its base URL and the shutdown: it
// cancels Serve's context (SIGTERM) and waits for Serve to return.
func serveOwn(t *testing.T, g *harness.Gateway) (base string, shutdown func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.App.Server.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), func() {
		t.Helper()
		cancel()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
}

// TestShutdownCutIsBilledForWhatWasDelivered: a stream still running when the gateway's shutdown timeout ends is
// cut by the gateway, recorded as such (finish_reason "shutdown", not cancelled by its caller) and billed for
// the audio delivered: half a second of a per-second price.
func TestShutdownCutIsBilledForWhatWasDelivered(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`server: {shutdown_timeout: 200ms}
providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up, timeout: 10s}
models:
  - {id: tts, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1, pricing: {per_second: 1}}]}
`, u.openai.BaseURL())))
	key, _ := g.Key(t, nil)
	const delivered = speech.PCMBytesPerSecond / 2
	u.openai.Script(fakes.Step{HoldAfter: delivered}) // half a second of audio, then the provider stalls
	base, shutdown := serveOwn(t, g)

	req, _ := http.NewRequest("POST", base+"/api/v1/audio/speech",
		strings.NewReader(`{"model":"tts","input":"Hello there","voice":"alloy","response_format":"pcm"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, delivered)); err != nil {
		t.Fatal(err)
	}
	shutdown() // the stream outlives the 200 ms drain and is cut
	_, _ = io.Copy(io.Discard, resp.Body)
	rec := generationOf(t, g, harness.Response{Status: resp.StatusCode, Header: resp.Header})
	if rec["finish_reason"] != "shutdown" || rec["cancelled"] != false || jsonString(rec["total_cost"]) != "0.5" {
		t.Fatalf("record of a stream cut by the shutdown: finish %v, cancelled %v, cost %v", rec["finish_reason"],
			rec["cancelled"], rec["total_cost"])
	}
}

// TestShutdownCutChat: a chat completion whose provider stalls, after its first tokens or before any, is still
// running when the shutdown timeout ends. The gateway cuts it, records it as cut by the shutdown (not cancelled
// by its caller), and tells the caller, who is still there: streamed, the tokens delivered and then an error
// event (503), billed for what was delivered; not streamed, or before the first token, nothing was delivered: a
// 503, and nothing to pay. The key's usage equals the record's cost.
func TestShutdownCutChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		stream  bool
		begun   bool   // whether the first token came before the cut
		failure string // the status of the failure the record keeps: what the caller got
	}{
		{"streamed", true, true, "null"},
		{"not streamed", false, true, "503"},
		{"before the first token", true, false, "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := fakes.NewOpenAI(t, "sk-1")
			g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`server: {shutdown_timeout: 200ms}
providers:
  - {slug: first, kind: openai, base_url: %s, api_key: sk-1, timeout: 10s, idle_timeout: 60s}
models:
  - {id: chat, modality: chat, endpoints: [{provider: first, upstream_model: up-1, pricing: {per_million_prompt_tokens: 2, per_million_completion_tokens: 8}}]}
`, up.BaseURL())))
			key, hash := g.Key(t, nil)
			step := fakes.Step{HoldAfter: 700} // the first tokens, then the provider stalls
			if !tc.begun {
				step = fakes.Step{Hold: make(chan struct{})} // no answer at all
			}
			up.Script(step)
			base, shutdown := serveOwn(t, g)

			body, _ := json.Marshal(hi(map[string]any{"stream": tc.stream}))
			req, _ := http.NewRequest("POST", base+"/api/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			type answer struct {
				resp *http.Response
				body []byte
				err  error
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				answered <- answer{resp, b, err}
			}()
			// The provider's first token has reached the gateway, and the answer is being delivered when it is cut;
			// or the provider has the call and has not answered.
			harness.Eventually(t, 10*time.Second, func() bool {
				if !tc.begun {
					return up.Calls() == 1
				}
				n, _ := value(scrape(t, g), "switchboard_upstream_requests_total", map[string]string{"provider": "first", "outcome": "ok"})
				return n == 1
			})
			shutdown()
			a := <-answered
			if a.err != nil {
				t.Fatalf("the caller's answer: %v", a.err)
			}
			r := harness.Response{Status: a.resp.StatusCode, Header: a.resp.Header, Body: a.body}
			rec := generationOf(t, g, r)
			failure := failureOf(t, g, rec)
			var cost int64
			if tc.stream && tc.begun {
				evs := events(t, r.Body)
				var text strings.Builder
				for _, e := range evs[:len(evs)-1] {
					var c struct {
						Choices []struct{ Delta struct{ Content string } }
					}
					if err := json.Unmarshal([]byte(e), &c); err != nil {
						t.Fatalf("event %s: %v", e, err)
					}
					for _, ch := range c.Choices {
						text.WriteString(ch.Delta.Content)
					}
				}
				last := evs[len(evs)-1]
				if r.Status != 200 || text.Len() == 0 || !strings.Contains(last, `"error":{"code":503`) || !strings.Contains(last, `"finish_reason":"error"`) {
					t.Fatalf("stream cut by the shutdown: %d, delivered %q, last event %s", r.Status, text.String(), last)
				}
				completion := chat.Tokens(text.String())
				prompt, _ := strconv.ParseInt(jsonString(rec["tokens_prompt"]), 10, 64)
				if got := jsonString(rec["tokens_completion"]); got != strconv.FormatInt(completion, 10) || prompt == 0 ||
					contentOf(t, g, rec)["output"].(map[string]any)["completion"] != text.String() {
					t.Fatalf("record of %q: %s completion tokens, %d prompt tokens, content %v", text.String(), got, prompt,
						contentOf(t, g, rec)["output"])
				}
				cost = prompt*2 + completion*8
			} else if harness.AssertError(t, r, 503); r.Header.Get("Retry-After") != "1" {
				t.Errorf("a 503 for the shutdown with Retry-After %q, want 1", r.Header.Get("Retry-After"))
			}
			if rec["finish_reason"] != "shutdown" || rec["cancelled"] != false || failure != tc.failure ||
				jsonString(rec["total_cost"]) != strconv.FormatFloat(float64(cost)/1e6, 'f', -1, 64) {
				t.Fatalf("record of a call cut by the shutdown: finish %v, cancelled %v, failure %s, cost %v (want %d micro-dollars)",
					rec["finish_reason"], rec["cancelled"], failure, rec["total_cost"], cost)
			}
			db, err := gorm.Open(postgres.Open(g.DatabaseURL), &gorm.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if sqlDB, err := db.DB(); err == nil {
				defer sqlDB.Close()
			}
			var usage int64
			db.Raw("SELECT COALESCE(SUM(micros), 0) FROM key_usage WHERE key_hash = ?", hash).Scan(&usage)
			if usage != cost {
				t.Fatalf("key usage %d micro-dollars, the record %d", usage, cost)
			}
		})
	}
}

// TestChatImplausibleUsage: an upstream that reports a usage no call could have (20 million prompt tokens, past
// the largest context window, chat.MaxTokenCount) has it not taken: the call is priced as one without usage, from
// an estimate of its prompt (6 tokens) and of what was delivered ("Hi": 1 token), 20 micro-dollars, and settles so
// everywhere its estimate was held: the record, the key's usage against its limit, the organization's credits and
// the guardrail's budget, which has room left for a call of 8,024. Taken, the usage billed $40 on each, past the
// credits and the budget.
func TestChatImplausibleUsage(t *testing.T) {
	t.Parallel()
	u, g := newChat(t, "credits:\n  enabled: true\n")
	if err := g.App.Credits.AddCredits(context.Background(), domain.Micros(1_000_000)); err != nil {
		t.Fatal(err)
	}
	key, hash := g.Key(t, map[string]any{"limit": 1})
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"budget","ignored_providers":["second"],"limit_usd":0.01,"reset_interval":"daily"}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"up-1","choices":`
	u.first.Script(fakes.Step{Events: []string{head + `[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}` + "\n\n",
		head + `[],"usage":{"prompt_tokens":20000000,"completion_tokens":1,"total_tokens":20000001}}` + "\n\n", "data: [DONE]\n\n"}})
	r = g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 10}))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	rec := generationOf(t, g, r)
	if jsonString(rec["tokens_prompt"]) != "6" || jsonString(rec["tokens_completion"]) != "1" || jsonString(rec["total_cost"]) != "0.00002" {
		t.Fatalf("record: %s prompt tokens, %s completion tokens, cost %s; want 6, 1, 0.00002", jsonString(rec["tokens_prompt"]),
			jsonString(rec["tokens_completion"]), jsonString(rec["total_cost"]))
	}
	harness.Eventually(t, 5*time.Second, func() bool {
		d := g.Do(t, "GET", "/credits", g.Admin, nil).JSON(t)["data"].(map[string]any)
		return jsonString(d["total_usage"]) == "0.00002"
	})
	if usage := jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"]); usage != "0.00002" {
		t.Fatalf("key usage %s, want 0.00002", usage)
	}
	if r := g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"max_tokens": 1000})); r.Status != 200 {
		t.Fatalf("a call of 8,024 within the budget's 10,000: %d %s", r.Status, r.Body)
	}
}
