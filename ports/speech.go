package ports

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/speech"
)

// SynthesisRequest is what a speech provider is asked for.
type SynthesisRequest struct {
	UpstreamModel string
	Input         string
	Voice         string
	Format        speech.Format
	Speed         *float64
	// Options is the matched provider's passthrough, already stripped of callback and URL keys. Canonical
	// fields win over it.
	Options map[string]any
}

// Audio is a provider's answer. Body streams in the format asked for: PCM (s16le, mono, 24 kHz) or MP3,
// whatever the provider sends on the wire; closing it cancels the upstream call.
type Audio struct {
	Body       io.ReadCloser
	UpstreamID string
	Status     int
}

// SpeechProvider is one upstream's text-to-speech protocol. Errors are *UpstreamError.
type SpeechProvider interface {
	Synthesize(ctx context.Context, req SynthesisRequest) (Audio, error)
}

// SpeechProviders are the configured providers by slug.
type SpeechProviders map[string]SpeechProvider

// UpstreamError is a failed upstream call, classified by the adapter that made it.
type UpstreamError struct {
	// Status is the upstream's HTTP status, 0 when none came.
	Status int
	// Kind is what the failure means for the caller: KindInvalid (the caller's input, never retried),
	// KindRateLimited, KindTimeout, KindOverloaded or KindUpstream.
	Kind domain.Kind
	// Retryable says another endpoint may succeed where this one failed.
	Retryable bool
	// Reason is short and safe to show the caller; Raw is the upstream's body, truncated, which is not.
	Reason     string
	Raw        string
	RetryAfter time.Duration
	Err        error
}

func (e *UpstreamError) Error() string {
	s := fmt.Sprintf("upstream %d: %s", e.Status, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// AudioSink is where a speech call's audio goes: the HTTP adapter supplies it.
type AudioSink interface {
	// Start is called once, before the first byte, with the response's media type and generation id.
	Start(contentType, generationID string)
	// Write sends a chunk on at once; an error means the caller is gone.
	Write(p []byte) error
}

// CallInfo is what a request says about its caller beyond the body, for the generation record.
type CallInfo struct {
	RequestID string
	Origin    string
	Referer   string
	UserAgent string
	SessionID string // the X-Session-Id header; the body's session_id wins
}

// Speech is the text-to-speech use case. It streams the audio into sink and returns the generation id, also
// when it fails (a failed call has a record too, unless it failed validation).
type Speech interface {
	Synthesize(ctx context.Context, by account.Principal, req speech.Request, info CallInfo, sink AudioSink) (string, error)
}

// CreditStore is the organization's credit balance: what was added, and what calls used.
type CreditStore interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
	AddCreditUsage(ctx context.Context, amount domain.Micros) error
}

// Credits reads and tops up the balance.
type Credits interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
}

// RateDecision is the outcome of a rate-limit check, with what the caller is told in headers.
type RateDecision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time
	RetryAfter time.Duration
}

// RateLimiter admits requests per key and minute; a limit of 0 admits everything.
type RateLimiter interface {
	Allow(key string, perMinute int) RateDecision
}
