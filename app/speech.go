package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// Speech routes a text-to-speech call to the model's endpoints in order, streams the first one that answers,
// and records and bills the call.
type Speech struct {
	catalog   *catalog.Catalog
	providers ports.SpeechProviders
	guard     ports.GuardrailEnforcer
	billing   *Billing
	recorder  ports.GenerationRecorder
	env       Env
	log       *slog.Logger
}

var _ ports.Speech = (*Speech)(nil)

func NewSpeech(c *catalog.Catalog, providers ports.SpeechProviders, guard ports.GuardrailEnforcer, billing *Billing,
	recorder ports.GenerationRecorder, env Env, log *slog.Logger) *Speech {
	return &Speech{catalog: c, providers: providers, guard: guard, billing: billing, recorder: recorder, env: env, log: log}
}

// statusClientClosed records a call whose caller left before any answer (nginx's 499).
const statusClientClosed = 499

// speechHold is how long a call's budget reservation may stay unsettled.
const speechHold = 15 * time.Minute

// bufPool holds the buffers that carry a stream from upstream to caller: one per stream in flight.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (s *Speech) Synthesize(ctx context.Context, by account.Principal, req speech.Request, info ports.CallInfo, sink ports.AudioSink) (string, error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	model, err := s.catalog.Model(req.Model)
	if err != nil {
		return "", err
	}
	if err := speech.CheckModality(model); err != nil {
		return "", err
	}
	c := newCall(s.env, generation.TTS, by, info, req.Model)
	c.format = req.Format
	if req.SessionID != "" {
		c.rec.SessionID = &req.SessionID
	}
	c.rec.ExternalUser = req.User
	c.rec.Streamed = true
	if err := s.billing.Check(ctx, by); err != nil {
		return c.id(), s.finish(ctx, c, req.Input, nil, err)
	}
	admitted, err := s.guard.Admit(ctx, by, ports.Admission{Model: req.Model, Endpoints: model.Endpoints, Text: req.Input,
		Hold: speechHold, Estimate: func(e catalog.Endpoint, text string) domain.Micros {
			return speech.Estimate(e.Pricing, text, req.Speed, req.Format)
		}})
	if err != nil {
		return c.id(), s.finish(ctx, c, req.Input, nil, err)
	}
	c.rec.Flags = admitted.Flags
	text := admitted.Text

	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	buf := *bufp
	type opened struct {
		body  io.ReadCloser
		first []byte
	}
	o, ep, err := route(ctx, c, admitted.Endpoints, req.Options, func(ep catalog.Endpoint, opts map[string]any) (opened, string, error) {
		body, first, upstreamID, err := s.open(ctx, ep, ports.SynthesisRequest{UpstreamModel: ep.UpstreamModel, Input: text,
			Voice: req.Voice, Format: req.Format, Speed: req.Speed, Options: opts}, buf)
		return opened{body, first}, upstreamID, err
	})
	if err != nil {
		return c.id(), s.finish(ctx, c, text, admitted.Holds, err)
	}
	c.rec.Latency = time.Since(c.begin)
	sink.Start(req.Format.ContentType(), c.id())
	sent, err := pump(sink, o.body, buf, o.first)
	o.body.Close()
	c.rec.Counts.NumMediaCompletion = 1
	c.outBytes = sent
	c.endpoint = ep
	return c.id(), s.finish(ctx, c, text, admitted.Holds, err)
}

// open calls one endpoint and waits for the first bytes of audio, so that a failure before them can still fail
// over to the next endpoint.
func (s *Speech) open(ctx context.Context, ep catalog.Endpoint, r ports.SynthesisRequest, buf []byte) (io.ReadCloser, []byte, string, error) {
	p, ok := s.providers[ep.Provider]
	if !ok {
		return nil, nil, "", &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "provider not configured"}
	}
	a, err := p.Synthesize(ctx, r)
	if err != nil {
		return nil, nil, "", err
	}
	n, err := io.ReadAtLeast(a.Body, buf, 1)
	if n == 0 {
		a.Body.Close()
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = &ports.UpstreamError{Status: a.Status, Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent no audio"}
		}
		return nil, nil, "", err
	}
	return a.Body, buf[:n], a.UpstreamID, nil
}

// errCallerGone marks a stream the caller stopped reading.
var errCallerGone = errors.New("the caller went away")

