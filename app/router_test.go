package app_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/routing"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// The router in the pipeline: the circuit breaker, the balancing of ranks and accounts, the accounts' rate limits
// and the variants, with speech calls against in-memory providers and an injected clock.

// provider is a speech provider whose answer the test changes between calls; gate, when set, holds a call until
// it is closed, after saying on entered that the call came.
type provider struct {
	mu      sync.Mutex
	err     error
	calls   int
	gate    chan struct{}
	entered chan struct{}
}

func (p *provider) Synthesize(ctx context.Context, _ ports.SynthesisRequest) (ports.Audio, error) {
	p.mu.Lock()
	p.calls++
	err, gate, entered := p.err, p.gate, p.entered
	p.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if err != nil {
		return ports.Audio{}, err
	}
	return ports.Audio{Body: io.NopCloser(strings.NewReader("audio")), UpstreamID: "up", Status: 200}, nil
}

func (p *provider) set(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

func (p *provider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// answered is who answered the last call, and in how many attempts.
func answered(t *testing.T, p *pipeline) (string, int) {
	t.Helper()
	p.records.mu.Lock()
	defer p.records.mu.Unlock()
	rec := p.records.entries[len(p.records.entries)-1].Record
	return rec.ProviderName, len(rec.Attempts)
}

func (p *pipeline) advance(d time.Duration) { *p.clock = p.clock.Add(d) }

// TestBreaker: an endpoint that fails every call is skipped once its breaker opens (five failures in a row), so
// that calls stop paying for it; after the cool-down one call probes it, and the breaker closes when the probe
// answers, or opens again when it fails.
func TestBreaker(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false, voiceModel("a", "b"))
	a, b := &provider{err: upstreamErr(503, domain.KindUpstream, true)}, &provider{}
	providers := ports.Providers{"a": a, "b": b}
	cfg := app.DefaultHealthConfig()
	for i := range cfg.Failures {
		if _, _, err := speak(t, p, providers, caller); err != nil {
			t.Fatal(err)
		}
		if name, attempts := answered(t, p); name != "b" || attempts != 2 {
			t.Fatalf("call %d: answered by %s in %d attempts, want b in 2", i, name, attempts)
		}
	}
	state := func() string { return p.router.Endpoints()[0].Breaker }
	if state() != "open" {
		t.Fatalf("after %d failures the breaker is %s", cfg.Failures, state())
	}
	for range 3 { // skipped: a is not called
		speak(t, p, providers, caller)
		if name, attempts := answered(t, p); name != "b" || attempts != 1 || a.count() != cfg.Failures {
			t.Fatalf("with the breaker open: answered by %s in %d attempts, a called %d times", name, attempts, a.count())
		}
	}

	p.advance(cfg.Cooldown)
	if state() != "half_open" {
		t.Fatalf("after the cool-down the breaker is %s", state())
	}
	speak(t, p, providers, caller) // the probe fails: open again
	if a.count() != cfg.Failures+1 || state() != "open" {
		t.Fatalf("after a failed probe: a called %d times, breaker %s", a.count(), state())
	}
	speak(t, p, providers, caller)
	if a.count() != cfg.Failures+1 {
		t.Fatal("a failed probe did not open the breaker again")
	}

	p.advance(cfg.Cooldown)
	a.set(nil)
	for range 3 { // the probe answers: closed, and a is first again
		speak(t, p, providers, caller)
		if name, attempts := answered(t, p); name != "a" || attempts != 1 {
			t.Fatalf("after a probe that answered: %s in %d attempts", name, attempts)
		}
	}
	if s := p.router.Endpoints()[0]; s.Breaker != "closed" || s.FailuresInARow != 0 || s.Attempts != cfg.Failures+4 ||
		s.ErrorRate != float64(cfg.Failures+1)/float64(cfg.Failures+4) || !s.Figures.LatencyKnown {
		t.Fatalf("health %+v", s)
	}
}

// TestBreakerOneProbe: once the cool-down is over, one call probes the endpoint; the calls that come meanwhile
// skip it as before.
func TestBreakerOneProbe(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false, voiceModel("a", "b"))
	a, b := &provider{err: upstreamErr(500, domain.KindUpstream, true)}, &provider{}
	providers := ports.Providers{"a": a, "b": b}
	for range app.DefaultHealthConfig().Failures {
		speak(t, p, providers, caller)
	}
	p.advance(app.DefaultHealthConfig().Cooldown)
	a.mu.Lock()
	a.err, a.gate, a.entered = nil, make(chan struct{}), make(chan struct{})
	a.mu.Unlock()
	probed := make(chan error)
	go func() { _, _, err := speak(t, p, providers, caller); probed <- err }()
	<-a.entered // the probe is in flight
	if _, _, err := speak(t, p, providers, caller); err != nil || b.count() != app.DefaultHealthConfig().Failures+1 {
		t.Fatalf("a call beside the probe: %v, b called %d times", err, b.count())
	}
	close(a.gate)
	if err := <-probed; err != nil {
		t.Fatal(err)
	}
	if s := p.router.Endpoints()[0]; s.Breaker != "closed" {
		t.Fatalf("after the probe answered: %+v", s)
	}
}

