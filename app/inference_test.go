package app_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/memstore"
)

// The inference pipeline against in-memory ports: routing, failover, billing and the end of video jobs, with
// no database and no HTTP.

var t0 = time.Date(2026, 3, 18, 15, 4, 5, 0, time.UTC)

// recorded keeps the generation entries the pipeline hands over.
type recorded struct {
	mu      sync.Mutex
	entries []generation.Entry
}

func (r *recorded) Accepting() error { return nil }

func (r *recorded) Record(_ context.Context, e generation.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

func (r *recorded) only(t *testing.T) generation.Entry {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) != 1 {
		t.Fatalf("%d generation records, want 1", len(r.entries))
	}
	return r.entries[0]
}

// guard admits every call, reserving one hold; redact, when set, rewrites each text as a guardrail's redaction
// does. settled keeps the holds released by Settle.
type guard struct {
	redact  func(string) string
	mu      sync.Mutex
	settled []guardrail.Hold
}

func (g *guard) Admit(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, error) {
	out, _ := g.Screen(ctx, by, a)
	out.Holds = []guardrail.Hold{{ID: "hold-" + a.Model, GuardrailID: "g", Window: t0, Amount: a.Estimate(a.Endpoints[0], out.Texts)}}
	return out, nil
}

func (g *guard) Screen(_ context.Context, _ account.Principal, a ports.Admission) (ports.Admitted, error) {
	texts := a.Texts
	if g.redact != nil {
		texts = make([]string, len(a.Texts))
		for i, t := range a.Texts {
			texts[i] = g.redact(t)
		}
	}
	return ports.Admitted{Endpoints: a.Endpoints, Texts: texts}, nil
}

func (g *guard) Settle(_ context.Context, holds []guardrail.Hold, _ domain.Micros) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settled = append(g.settled, holds...)
}

// settles reports whether the entry carries the call's hold, which writing it settles at the entry's cost.
func settles(e generation.Entry, holdID string) bool {
	return len(e.Holds) == 1 && e.Holds[0].ID == holdID
}

// voice is a speech provider that answers with audio, or fails as told.
type voice struct {
	audio string
	err   error
	calls int
}

func (v *voice) Synthesize(context.Context, ports.SynthesisRequest) (ports.Audio, error) {
	v.calls++
	if v.err != nil {
		return ports.Audio{}, v.err
	}
	return ports.Audio{Body: io.NopCloser(strings.NewReader(v.audio)), UpstreamID: "up-1", Status: 200}, nil
}

type sink struct{ strings.Builder }

func (s *sink) Start(string, string) {}
func (s *sink) Write(p []byte) error { _, err := s.Builder.Write(p); return err }
func (s *sink) Flush() error         { return nil }

// pipeline is an Inference over in-memory ports.
type pipeline struct {
	inference *app.Inference
	billing   *app.Billing
	usage     *memstore.Usage
	credits   *memstore.Credits
	guard     *guard
	records   *recorded
	env       app.Env
	clock     *time.Time
	router    *app.Router
	tokens    *app.LocalTokenLimiter
}

// noBudgets is a deployment whose workspaces have no budget (test/api tests those on the real stores).
type noBudgets struct{}

func (noBudgets) ActiveBudgets(context.Context, string) ([]account.Budget, error) { return nil, nil }

func newPipeline(t *testing.T, creditsOn bool, models ...catalog.Model) *pipeline {
	t.Helper()
	return newRoutedPipeline(t, creditsOn, nil, models...)
}

// newRoutedPipeline is a pipeline whose router balances the providers' accounts.
func newRoutedPipeline(t *testing.T, creditsOn bool, accounts app.ProviderAccounts, models ...catalog.Model) *pipeline {
	t.Helper()
	c, err := catalog.New(models)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	n := 0
	p := &pipeline{usage: &memstore.Usage{}, credits: &memstore.Credits{}, guard: &guard{},
		records: &recorded{}, clock: &now}
	p.env = app.Env{Now: func() time.Time { return *p.clock }, NewID: func() string { n++; return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }} // UUID-shaped
	p.billing = app.NewBilling(p.usage, noBudgets{}, nil, p.credits, p.guard, app.CreditsEnabled(creditsOn), p.env)
	p.router = app.NewRouter(c, accounts, app.DefaultHealthConfig(), p.env)
	p.tokens = app.NewLocalTokenLimiter(p.env)
	p.inference = app.NewInference(c, p.billing, p.records, ports.NoMetrics{}, p.env, p.router,
		app.NewTokenMeter(p.tokens, app.DefaultTokenLimits{}))
	return p
}

