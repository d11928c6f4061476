package ports

import (
	"context"
	"io"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
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

// AudioSink is where a speech call's audio goes: the HTTP adapter supplies it.
type AudioSink interface {
	// Start is called once, before the first byte, with the response's media type and generation id.
	Start(contentType, generationID string)
	// Write hands a chunk on, to be sent at the next Flush; an error means the caller is gone.
	Write(p []byte) error
	Flusher
}

// SpeechService is the text-to-speech use case. It streams the audio into sink and returns the generation id, also
// when it fails (a failed call has a record too, unless it failed validation).
type SpeechService interface {
	Synthesize(ctx context.Context, by account.Principal, req speech.Request, caller generation.Caller, sink AudioSink) (string, error)
}