// writer is where a stream goes: an audio or a video sink.
type writer interface{ Write(p []byte) error }

// pump sends first (when there is one) and then the rest of body to sink as it arrives, and returns the bytes
// sent. A failed read is an upstream failure; a failed write means the caller is gone.
func pump(sink writer, body io.Reader, buf, first []byte) (int64, error) {
	var sent int64
	if len(first) > 0 {
		if err := sink.Write(first); err != nil {
			return 0, errCallerGone
		}
		sent = int64(len(first))
	}
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if werr := sink.Write(buf[:n]); werr != nil {
				return sent, errCallerGone
			}
			sent += int64(n)
		}
		if err == io.EOF {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
	}
}

// finish completes the call's record and bill. err is what the caller gets (nil on success); an upstream failure
// after the first byte is not billed, a caller who left mid-stream pays for what was made.
func (s *Speech) finish(ctx context.Context, c *call, text string, holds []guardrail.Hold, err error) error {
	content := &generation.Content{Input: generation.Input{Messages: []generation.Message{{Role: "user", Content: text}}}}
	var cost domain.Micros
	switch {
	case err == nil:
		c.rec.Status, c.rec.FinishReason = 200, "stop"
	case errors.Is(err, errCallerGone) || errors.Is(err, context.Canceled):
		c.rec.Status, c.rec.FinishReason, c.rec.Cancelled = statusClientClosed, "cancelled", true
		if c.endpoint != nil { // the audio had begun: the caller got a 200
			c.rec.Status = 200
		}
	}
	if c.endpoint != nil && (err == nil || c.rec.Cancelled) {
		cost = speech.Cost(c.endpoint.Pricing, speech.Characters(text), c.outBytes, c.format)
	}
	if c.rec.Status == 0 {
		err = c.fail(content, err)
	}
	c.rec.TotalCost, c.rec.UpstreamCost = cost, cost
	c.rec.Counts.TokensPrompt = speech.Characters(text)
	c.rec.Counts.NativeTokensPrompt = c.rec.Counts.TokensPrompt
	c.done()
	s.recorder.Record(ctx, generation.Entry{Record: c.rec, Content: content})
	s.billing.Charge(ctx, c.by, cost, holds)
	if errors.Is(err, errCallerGone) {
		return context.Canceled
	}
	return err
}

// asUpstream views any provider error as an UpstreamError.
func asUpstream(err error) *ports.UpstreamError {
	var ue *ports.UpstreamError
	if errors.As(err, &ue) {
		return ue
	}
	return &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "the provider call failed", Err: err}
}

// failedOver is the caller's error once every endpoint failed: 429 when every one rate limited (with the
// soonest Retry-After), 400 when every one refused the input, else after the last failure: 524 for a timeout,
// 529 for overload, 502 for the rest. A failure no other endpoint could fix stops the routing and is answered as
// it is.
func failedOver(model string, fails []*ports.UpstreamError) error {
	if len(fails) == 0 {
		return domain.E(domain.KindUpstream, "no_endpoint", fmt.Sprintf("model %q has no endpoint to call", model))
	}
	last := fails[len(fails)-1]
	kind, code := domain.KindUpstream, "upstream_failed"
	same := func(k domain.Kind) bool {
		for _, f := range fails {
			if f.Kind != k {
				return false
			}
		}
		return true
	}
	var retry time.Duration
	switch {
	case same(domain.KindRateLimited):
		kind, code = domain.KindRateLimited, "upstream_rate_limited"
		for _, f := range fails {
			if f.RetryAfter > 0 && (retry == 0 || f.RetryAfter < retry) {
				retry = f.RetryAfter
			}
		}
		if retry == 0 {
			retry = time.Second
		}
	case same(domain.KindInvalid):
		kind, code = domain.KindInvalid, "upstream_rejected_input"
	case last.Kind == domain.KindTimeout:
		kind, code = domain.KindTimeout, "upstream_timeout"
	case last.Kind == domain.KindOverloaded:
		kind, code = domain.KindOverloaded, "upstream_overloaded"
	}
	msg := fmt.Sprintf("every provider of %q failed; the last said: %s", model, last.Reason)
	if kind == domain.KindInvalid {
		msg = last.Reason
	}
	e := domain.E(kind, code, msg).With("provider_reason", last.Reason).With("attempts", len(fails))
	e.RetryAfter = retry
	return e
}
