package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// Routing end to end: fake upstreams of different prices, speeds and failures behind the real gateway, asserted on
// the provider each call's generation record names.

// providerOf is the provider a call's generation record names, once the call is recorded.
func providerOf(t *testing.T, g *harness.Gateway, r harness.Response) string {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	name, _ := generationOf(t, g, r)["provider_name"].(string)
	return name
}

// TestSortAndVariants: three endpoints of one model, each best at one thing: "cheap" costs least (and is slow),
// "quick" answers first (and costs most), "stream" streams the most tokens a second once it answers (and answers
// last). provider.sort and the :floor and :nitro variants choose as the reference documents them, from the prices
// configured and from what the gateway measured of each endpoint; a call that says nothing keeps the configured
// order.
func TestSortAndVariants(t *testing.T) {
	t.Parallel()
	cheap, quick, stream := fakes.NewOpenAI(t, "sk-c"), fakes.NewOpenAI(t, "sk-q"), fakes.NewOpenAI(t, "sk-s")
	// Time to the first token is the delay and one gap (the role's event comes first); the six tokens take about
	// seven gaps more: cheap 120 ms and 21 tokens/s, quick 15 ms and 57 tokens/s, stream 251 ms and 850 tokens/s.
	cheap.Default = fakes.Step{Delay: 80 * time.Millisecond, Gap: 40 * time.Millisecond}
	quick.Default = fakes.Step{Gap: 15 * time.Millisecond}
	stream.Default = fakes.Step{Delay: 250 * time.Millisecond, Gap: time.Millisecond}
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: quick, kind: openai, base_url: %s, api_key: sk-q}
  - {slug: stream, kind: openai, base_url: %s, api_key: sk-s}
  - {slug: cheap, kind: openai, base_url: %s, api_key: sk-c}
models:
  - id: chat
    modality: chat
    endpoints:
      - {provider: quick, upstream_model: q, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 3}}
      - {provider: stream, upstream_model: s, pricing: {per_million_prompt_tokens: 2, per_million_completion_tokens: 2}}
      - {provider: cheap, upstream_model: c, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}