// chat is the chat service over the pipeline, with the default limits.
func (p *pipeline) chat(providers ports.Providers) *app.Chat {
	return app.NewChat(p.inference, providers, nil, p.env, 10<<20, app.ChatLimits{}, slog.New(slog.DiscardHandler), ports.NoMetrics{})
}

func price(perMillionChars domain.Micros) catalog.Pricing {
	return catalog.Pricing{PerMillionChars: &perMillionChars}
}

func voiceModel(providers ...string) catalog.Model {
	m := catalog.Model{ID: "acme/voice", Modality: catalog.TTS}
	for _, p := range providers {
		m.Endpoints = append(m.Endpoints, catalog.Endpoint{Provider: p, UpstreamModel: p + "-tts", Pricing: price(1_000_000)})
	}
	return m
}

var caller = account.Principal{KeyHash: "key", WorkspaceID: "ws"}

func speak(t *testing.T, p *pipeline, providers ports.Providers, by account.Principal) (string, string, error) {
	t.Helper()
	var out sink
	id, err := app.NewSpeech(p.inference, providers).Synthesize(context.Background(), by,
		speech.Request{Model: "acme/voice", Input: "hello world", Voice: "alloy"}, generation.Caller{RequestID: "req"}, &out)
	return id, out.String(), err
}

func upstreamErr(status int, kind domain.Kind, retryable bool) error {
	return &ports.UpstreamError{Status: status, Kind: kind, Retryable: retryable, Reason: "said " + strconv.Itoa(status)}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		first      error // the first endpoint's answer; the second always has audio
		status     int   // what the caller gets (200: the audio)
		secondCall bool
	}{
		{"first answers", nil, 200, false},
		{"a 5xx fails over", upstreamErr(503, domain.KindUpstream, true), 200, true},
		{"a rate limit fails over", upstreamErr(429, domain.KindRateLimited, true), 200, true},
		{"a timeout fails over", upstreamErr(0, domain.KindTimeout, true), 200, true},
		{"an unclassified failure fails over", errors.New("connection reset"), 200, true},
		{"the caller's bad input stops", upstreamErr(400, domain.KindInvalid, false), 400, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, voiceModel("a", "b"))
			a, b := &voice{audio: "from-a", err: tt.first}, &voice{audio: "from-b"}
			id, audio, err := speak(t, p, ports.Providers{"a": a, "b": b}, caller)
			if got := domain.StatusOf(err); err != nil && got != tt.status || err == nil && tt.status != 200 {
				t.Fatalf("err = %v (status %d), want status %d", err, got, tt.status)
			}
			if (b.calls == 1) != tt.secondCall {
				t.Fatalf("second endpoint called %d times", b.calls)
			}
			rec := p.records.only(t).Record
			if rec.ID != id || rec.Status != tt.status {
				t.Fatalf("record %s status %d, want %s %d", rec.ID, rec.Status, id, tt.status)
			}
			want := "a"
			if tt.secondCall {
				want = "b"
			}
			if tt.status == 200 && (audio != "from-"+want || rec.ProviderName != want) {
				t.Fatalf("audio %q from %s, want %s's", audio, rec.ProviderName, want)
			}
			if n := len(rec.Attempts); tt.secondCall && n != 2 || !tt.secondCall && n != 1 {
				t.Fatalf("%d attempts recorded: %+v", n, rec.Attempts)
			}
		})
	}
}