// TestProbeAlone: while a model's only endpoint is probed, its other calls are a 502 at once; a probe that never
// ends (a call that hangs past the cool-down) lets another call probe.
func TestProbeAlone(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false, voiceModel("a"))
	a := &provider{err: upstreamErr(500, domain.KindUpstream, true)}
	providers := ports.Providers{"a": a}
	cfg := app.DefaultHealthConfig()
	for range cfg.Failures {
		speak(t, p, providers, caller)
	}
	p.advance(cfg.Cooldown)
	a.mu.Lock()
	a.err, a.gate, a.entered = nil, make(chan struct{}), make(chan struct{}, 2)
	a.mu.Unlock()
	done := make(chan error, 2)
	go func() { _, _, err := speak(t, p, providers, caller); done <- err }()
	<-a.entered
	_, _, err := speak(t, p, providers, caller)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "endpoints_unhealthy" || a.count() != cfg.Failures+1 {
		t.Fatalf("beside the probe: %v, a called %d times", err, a.count())
	}
	p.advance(cfg.Cooldown) // the probe hangs on: another call may probe
	go func() { _, _, err := speak(t, p, providers, caller); done <- err }()
	<-a.entered
	close(a.gate)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if s := p.router.Endpoints()[0]; s.Breaker != "closed" || a.count() != cfg.Failures+2 {
		t.Fatalf("after both probes answered: %+v, a called %d times", s, a.count())
	}
}

// TestEveryBreakerOpen: a call whose every endpoint is skipped by its breaker is a 502 at once, with when to try
// again, and leaves a record.
func TestEveryBreakerOpen(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false, voiceModel("a"))
	providers := ports.Providers{"a": &provider{err: upstreamErr(0, domain.KindTimeout, true)}}
	for range app.DefaultHealthConfig().Failures {
		speak(t, p, providers, caller)
	}
	p.advance(10 * time.Second)
	_, _, err := speak(t, p, providers, caller)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindUpstream || de.Code != "endpoints_unhealthy" || de.RetryAfter != 20*time.Second {
		t.Fatalf("%#v", err)
	}
	if rec := p.records.entries[len(p.records.entries)-1].Record; rec.Status != 502 || len(rec.Attempts) != 0 {
		t.Fatalf("record %+v", rec)
	}
}

// TestAccountsByWeight: a provider's accounts share its calls by weight, evenly spread; an account its upstream
// rate limits with a Retry-After is skipped until then (the call that met the 429 moves on to the other account),
// and one rate limited without a Retry-After is not.
func TestAccountsByWeight(t *testing.T) {
	t.Parallel()
	p := newRoutedPipeline(t, false, app.ProviderAccounts{"a": {{Client: "a", Weight: 3}, {Client: "a#2", Weight: 1}}},
		voiceModel("a"))
	first, second := &provider{}, &provider{}
	providers := ports.Providers{"a": first, "a#2": second}
	for range 8 {
		if _, _, err := speak(t, p, providers, caller); err != nil {
			t.Fatal(err)
		}
	}
	if first.count() != 6 || second.count() != 2 {
		t.Fatalf("weights 3 and 1: %d and %d calls of 8", first.count(), second.count())
	}

	limited := &ports.UpstreamError{Status: 429, Kind: domain.KindRateLimited, Retryable: true, Reason: "slow down", RetryAfter: 10 * time.Second}
	first.set(limited)
	for i := range 4 {
		if _, _, err := speak(t, p, providers, caller); err != nil {
			t.Fatal(err)
		}
		if name, attempts := answered(t, p); name != "a" || i == 0 && attempts != 2 || i > 0 && attempts != 1 {
			t.Fatalf("call %d after a 429: %s in %d attempts", i, name, attempts)
		}
	}
	if first.count() != 7 || second.count() != 6 {
		t.Fatalf("after a 429 with Retry-After: %d and %d calls, want the first skipped", first.count(), second.count())
	}
	if s := p.router.Endpoints()[0]; s.Breaker != "closed" || s.Accounts[0].RateLimitedUntil != t0.Add(10*time.Second) ||
		!s.Accounts[1].RateLimitedUntil.IsZero() {
		t.Fatalf("health %+v", s)
	}

	p.advance(10 * time.Second)
	first.set(&ports.UpstreamError{Status: 429, Kind: domain.KindRateLimited, Retryable: true, Reason: "slow down"})
	for range 4 {
		speak(t, p, providers, caller)
	}
	if first.count() != 10 {
		t.Fatalf("a 429 without Retry-After skipped the account: %d calls", first.count())
	}
}