`, quick.BaseURL(), stream.BaseURL(), cheap.BaseURL())))
	key, _ := g.Key(t, nil)
	call := func(body map[string]any) harness.Response { return g.Do(t, "POST", "/chat/completions", key, body) }

	// Price needs no measurement; the unmeasured keep the configured order under latency and throughput.
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"nothing said: the configured order", hi(nil), "quick"},
		{"sort price", hi(map[string]any{"provider": map[string]any{"sort": "price"}}), "cheap"},
		{":floor", hi(map[string]any{"model": "chat:floor"}), "cheap"},
		{"sort throughput, stream not yet measured: after the measured", hi(map[string]any{"provider": map[string]any{"sort": "throughput"}}), "quick"},
	} {
		if got := providerOf(t, g, call(tc.body)); got != tc.want {
			t.Errorf("%s: %s answered, want %s", tc.name, got, tc.want)
		}
	}
	// Measure each endpoint: three calls each, the median of which the sorts read. A loaded machine only lengthens
	// the fakes' delays and gaps, so the cutoffs below sit where that cannot move an endpoint across them: cheap's
	// first token never comes before 120 ms nor quick's stream faster than 57 tokens/s, while quick's first token
	// and stream's pace keep room for a scheduler late by tens of milliseconds.
	for _, p := range []string{"quick", "stream", "cheap"} {
		for range 3 {
			if got := providerOf(t, g, call(hi(map[string]any{"provider": map[string]any{"only": []string{p}}}))); got != p {
				t.Fatalf("only %s: %s answered", p, got)
			}
		}
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"sort latency", hi(map[string]any{"provider": map[string]any{"sort": "latency"}}), "quick"},
		{"sort throughput", hi(map[string]any{"provider": map[string]any{"sort": map[string]any{"by": "throughput"}}}), "stream"},
		{":nitro", hi(map[string]any{"model": "chat:nitro"}), "stream"},
		{":nitro, streamed", hi(map[string]any{"model": "chat:nitro", "stream": true}), "stream"},
		{"sort price", hi(map[string]any{"provider": map[string]any{"sort": "price"}}), "cheap"},
		{"order first, then the sort", hi(map[string]any{"provider": map[string]any{"sort": "price", "order": []string{"stream"}}}), "stream"},
		{"preferred_max_latency passes over the slow", hi(map[string]any{"provider": map[string]any{"sort": "price",
			"preferred_max_latency": map[string]any{"p50": 0.1}}}), "quick"},
		{"preferred_min_throughput passes over the slow", hi(map[string]any{"provider": map[string]any{
			"preferred_min_throughput": 100}}), "stream"},
		{"nothing said: still the configured order", hi(nil), "quick"},
	} {
		if got := providerOf(t, g, call(tc.body)); got != tc.want {
			t.Errorf("%s: %s answered, want %s", tc.name, got, tc.want)
		}
	}

	// max_price filters the endpoints dearer than it, and refuses when none is within it, naming it.
	if got := providerOf(t, g, call(hi(map[string]any{"provider": map[string]any{"max_price": map[string]any{"prompt": 2, "completion": "2"}}}))); got != "stream" {
		t.Errorf("max_price 2/2: %s answered, want stream (quick costs 3)", got)
	}
	before := quick.Calls() + stream.Calls() + cheap.Calls()
	e := harness.AssertError(t, call(hi(map[string]any{"provider": map[string]any{"max_price": map[string]any{"completion": 0.5}}})), 404)
	if meta, _ := e["metadata"].(map[string]any); meta["field"] != "provider.max_price" || quick.Calls()+stream.Calls()+cheap.Calls() != before {
		t.Errorf("a max_price no endpoint meets: %v, and %d upstream calls", e, quick.Calls()+stream.Calls()+cheap.Calls()-before)
	}
}

// TestBreakerEndToEnd: an endpoint that fails every call (here, by never answering within its timeout) is skipped
// once its breaker opens, so that calls no longer wait its timeout; after the cool-down one call probes it, and
// once a probe answers, it is first again.
func TestBreakerEndToEnd(t *testing.T) {
	t.Parallel()
	down, up := fakes.NewOpenAI(t, "sk-d"), fakes.NewOpenAI(t, "sk-u")
	down.Default = fakes.Step{Hold: make(chan struct{})} // never answers
	clock := harness.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: down, kind: openai, base_url: %s, api_key: sk-d, timeout: 200ms}
  - {slug: up, kind: openai, base_url: %s, api_key: sk-u}
models:
  - {id: chat, modality: chat, endpoints: [{provider: down, upstream_model: d}, {provider: up, upstream_model: u}]}
routing: {breaker_failures: 3, breaker_cooldown: 1m}
`, down.BaseURL(), up.BaseURL())))
	key, _ := g.Key(t, nil)
	attempts := func(r harness.Response) (string, int) {
		rec := generationOf(t, g, r)
		return rec["provider_name"].(string), len(rec["provider_responses"].([]any))
	}
	for i := range 3 { // each waits down's timeout, then up answers
		if name, n := attempts(g.Do(t, "POST", "/chat/completions", key, hi(nil))); name != "up" || n != 2 {
			t.Fatalf("call %d: %s in %d attempts", i, name, n)
		}
	}
	for i := range 3 { // the breaker is open: down is not called, its timeout not waited
		start := time.Now()
		r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
		took := time.Since(start)
		if name, n := attempts(r); name != "up" || n != 1 || down.Calls() != 3 {
			t.Fatalf("call %d with the breaker open: %s in %d attempts, down called %d times", i, name, n, down.Calls())
		}
		t.Logf("MEASURED a call with the breaker open took %v (down's timeout: 200ms)", took)
	}
	assertBreaker(t, g, "down/d", 2)

	clock.Advance(time.Minute)
	down.Script(fakes.Step{}, fakes.Step{}, fakes.Step{}) // it answers again; calls past these three would hang
	for i := range 3 {
		if name, n := attempts(g.Do(t, "POST", "/chat/completions", key, hi(nil))); name != "down" || n != 1 {
			t.Fatalf("call %d after the cool-down: %s in %d attempts, want down, probed and answering", i, name, n)
		}
	}
	assertBreaker(t, g, "down/d", 0)
}