// TestEveryEndpointFails: what the caller hears once every endpoint failed, from the failures' kinds.
func TestEveryEndpointFails(t *testing.T) {
	t.Parallel()
	limited := &ports.UpstreamError{Status: 429, Kind: domain.KindRateLimited, Retryable: true, Reason: "slow down", RetryAfter: 3 * time.Second}
	sooner := &ports.UpstreamError{Status: 429, Kind: domain.KindRateLimited, Retryable: true, Reason: "slow down", RetryAfter: time.Second}
	tests := []struct {
		name   string
		a, b   error
		status int
		retry  time.Duration
	}{
		{"all rate limited: 429 with the soonest retry", limited, sooner, 429, time.Second},
		{"last timed out: 524", upstreamErr(503, domain.KindUpstream, true), upstreamErr(0, domain.KindTimeout, true), 524, 0},
		{"last overloaded: 529", upstreamErr(429, domain.KindRateLimited, true), upstreamErr(529, domain.KindOverloaded, true), 529, 0},
		{"otherwise 502", upstreamErr(500, domain.KindUpstream, true), upstreamErr(429, domain.KindRateLimited, true), 502, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, voiceModel("a", "b"))
			_, _, err := speak(t, p, ports.Providers{"a": &voice{err: tt.a}, "b": &voice{err: tt.b}}, caller)
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind.Status() != tt.status || de.RetryAfter != tt.retry {
				t.Fatalf("err = %#v, want status %d retry %v", err, tt.status, tt.retry)
			}
			e := p.records.only(t)
			if e.Record.Status != tt.status || len(e.Record.Attempts) != 2 || e.Content.Failure == nil ||
				len(e.Content.Failure.Previous) != 1 {
				t.Fatalf("record %+v, failure %+v", e.Record, e.Content.Failure)
			}
			if !settles(e, "hold-acme/voice") || e.Record.TotalCost != 0 {
				t.Fatalf("a failed call's entry: holds %+v, cost %v; want its hold settled at 0", e.Holds, e.Record.TotalCost)
			}
		})
	}
}

// panicking is a speech provider with a bug: asked for audio, it panics, or its audio does when read.
type panicking struct{ whileReading bool }

func (p panicking) Synthesize(context.Context, ports.SynthesisRequest) (ports.Audio, error) {
	if !p.whileReading {
		panic("provider bug")
	}
	return ports.Audio{Body: io.NopCloser(panicReader{}), UpstreamID: "up-1", Status: 200}, nil
}

type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic("reader bug") }

// TestPanicLeavesARecord: a panic while routing or delivering goes on to the HTTP layer (whose recovery answers
// it), but the call is recorded first, as an internal error that costs nothing, with its hold settled.
func TestPanicLeavesARecord(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		p    panicking
		want string
	}{
		{"while routing", panicking{}, "provider bug"},
		{"while delivering", panicking{whileReading: true}, "reader bug"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, voiceModel("a"))
			func() {
				defer func() {
					if v := recover(); v != tt.want {
						t.Fatalf("recovered %v, want the provider's panic %q", v, tt.want)
					}
				}()
				_, _, _ = speak(t, p, ports.Providers{"a": tt.p}, caller)
			}()
			e := p.records.only(t)
			if e.Record.Status != 500 || e.Record.TotalCost != 0 || !settles(e, "hold-acme/voice") {
				t.Fatalf("record status %d cost %v holds %+v; want 500, 0 and its hold settled", e.Record.Status,
					e.Record.TotalCost, e.Holds)
			}
		})
	}
}

// TestUnconfiguredProvider: an endpoint whose provider is not configured for the modality is skipped.
func TestUnconfiguredProvider(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false, voiceModel("missing", "b"))
	_, audio, err := speak(t, p, ports.Providers{"b": &voice{audio: "ok"}}, caller)
	if err != nil || audio != "ok" {
		t.Fatalf("audio %q, err %v", audio, err)
	}
}