// TestEveryAccountRateLimited: a call whose every account is skipped for its Retry-After is a 429 at once, with
// the soonest.
func TestEveryAccountRateLimited(t *testing.T) {
	t.Parallel()
	p := newRoutedPipeline(t, false, app.ProviderAccounts{"a": {{Client: "a", Weight: 1}, {Client: "a#2", Weight: 1}}},
		voiceModel("a"))
	limited := func(d time.Duration) *provider {
		return &provider{err: &ports.UpstreamError{Status: 429, Kind: domain.KindRateLimited, Retryable: true, Reason: "slow", RetryAfter: d}}
	}
	providers := ports.Providers{"a": limited(5 * time.Second), "a#2": limited(3 * time.Second)}
	if _, _, err := speak(t, p, providers, caller); domain.StatusOf(err) != 429 {
		t.Fatalf("both accounts answering 429: %v", err)
	}
	_, _, err := speak(t, p, providers, caller)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindRateLimited || de.RetryAfter != 3*time.Second {
		t.Fatalf("%#v", err)
	}
}

// TestRankByWeight: endpoints of one configured rank share the calls by weight; the next rank is tried after them.
func TestRankByWeight(t *testing.T) {
	t.Parallel()
	m := voiceModel("a", "b", "c")
	m.Endpoints[0].Rank, m.Endpoints[1].Rank, m.Endpoints[2].Rank = 1, 1, 2
	m.Endpoints[1].Weight = 2
	p := newPipeline(t, false, m)
	a, b, c := &provider{}, &provider{}, &provider{}
	providers := ports.Providers{"a": a, "b": b, "c": c}
	var order strings.Builder
	for range 6 {
		speak(t, p, providers, caller)
		name, _ := answered(t, p)
		order.WriteString(name)
	}
	if order.String() != "babbab" || c.count() != 0 {
		t.Fatalf("rank of a (1) and b (2): %q, c called %d times", order.String(), c.count())
	}
	b.set(upstreamErr(500, domain.KindUpstream, true))
	a.set(upstreamErr(500, domain.KindUpstream, true))
	speak(t, p, providers, caller)
	if name, attempts := answered(t, p); name != "c" || attempts != 3 {
		t.Fatalf("the rank failing: %s in %d attempts", name, attempts)
	}
}