// assertBreaker checks an endpoint's breaker state on /metrics (0 closed, 1 half open, 2 open).
func assertBreaker(t *testing.T, g *harness.Gateway, endpoint string, want float64) {
	t.Helper()
	if v, ok := value(scrape(t, g), "switchboard_endpoint_breaker_state", map[string]string{"endpoint": endpoint}); !ok || v != want {
		t.Fatalf("switchboard_endpoint_breaker_state{endpoint=%q} = %v (present %v), want %v", endpoint, v, ok, want)
	}
}

// TestAccountsEndToEnd: one provider with two API keys: its calls share them by weight (3 to 1), and a 429 with a
// Retry-After on one moves the call, and the calls after it until the Retry-After ends, to the other.
func TestAccountsEndToEnd(t *testing.T) {
	t.Parallel()
	pool := fakes.NewOpenAI(t, "sk-a")
	pool.Keys = []string{"sk-b"}
	clock := harness.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(fmt.Sprintf(`providers:
  - slug: pool
    kind: openai
    base_url: %s
    api_keys: [{key: sk-a, weight: 3}, {key: sk-b}]
models:
  - {id: chat, modality: chat, endpoints: [{provider: pool, upstream_model: m}]}
`, pool.BaseURL())))
	key, _ := g.Key(t, nil)
	keys := func() string { // the keys of the calls so far, in order
		var b strings.Builder
		for _, r := range pool.Requests() {
			b.WriteString(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer sk-"))
		}
		return b.String()
	}
	for range 8 {
		if got := providerOf(t, g, g.Do(t, "POST", "/chat/completions", key, hi(nil))); got != "pool" {
			t.Fatalf("answered by %s", got)
		}
	}
	if got := keys(); got != "aabaaaba" {
		t.Fatalf("the keys of 8 calls: %q, want a 3 to 1 share, spread", got)
	}

	pool.Script(fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "60"}})
	r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
	if rec := generationOf(t, g, r); r.Status != 200 || len(rec["provider_responses"].([]any)) != 2 {
		t.Fatalf("the call that met the 429: %d, record %v", r.Status, rec)
	}
	for range 3 {
		providerOf(t, g, g.Do(t, "POST", "/chat/completions", key, hi(nil)))
	}
	if got := keys(); got != "abbbb" {
		t.Fatalf("after a 429 with Retry-After 60 on key a: %q, want the call moved to b, and b alone after it", got)
	}
	if v, ok := value(scrape(t, g), "switchboard_provider_account_rate_limited", map[string]string{"provider": "pool", "account": "1"}); !ok || v != 1 {
		t.Errorf("account 1 rate limited = %v (present %v), want 1", v, ok)
	}
	clock.Advance(time.Minute)
	pool.Script()
	for range 4 {
		providerOf(t, g, g.Do(t, "POST", "/chat/completions", key, hi(nil)))
	}
	if got := keys(); strings.Count(got, "a") != 3 {
		t.Fatalf("once the Retry-After is over: %q, want key a back at its share", got)
	}
}

// TestRequireParameters: provider.require_parameters keeps the endpoints that declare every parameter the request
// sets (an endpoint that declares none supports all), and refuses with a 404 naming it when none does.
func TestRequireParameters(t *testing.T) {
	t.Parallel()
	bare, other := fakes.NewOpenAI(t, "sk-b"), fakes.NewOpenAI(t, "sk-o")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: bare, kind: openai, base_url: %s, api_key: sk-b}
  - {slug: other, kind: openai, base_url: %s, api_key: sk-o}
models:
  - id: chat
    modality: chat
    endpoints:
      - {provider: bare, upstream_model: b, supported_parameters: [max_tokens]}
      - {provider: other, upstream_model: o, supported_parameters: [max_tokens, temperature, tools, tool_choice]}