// TestBilling: a delivered call's entry carries its cost and its hold (writing it books the key's usage and the
// credits and settles the hold at that cost); calls whose estimate the key's limit or the credits cannot hold
// are refused with 402 before any upstream call, and leave a record.
func TestBilling(t *testing.T) {
	t.Parallel()
	const cost = domain.Micros(11) // "hello world" at a micro-dollar a character

	t.Run("a delivered call is booked", func(t *testing.T) {
		t.Parallel()
		p := newPipeline(t, true, voiceModel("a"))
		if err := p.credits.AddCredits(context.Background(), 1_000_000); err != nil {
			t.Fatal(err)
		}
		if _, _, err := speak(t, p, ports.Providers{"a": &voice{audio: "x"}}, caller); err != nil {
			t.Fatal(err)
		}
		if e := p.records.only(t); e.Record.TotalCost != cost || !settles(e, "hold-acme/voice") {
			t.Fatalf("entry cost %v, holds %+v; want %v and the call's hold", e.Record.TotalCost, e.Holds, cost)
		}
	})

	limit := domain.Micros(5)
	limited := account.Principal{KeyHash: "spent", WorkspaceID: "ws", Limit: &limit, LimitReset: domain.IntervalDaily}
	for _, tt := range []struct {
		name      string
		creditsOn bool
		by        account.Principal
		reason    string
	}{
		{"no credits left", true, caller, "insufficient_credits"},
		{"the key's limit cannot hold the estimate", false, limited, "key_limit_reached"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, tt.creditsOn, voiceModel("a"))
			if err := p.usage.AddUsage(context.Background(), "spent", t0, limit); err != nil {
				t.Fatal(err)
			}
			v := &voice{audio: "x"}
			_, _, err := speak(t, p, ports.Providers{"a": v}, tt.by)
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindPaymentRequired || de.Code != tt.reason {
				t.Fatalf("err = %v, want 402 %s", err, tt.reason)
			}
			if v.calls != 0 {
				t.Fatal("the provider was called")
			}
			if rec := p.records.only(t).Record; rec.Status != 402 || len(rec.Attempts) != 0 {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}

// TestReservationsHoldWhatGoesUpstream: the key's limit and the credits reserve the call's estimate on the texts
// the guardrails send upstream, not on the caller's: a redaction that lengthens the text ("hello world", 11
// characters at a micro-dollar each, sent as 33) is reserved, and billed, at its length. A call they cannot hold
// is refused before the provider is called and releases the guardrails' holds.
func TestReservationsHoldWhatGoesUpstream(t *testing.T) {
	t.Parallel()
	const sent = domain.Micros(33)
	thrice := func(s string) string { return strings.Repeat(s, 3) }
	for _, tt := range []struct {
		name      string
		limit     *domain.Micros // the key's limit
		credits   *domain.Micros // the organization's credits, when enabled
		reason    string         // the refusal, when refused
		wantHeld  domain.Micros  // what the key's limit or the credits hold while the call runs
		wantSpent domain.Micros
	}{
		{name: "the key's limit holds the caller's text but not the redacted one", limit: new(domain.Micros(20)), reason: "key_limit_reached"},
		{name: "the credits hold the caller's text but not the redacted one", credits: new(domain.Micros(20)), reason: "insufficient_credits"},
		{name: "the key's limit holds the redacted text", limit: new(domain.Micros(40)), wantHeld: sent, wantSpent: sent},
		{name: "the credits hold the redacted text", credits: new(domain.Micros(40)), wantHeld: sent, wantSpent: sent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, tt.credits != nil, voiceModel("a"))
			p.guard.redact = thrice
			by := caller
			if tt.limit != nil {
				by.Limit, by.LimitReset = tt.limit, domain.IntervalDaily
			}
			if tt.credits != nil {
				if err := p.credits.AddCredits(context.Background(), *tt.credits); err != nil {
					t.Fatal(err)
				}
			}
			v := &voice{audio: "x"}
			_, _, err := speak(t, p, ports.Providers{"a": v}, by)
			e := p.records.only(t)
			if tt.reason != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != tt.reason {
					t.Fatalf("err = %v, want 402 %s", err, tt.reason)
				}
				if v.calls != 0 || e.Record.TotalCost != 0 {
					t.Fatalf("refused, yet the provider was called %d times and the call cost %v", v.calls, e.Record.TotalCost)
				}
				if len(p.guard.settled) != 1 || p.guard.settled[0].ID != "hold-acme/voice" || len(e.Holds) != 0 {
					t.Fatalf("guardrail holds released %+v, in the entry %+v: want the call's hold released, none left", p.guard.settled, e.Holds)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var left ports.Reservation
			if tt.limit != nil {
				left, _ = p.usage.ReserveUsage(context.Background(), "probe", by.KeyHash, t0, *tt.limit, *tt.limit, t0, t0.Add(time.Hour))
			} else {
				left, _ = p.credits.ReserveCredits(context.Background(), "probe", *tt.credits, t0, t0.Add(time.Hour))
			}
			if held := *cmp.Or(tt.limit, tt.credits) - left.Left; left.Held || held != tt.wantHeld {
				t.Fatalf("the call holds %v, want %v", held, tt.wantHeld)
			}
			if e.Record.TotalCost != tt.wantSpent {
				t.Fatalf("billed %v, want %v", e.Record.TotalCost, tt.wantSpent)
			}
		})
	}
}

// studio is a video provider whose jobs end as told.
// videoModel is a video model of one endpoint, on the studio "s", at 100 micro-dollars a second.
var videoModel = catalog.Model{ID: "acme/video", Modality: catalog.Video,
	Endpoints: []catalog.Endpoint{{Provider: "s", UpstreamModel: "v1", Pricing: catalog.Pricing{PerSecond: new(domain.Micros(100))}}}}

// videos is the video service over the pipeline (whose catalog holds videoModel), its jobs in store, polled every
// 10 s.
func (p *pipeline) videos(s *studio, store ports.VideoStore) *app.Videos {
	c, _ := catalog.New([]catalog.Model{videoModel})
	return app.NewVideos(p.inference, c, ports.Providers{"s": s}, store, p.env, quiet(),
		app.VideoConfig{PollInterval: 10 * time.Second, WorkerEvery: time.Second})
}

type studio struct {
	mu      sync.Mutex
	state   ports.VideoState
	polls   int
	content string
	// polled, when set, runs at each poll (a caller who leaves meanwhile).
	polled func()
}

func (s *studio) Submit(context.Context, ports.VideoSubmission) (string, error) { return "job-1", nil }

func (s *studio) Poll(context.Context, string) (ports.VideoState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls++
	if s.polled != nil {
		s.polled()
	}
	return s.state, nil
}

func (s *studio) Download(context.Context, string, video.Output, string) (ports.VideoContent, error) {
	return ports.VideoContent{Body: io.NopCloser(strings.NewReader(s.content)), Status: 200, ContentType: "video/mp4",
		ContentLength: int64(len(s.content))}, nil
}

func (s *studio) finish(state ports.VideoState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = state
}

type videoSink struct{ strings.Builder }

func (s *videoSink) Start(ports.VideoContent) {}
func (s *videoSink) Write(p []byte) error     { _, err := s.Builder.Write(p); return err }
func (s *videoSink) Flush() error             { return nil }

// TestJobRefresh: a job ends whoever sees it end first — a poll (Get), the worker (PollDue) or a download —
// and each way finishes its generation once, through the same path: the record and the settlement.
func TestJobRefresh(t *testing.T) {
	t.Parallel()
	done := ports.VideoState{Status: video.Completed, Seconds: 4, Outputs: []video.Output{{ContentType: "video/mp4"}}}
	for _, tt := range []struct {
		name string
		see  func(t *testing.T, v *app.Videos, id string)
	}{
		{"a poll", func(t *testing.T, v *app.Videos, id string) {
			if j, err := v.Get(context.Background(), caller, id); err != nil || j.Status != video.Completed {
				t.Fatalf("Get = %s, %v", j.Status, err)
			}
		}},
		{"the worker", func(t *testing.T, v *app.Videos, _ string) { v.PollDue(context.Background()) }},
		{"a download", func(t *testing.T, v *app.Videos, id string) {
			var out videoSink
			if err := v.Content(context.Background(), caller, id, 0, "", &out); err != nil || out.String() != "mp4" {
				t.Fatalf("Content = %q, %v", out.String(), err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, videoModel)
			s := &studio{state: ports.VideoState{Status: video.InProgress}, content: "mp4"}
			v := p.videos(s, &memstore.Videos{})
			job, err := v.Create(context.Background(), caller, video.Request{Model: "acme/video", Prompt: "a cat"}, generation.Caller{})
			if err != nil || job.Status != video.Pending {
				t.Fatalf("Create = %+v, %v", job, err)
			}
			if len(p.records.entries) != 0 {
				t.Fatal("a pending job has a record")
			}
			// Still running: a poll changes nothing, and the next one waits for the interval.
			if j, err := v.Get(context.Background(), caller, job.ID); err != nil || j.Status != video.InProgress || s.polls != 1 {
				t.Fatalf("Get = %s, %v after %d polls", j.Status, err, s.polls)
			}
			if _, err := v.Get(context.Background(), caller, job.ID); err != nil || s.polls != 1 {
				t.Fatalf("polled again before the interval: %d polls", s.polls)
			}
			s.finish(done)
			*p.clock = p.clock.Add(10 * time.Second)
			tt.see(t, v, job.ID)
			tt.see(t, v, job.ID) // seen twice, finished once
			rec := p.records.only(t).Record
			if rec.ID != job.GenerationID || rec.Status != 200 || rec.TotalCost != 400 || rec.Counts.NumMediaCompletion != 1 {
				t.Fatalf("record %+v", rec)
			}
			if e := p.records.only(t); !settles(e, "hold-acme/video") || e.Record.TotalCost != 400 {
				t.Fatalf("entry holds %+v, cost %v; want the job's hold settled at 400", e.Holds, e.Record.TotalCost)
			}
			if s.polls != 2 {
				t.Fatalf("%d polls, want 2", s.polls)
			}
		})
	}
}

// stopping is a job store whose gateway stops as it stores a job's end: after the end is committed (kill -9
// before anything after it runs), or before.
type stopping struct {
	*memstore.Videos
	committed bool // the end is stored before the stop
	stopped   bool
}

var errStopped = errors.New("the gateway stopped")

func (s *stopping) UpdateJob(ctx context.Context, id string, change func(*video.Job) error) (video.Job, error) {
	if s.stopped {
		return s.Videos.UpdateJob(ctx, id, change)
	}
	j, err := s.Job(ctx, id)
	if err != nil {
		return j, err
	}
	if change(&j); !j.Status.Final() {
		return s.Videos.UpdateJob(ctx, id, change)
	}
	s.stopped = true
	if s.committed {
		if _, err := s.Videos.UpdateJob(ctx, id, change); err != nil {
			return j, err
		}
	}
	return video.Job{}, errStopped
}

// TestJobEndSurvivesAStop: a gateway stopped while it stores a job's end loses neither the job's record nor its
// charge. Stopped once the end is stored, the record was made durable before it; stopped before, the job runs on,
// and the next poll finishes it again, with a record of the same id (which the store writes once, with its charge:
// TestInsertGenerationsBooksChargesOnce in test/integration).
func TestJobEndSurvivesAStop(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		committed bool
		records   int // entries handed to the recorder in all, each of the job's generation
	}{
		{"after the end is stored", true, 1},
		{"before the end is stored", false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, videoModel)
			s := &studio{state: ports.VideoState{Status: video.Completed, Seconds: 4, Outputs: []video.Output{{ContentType: "video/mp4"}}}}
			store := &stopping{Videos: &memstore.Videos{}, committed: tt.committed}
			v := p.videos(s, store)
			job, err := v.Create(context.Background(), caller, video.Request{Model: "acme/video", Prompt: "a cat"}, generation.Caller{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Get(context.Background(), caller, job.ID); !errors.Is(err, errStopped) {
				t.Fatalf("Get = %v, want the stop", err)
			}
			if len(p.records.entries) != 1 {
				t.Fatalf("%d records when the gateway stopped, want the job's", len(p.records.entries))
			}
			*p.clock = p.clock.Add(time.Minute) // the next start's poll, past the claim of the one the stop cut
			if j, err := v.Get(context.Background(), caller, job.ID); err != nil || j.Status != video.Completed {
				t.Fatalf("Get = %s, %v", j.Status, err)
			}
			if len(p.records.entries) != tt.records {
				t.Fatalf("%d records, want %d", len(p.records.entries), tt.records)
			}
			for _, e := range p.records.entries {
				if e.Record.ID != job.GenerationID || e.Record.TotalCost != 400 || !settles(e, "hold-acme/video") {
					t.Fatalf("entry %+v, want the job's generation at 400 settling its hold", e.Record)
				}
			}
		})
	}
}

// TestJobEndOutlivesItsCaller: a job seen ending by a caller who leaves during the poll (a download cut, a GET
// abandoned) ends as the provider said, failed with its reason or completed and billed: the caller's leaving is no
// part of the job's record, and the end is stored, so that the next poll does not finish it again.
func TestJobEndOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		state  ports.VideoState
		status int
		cost   domain.Micros
	}{
		{"failed", ports.VideoState{Status: video.Failed, Error: "the prompt was refused"}, 502, 0},
		{"completed", ports.VideoState{Status: video.Completed, Seconds: 4, Outputs: []video.Output{{ContentType: "video/mp4"}}}, 200, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, videoModel)
			s := &studio{state: tt.state}
			store := &memstore.Videos{}
			v := p.videos(s, store)
			job, err := v.Create(context.Background(), caller, video.Request{Model: "acme/video", Prompt: "a cat"}, generation.Caller{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, leave := context.WithCancel(context.Background())
			s.polled = leave
			_, _ = v.Get(ctx, caller, job.ID)
			e := p.records.only(t)
			if e.Record.Status != tt.status || e.Record.Cancelled || e.Record.TotalCost != tt.cost {
				t.Fatalf("record status %d, cancelled %v, cost %v; want %d, not cancelled, %v",
					e.Record.Status, e.Record.Cancelled, e.Record.TotalCost, tt.status, tt.cost)
			}
			if j, err := store.Job(context.Background(), job.ID); err != nil || j.Status != tt.state.Status {
				t.Fatalf("stored job %s, %v; want %s", j.Status, err, tt.state.Status)
			}
		})
	}
}

