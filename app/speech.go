package app

import (
	"context"
	"io"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// Speech is text to speech: each call goes through the inference pipeline, and streams the audio of the first
// endpoint that answers.
type Speech struct {
	inference *Inference
	providers ports.Providers
}

var _ ports.SpeechService = (*Speech)(nil)

func NewSpeech(inference *Inference, providers ports.Providers) *Speech {
	return &Speech{inference: inference, providers: providers}
}

// speechHold is how long a call's budget reservation may stay unsettled.
const speechHold = 15 * time.Minute

func (s *Speech) Synthesize(ctx context.Context, by account.Principal, req speech.Request, caller generation.Caller, sink ports.AudioSink) (string, error) {
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	return s.inference.Run(ctx, by, caller, &speechCall{req: req, providers: s.providers, sink: sink, buf: *bufp})
}

// speechCall is one text-to-speech call in the pipeline.
type speechCall struct {
	req       speech.Request
	providers ports.Providers
	sink      ports.AudioSink
	buf       []byte
	// body and first are the audio of the endpoint that answered, and its first bytes, once Open has them.
	body  io.ReadCloser
	first []byte
	ended bool // first is the whole audio
}

func (s *speechCall) Spec() (Spec, error) {
	if err := s.req.Validate(); err != nil {
		return Spec{}, err
	}
	r := s.req
	return Spec{API: generation.TTS, Modality: catalog.TTS, Model: r.Model, Texts: []string{r.Input}, Options: r.Options,
		SessionID: r.SessionID, User: r.User, Streamed: true, Hold: speechHold}, nil
}

// Input keeps the text as the user's message; it is billed, and counted, in characters.
func (s *speechCall) Input(texts []string) (generation.Input, generation.Counts) {
	chars := speech.Characters(texts[0])
	return generation.Input{Messages: []generation.Message{{Role: "user", Content: texts[0]}}},
		generation.Counts{TokensPrompt: chars, NativeTokensPrompt: chars}
}

func (s *speechCall) Estimate(ep catalog.Endpoint, texts []string) domain.Micros {
	opts, _ := catalog.PassThrough(s.req.Options, ep.Provider) // a malformed object fails the call at Open
	return speech.Estimate(ep.Pricing, texts[0], s.req.Speed, opts, s.req.Format)
}

// Open asks one endpoint for the audio and waits for its first bytes.
func (s *speechCall) Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (string, error) {
	p, err := providerOf[ports.SpeechProvider](s.providers, ep)
	if err != nil {
		return "", err
	}
	a, err := p.Synthesize(ctx, ports.SynthesisRequest{UpstreamModel: ep.UpstreamModel, Input: texts[0], Voice: s.req.Voice,
		Format: s.req.Format, Speed: s.req.Speed, Options: opts})
	if err != nil {
		return "", err
	}
	first, ended, err := firstBytes(a.Body, s.buf, a.Status, "audio")
	if err != nil {
		a.Body.Close()
		return "", err
	}
	s.body, s.first, s.ended = a.Body, first, ended
	return a.UpstreamID, nil
}

// Deliver streams the audio. An upstream failure after the first byte is not billed; a caller who left
// mid-stream pays for what was made.
func (s *speechCall) Deliver(ctx context.Context, c *Call) Delivery {
	s.sink.Start(s.req.Format.ContentType(), c.ID())
	sent, err := pump(s.sink, s.body, s.buf, s.first, s.ended)
	s.body.Close()
	d := Delivery{Err: err, Counts: generation.Counts{NumMediaCompletion: 1}}
	switch {
	case err == nil || callerLeft(ctx, err):
		d.Cost = speech.Cost(c.endpoint.Pricing, speech.Characters(c.texts[0]), sent, s.req.Format)
	default:
		d.Err = brokeOff(err)
	}
	return d
}
