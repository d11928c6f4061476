package api_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

func TestSpeechRateLimit(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	clock := harness.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(u.configWith("limits:\n  requests_per_minute: 2", "openai")))
	key, hash := g.Key(t, nil)
	for i := range 2 {
		r := speak(t, g, key, nil)
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("call %d: %d, X-RateLimit-Limit %q", i, r.Status, r.Header.Get("X-RateLimit-Limit"))
		}
	}
	r := speak(t, g, key, nil)
	harness.AssertError(t, r, 429)
	if r.Header.Get("Retry-After") != "30" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("429 headers: %v", r.Header)
	}
	clock.Advance(30 * time.Second) // one request's worth comes back
	if r := speak(t, g, key, nil); r.Status != 200 {
		t.Fatalf("after the refill: %d", r.Status)
	}
	// A key's own limit overrides the default.
	g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"requests_per_minute": 100})
	for range 5 {
		if r := speak(t, g, key, nil); r.Status != 200 {
			t.Fatalf("with the key's own limit: %d", r.Status)
		}
	}
}

// With redis.url, two gateways on one database count a key's calls against one limit, and the headers and
// Retry-After come from Redis.
func TestSpeechRateLimitSharedThroughRedis(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	redis := testdb.RedisURL(t)
	a := harness.Start(t, harness.WithEnv("REDIS_URL", redis), harness.WithConfig(u.config("openai")))
	b := harness.Start(t, harness.WithEnv("REDIS_URL", redis), harness.WithEnv("DATABASE_URL", a.DatabaseURL),
		harness.WithConfig(u.config("openai")))
	key, hash := a.Key(t, nil)
	if r := a.Do(t, "PATCH", "/keys/"+hash, a.Admin, map[string]any{"requests_per_minute": 4}); r.Status != 200 {
		t.Fatalf("set the key's limit: %d %s", r.Status, r.Body)
	}
	for i := range 4 {
		r := speak(t, []*harness.Gateway{a, b}[i%2], key, nil)
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "4" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(3-i) {
			t.Fatalf("call %d: %d, headers %v", i, r.Status, r.Header)
		}
	}
	for _, g := range []*harness.Gateway{a, b} {
		r := speak(t, g, key, nil)
		harness.AssertError(t, r, 429)
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 15 {
			t.Fatalf("Retry-After %q, want 1..15 s (a call every 15 s)", r.Header.Get("Retry-After"))
		}
	}
	if n := u.openai.Calls(); n != 4 {
		t.Fatalf("%d upstream calls, want 4", n)
	}
}

func TestSpeechCredits(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.configWith("credits:\n  enabled: true", "openai")))
	key, _ := g.Key(t, nil)
	e := harness.AssertError(t, speak(t, g, key, nil), 402)
	if e["metadata"].(map[string]any)["limit_source"] != "credits" || u.openai.Calls() != 0 {
		t.Fatalf("402 without credits: %v, %d upstream calls", e, u.openai.Calls())
	}
	if err := g.App.Credits.AddCredits(context.Background(), domain.Micros(200)); err != nil {
		t.Fatal(err)
	}
	if r := speak(t, g, key, nil); r.Status != 200 {
		t.Fatalf("with credits: %d %s", r.Status, r.Body)
	}
	// The call cost 165 of the 200: GET /credits says so once it is booked; the next call, which would cost 165
	// too, does not fit in the 35 left: credits are reserved, never overspent.
	harness.Eventually(t, 5*time.Second, func() bool {
		d := g.Do(t, "GET", "/credits", g.Admin, nil).JSON(t)["data"].(map[string]any)
		return jsonString(d["total_credits"]) == "0.0002" && jsonString(d["total_usage"]) == "0.000165"
	})
	calls := u.openai.Calls()
	harness.AssertError(t, speak(t, g, key, nil), 402)
	if u.openai.Calls() != calls {
		t.Fatal("a call the credits cannot hold reached the upstream")
	}
	harness.AssertError(t, g.Do(t, "GET", "/credits", key, nil), 403)
}

func TestSpeechKeyLimit(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, map[string]any{"limit": 0.0002, "limit_reset": "daily"})
	if r := speak(t, g, key, nil); r.Status != 200 { // 165 of 200 micro-dollars
		t.Fatalf("first call: %d", r.Status)
	}
	// Another 165 would pass the limit: the limit is reserved, so the call is refused before it is made.
	e := harness.AssertError(t, speak(t, g, key, nil), 402)
	if e["metadata"].(map[string]any)["limit_source"] != "key_limit" {
		t.Fatalf("402: %v", e)
	}
}

func TestSpeechGuardrails(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai", "elevenlabs")))
	key, hash := g.Key(t, nil)
	gr := createGuardrail(t, g, `{"name":"team","ignored_providers":["openai"],"limit_usd":0.002,"reset_interval":"daily",
		"content_filter_builtins":[{"slug":"email","action":"redact"},{"slug":"secrets","action":"flag"}],
		"content_filters":[{"pattern":"(?i)project falcon","action":"block","label":"codename"}]}`)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatal(r.Status)
	}
	// Provider filter: openai is skipped; redaction reaches the upstream; the flag lands on the record.
	// The text sent is 44 characters at $30/M: 1,320 of the 2,000 micro-dollar budget.
	r := speak(t, g, key, map[string]any{"input": "mail ada@example.com key sk-abcdefghijklmnopqrstuvwx"})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if u.openai.Calls() != 0 {
		t.Fatal("an ignored provider was called")
	}
	var sent map[string]any
	_ = json.Unmarshal(u.elevenlabs.Requests()[0].Body, &sent)
	if sent["text"] != "mail [EMAIL] key sk-abcdefghijklmnopqrstuvwx" {
		t.Fatalf("text sent upstream: %v", sent["text"])
	}
	rec := generationOf(t, g, r)
	if flags := rec["guardrail_flags"].([]any); len(flags) != 1 || flags[0] != "secrets" {
		t.Fatalf("flags %v", flags)
	}
	// Block: a 400 naming the filter, and nothing sent.
	e := harness.AssertError(t, speak(t, g, key, map[string]any{"input": "about Project Falcon"}), 400)
	if !strings.Contains(e["message"].(string), "codename") || e["metadata"].(map[string]any)["guardrail_id"] != gr {
		t.Fatalf("block: %v", e)
	}
	// Budget: 20 characters (600) still fit (1,920 of 2,000): no refusal while room remains; the next 600 do not.
	if r := speak(t, g, key, map[string]any{"input": strings.Repeat("y", 20)}); r.Status != 200 {
		t.Fatalf("refused with room left: %d %s", r.Status, r.Body)
	}
	e = harness.AssertError(t, speak(t, g, key, map[string]any{"input": strings.Repeat("x", 20)}), 403)
	if e["metadata"].(map[string]any)["guardrail_id"] != gr || !strings.Contains(e["message"].(string), "team") {
		t.Fatalf("budget refusal: %v", e)
	}
	if n := len(u.elevenlabs.Requests()); n != 2 {
		t.Fatalf("refused calls reached the provider: %d requests", n)
	}
}