// breaking is a speech provider whose audio begins, then ends with err: at once, or once the call's context ends
// (a local engine killed with its caller's request fails with an error of its own, not the context's).
type breaking struct {
	err          error
	afterContext bool
}

func (b breaking) Synthesize(ctx context.Context, _ ports.SynthesisRequest) (ports.Audio, error) {
	return ports.Audio{Body: io.NopCloser(&breakingReader{ctx: ctx, b: b}), UpstreamID: "up-1", Status: 200}, nil
}

type breakingReader struct {
	ctx  context.Context
	b    breaking
	read bool
}

func (r *breakingReader) Read(p []byte) (int, error) {
	if !r.read {
		r.read = true
		return copy(p, "audio"), nil
	}
	if r.b.afterContext {
		<-r.ctx.Done()
	}
	return 0, r.b.err
}

// leavingSink is a caller who hangs up once the first bytes reach it.
type leavingSink struct {
	sink
	leave context.CancelFunc
}

func (s *leavingSink) Write(p []byte) error { s.leave(); return s.sink.Write(p) }

// TestDeliveryEnds: how a call whose answer began ends is told by the caller's context, not by the error the
// upstream's side gave. A caller who left is cancelled and billed for what was delivered, whatever the error (an
// engine killed with the request); a failure while the caller is still there is the provider's — a timeout a 524,
// anything else (a context.Canceled of the upstream call's own among them) a 502 — and is not billed.
func TestDeliveryEnds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		provider  breaking
		leaves    bool
		status    int
		cancelled bool
		cost      domain.Micros
	}{
		{"the caller leaves, the engine fails with its own error", breaking{err: errors.New("espeak-ng failed: killed"), afterContext: true}, true, 200, true, 11},
		{"the caller leaves, the read fails with the context's error", breaking{err: context.Canceled, afterContext: true}, true, 200, true, 11},
		{"the provider times out", breaking{err: upstreamErr(0, domain.KindTimeout, true)}, false, 524, false, 0},
		{"the provider breaks off", breaking{err: upstreamErr(0, domain.KindUpstream, true)}, false, 502, false, 0},
		{"the upstream call's own context ends, the caller's does not", breaking{err: context.Canceled}, false, 502, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPipeline(t, false, voiceModel("a"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &leavingSink{leave: func() {}}
			if tt.leaves {
				out.leave = cancel
			}
			_, err := app.NewSpeech(p.inference, ports.Providers{"a": tt.provider}).Synthesize(ctx, caller,
				speech.Request{Model: "acme/voice", Input: "hello world", Voice: "alloy"}, generation.Caller{RequestID: "req"}, out)
			if err == nil {
				t.Fatal("no error")
			}
			rec := p.records.only(t).Record
			if rec.Status != tt.status || rec.Cancelled != tt.cancelled || rec.TotalCost != tt.cost {
				t.Fatalf("record: status %d, cancelled %v, cost %d; want %d, %v, %d", rec.Status, rec.Cancelled, rec.TotalCost,
					tt.status, tt.cancelled, tt.cost)
			}
			if tt.leaves && !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled for a caller who left", err)
			}
		})
	}
}
