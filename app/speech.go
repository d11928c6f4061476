package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
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
	providers ports.Providers
	guard     ports.GuardrailEnforcer
	billing   *Billing
	recorder  ports.GenerationRecorder
	env       Env
	log       *slog.Logger
}

var _ ports.Speech = (*Speech)(nil)

func NewSpeech(c *catalog.Catalog, providers ports.Providers, guard ports.GuardrailEnforcer, billing *Billing,
	recorder ports.GenerationRecorder, env Env, log *slog.Logger) *Speech {
	return &Speech{catalog: c, providers: providers, guard: guard, billing: billing, recorder: recorder, env: env, log: log}
}

// statusClientClosed records a call whose caller left before any answer (nginx's 499).
const statusClientClosed = 499

// speechHold is how long a call's budget reservation may stay unsettled.
const speechHold = 15 * time.Minute

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
	p, err := providerOf[ports.SpeechProvider](s.providers, ep.Provider)
	if err != nil {
		return nil, nil, "", err
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