`, bare.BaseURL(), other.BaseURL())))
	key, _ := g.Key(t, nil)
	withTemperature := hi(map[string]any{"temperature": 0.5, "max_completion_tokens": 5})
	if got := providerOf(t, g, g.Do(t, "POST", "/chat/completions", key, withTemperature)); got != "bare" {
		t.Errorf("without require_parameters: %s answered, want bare", got)
	}
	withTemperature["provider"] = map[string]any{"require_parameters": true}
	if got := providerOf(t, g, g.Do(t, "POST", "/chat/completions", key, withTemperature)); got != "other" {
		t.Errorf("require_parameters with temperature: %s answered, want other", got)
	}
	e := harness.AssertError(t, g.Do(t, "POST", "/chat/completions", key, hi(map[string]any{"seed": 1, "top_k": 3,
		"provider": map[string]any{"require_parameters": true}})), 404)
	if msg, _ := e["message"].(string); !strings.Contains(msg, "provider.require_parameters") || !strings.Contains(msg, "seed, top_k") {
		t.Errorf("no endpoint supports seed and top_k: %v", e)
	}
}

// TestTokenLimit: a key's tokens per minute, counted from the upstream's usage: calls are admitted while it has
// tokens left, with X-RateLimit-*-Tokens headers, then refused with a 429 and Retry-After until the window has room
// again; null puts the key back on the default.
func TestTokenLimit(t *testing.T) {
	t.Parallel()
	clock := harness.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	u := fakes.NewOpenAI(t, "sk-1")
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: first, kind: openai, base_url: %s, api_key: sk-1}
models:
  - {id: chat, modality: chat, endpoints: [{provider: first, upstream_model: up-1}]}
  - {id: tts, modality: tts, endpoints: [{provider: first, upstream_model: tts-1}]}
limits: {tokens_per_day: 1000000}
`, u.BaseURL())))
	key, hash := g.Key(t, nil)
	// A call of the fake's uses 8 tokens (2 prompt, 6 completion): 20 a minute is two calls and a little.
	if r := g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"tokens_per_minute": 20}); r.Status != 200 ||
		jsonString(r.JSON(t)["data"].(map[string]any)["tokens_per_minute"]) != "20" ||
		r.JSON(t)["data"].(map[string]any)["tokens_per_day"] != nil {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
	for i, remaining := range []string{"20", "12", "4"} {
		r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
		if r.Status != 200 || r.Header.Get("X-RateLimit-Limit-Tokens") != "20" || r.Header.Get("X-RateLimit-Remaining-Tokens") != remaining {
			t.Fatalf("call %d: %d, limit %q, remaining %q", i, r.Status, r.Header.Get("X-RateLimit-Limit-Tokens"),
				r.Header.Get("X-RateLimit-Remaining-Tokens"))
		}
	}
	// 24 tokens used of 20: 4 over, and one more to start a call, at 3 s a token.
	r := g.Do(t, "POST", "/chat/completions", key, hi(nil))
	e := harness.AssertError(t, r, 429)
	if meta, _ := e["metadata"].(map[string]any); r.Header.Get("Retry-After") != "15" || meta["limit"] != "tokens_per_minute" ||
		r.Header.Get("X-RateLimit-Remaining-Tokens") != "0" {
		t.Fatalf("past the limit: Retry-After %q, %v", r.Header.Get("Retry-After"), e)
	}
	if r := g.Do(t, "POST", "/audio/speech", key, map[string]any{"model": "tts", "input": "hi", "voice": "alloy"}); r.Status != 200 {
		t.Fatalf("speech uses no tokens: %d %s", r.Status, r.Body)
	}
	clock.Advance(15 * time.Second)
	if r := g.Do(t, "POST", "/chat/completions", key, hi(nil)); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining-Tokens") != "1" {
		t.Fatalf("after the Retry-After: %d, remaining %q", r.Status, r.Header.Get("X-RateLimit-Remaining-Tokens"))
	}
	// null: the default again, a day's million.
	if r := g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"tokens_per_minute":null}`); r.Status != 200 ||
		r.JSON(t)["data"].(map[string]any)["tokens_per_minute"] != nil {
		t.Fatalf("PATCH null: %d %s", r.Status, r.Body)
	}
	r = g.Do(t, "POST", "/chat/completions", key, hi(nil))
	if got, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining-Tokens")); r.Status != 200 || r.Header.Get("X-RateLimit-Limit-Tokens") != "1000000" ||
		got != 1000000-8 { // the day's window regained the 24 tokens of the first three calls in the 15 s
		t.Fatalf("on the default: %d, limit %q, remaining %q", r.Status, r.Header.Get("X-RateLimit-Limit-Tokens"),
			r.Header.Get("X-RateLimit-Remaining-Tokens"))
	}
	for _, bad := range []string{`{"tokens_per_minute":-1}`, `{"tokens_per_day":1000000001}`, `{"tokens_per_day":"x"}`} {
		harness.AssertError(t, g.Do(t, "PATCH", "/keys/"+hash, g.Admin, bad), 400)
	}
}