// TestFloorVariant: model:floor is the model with its endpoints sorted by price, recorded as the model.
func TestFloorVariant(t *testing.T) {
	t.Parallel()
	m := voiceModel("a", "b")
	m.Endpoints[0].Pricing = price(2_000_000)
	p := newPipeline(t, false, m)
	var out sink
	_, err := app.NewSpeech(p.inference, ports.Providers{"a": &provider{}, "b": &provider{}}).Synthesize(context.Background(), caller,
		speechRequest("acme/voice:floor"), generationCaller, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rec := p.records.only(t).Record; rec.ProviderName != "b" || rec.Model != "acme/voice" {
		t.Fatalf("record %s %s", rec.Model, rec.ProviderName)
	}
}

// TestLocalTokenLimiter: a key's calls are admitted while its windows have a token left; what each used counts
// whole, past the limit too (a debt the window pays back in time), the headers' figures from the window with the
// fewest left.
func TestLocalTokenLimiter(t *testing.T) {
	t.Parallel()
	now := t0
	l := app.NewLocalTokenLimiter(app.Env{Now: func() time.Time { return now }})
	ctx := context.Background()
	limits := account.TokenLimits{PerMinute: 60, PerDay: 1000}
	if d := l.Admit(ctx, "k", limits); !d.Allowed || d.Window != "minute" || d.Limit != 60 || d.Remaining != 60 || !d.Reset.Equal(now) {
		t.Fatalf("a fresh key: %+v", d)
	}
	l.Spend(ctx, "k", limits, 50)
	if d := l.Admit(ctx, "k", limits); !d.Allowed || d.Remaining != 10 || !d.Reset.Equal(now.Add(50*time.Second)) {
		t.Fatalf("after 50 tokens: %+v", d)
	}
	l.Spend(ctx, "k", limits, 30) // 20 past the minute's limit
	d := l.Admit(ctx, "k", limits)
	if d.Allowed || d.Window != "minute" || d.Remaining != 0 || d.RetryAfter != 21*time.Second {
		t.Fatalf("20 tokens past the limit: %+v", d)
	}
	now = now.Add(21 * time.Second)
	if d := l.Admit(ctx, "k", limits); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("once it paid the debt back: %+v", d)
	}
	if d := l.Admit(ctx, "other", limits); !d.Allowed || d.Remaining != 60 {
		t.Fatalf("another key: %+v", d)
	}
	day := account.TokenLimits{PerMinute: 1000, PerDay: 100}
	l.Spend(ctx, "d", day, 95)
	if d := l.Admit(ctx, "d", day); !d.Allowed || d.Window != "day" || d.Remaining != 5 {
		t.Fatalf("the day's window has the fewest left: %+v", d)
	}
	if d := l.Admit(ctx, "k", account.TokenLimits{}); !d.Allowed || d.Limit != 0 {
		t.Fatalf("no limit: %+v", d)
	}
}

// BenchmarkRoute is the routing decision of one call: the plan of a model's endpoints and the attempts it makes,
// for a call that says nothing (the configured order), one through a provider of two accounts, one that sorts and
// filters, and one to a rank of four endpoints balanced by weight.
func BenchmarkRoute(b *testing.B) {
	model := func(id string, rank int, providers ...string) catalog.Model {
		m := catalog.Model{ID: id, Modality: catalog.Chat}
		for _, name := range providers {
			ep := priced(name)
			ep.Rank = rank
			m.Endpoints = append(m.Endpoints, ep)
		}
		return m
	}
	plain, keys, balanced := model("chat", 0, "a", "b", "c", "d"), model("keys", 0, "e", "a"), model("balanced", 1, "a", "b", "c", "d")
	c, err := catalog.New([]catalog.Model{plain, keys, balanced})
	if err != nil {
		b.Fatal(err)
	}
	r := app.NewRouter(c, app.ProviderAccounts{"e": {{Client: "e", Weight: 2}, {Client: "e#2", Weight: 1}}},
		app.DefaultHealthConfig(), app.SystemEnv())
	ceiling := domain.Micros(10_000_000)
	for _, bc := range []struct {
		name  string
		model catalog.Model
		prefs routing.Preferences
	}{
		{"as configured", plain, routing.Preferences{}},
		{"two accounts", keys, routing.Preferences{}},
		{"sorted and filtered", plain, routing.Preferences{Sort: routing.ByLatency, Ignore: []string{"a"},
			MaxPrice: routing.MaxPrice{Prompt: &ceiling}, PreferredMinThroughput: routing.Percentiles{P50: &[]float64{10}[0]}}},
		{"a rank balanced", balanced, routing.Preferences{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plan, err := r.Plan(bc.model.ID, bc.prefs, nil, bc.model.Endpoints)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Candidates(bc.model.ID, plan); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func speechRequest(model string) speech.Request {
	return speech.Request{Model: model, Input: "hello world", Voice: "alloy"}
}

var generationCaller = generation.Caller{RequestID: "req"}

func priced(provider string) catalog.Endpoint {
	p := domain.Micros(1_000_000)
	return catalog.Endpoint{Provider: provider, UpstreamModel: provider + "-m",
		Pricing: catalog.Pricing{PerMillionPromptTokens: &p, PerMillionCompletionTokens: &p}}
}
