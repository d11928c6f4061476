package fakes

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// Failure is one scripted upstream failure and how the adapter must classify it.
type Failure struct {
	Name       string
	Step       Step
	Kind       domain.Kind
	Retryable  bool
	RetryAfter time.Duration
}

// CheckFailures scripts each failure on fake, calls the provider (made by client to wait as long as the failure
// calls for), and checks the classification.
func CheckFailures[P ports.SpeechProvider](t *testing.T, fake *Fake, client func(wait time.Duration) P, req ports.SynthesisRequest, cases []Failure) {
	t.Helper()
	checkFailures(t, fake, client, func(p P) error {
		a, err := p.Synthesize(context.Background(), req)
		if err == nil { // some failures only show when the body is read (a stall, an abort)
			_, err = io.ReadAll(a.Body)
			a.Body.Close()
		}
		return err
	}, cases)
}

// CheckEmbedFailures is CheckFailures for an embeddings provider.
func CheckEmbedFailures[P ports.EmbeddingProvider](t *testing.T, fake *Fake, client func(wait time.Duration) P, req ports.EmbedRequest, cases []Failure) {
	t.Helper()
	checkFailures(t, fake, client, func(p P) error {
		_, err := p.Embed(context.Background(), req)
		return err
	}, cases)
}

// checkFailures scripts each failure on fake, makes the call on a provider made by client, and checks the
// classification of the error it ends with.
func checkFailures[P any](t *testing.T, fake *Fake, client func(wait time.Duration) P, call func(P) error, cases []Failure) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			fake.Script(tc.Step)
			err := call(client(tc.Step.Wait()))
			fake.settle(tc.Step)
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v (%T), want an UpstreamError", err, err)
			}
			if ue.Kind != tc.Kind || ue.Retryable != tc.Retryable || ue.RetryAfter != tc.RetryAfter {
				t.Fatalf("classified as kind %d retryable %v retry-after %v; want kind %d retryable %v retry-after %v (%v)",
					ue.Kind, ue.Retryable, ue.RetryAfter, tc.Kind, tc.Retryable, tc.RetryAfter, ue)
			}
			if tc.Step.Status != 0 && ue.Raw == "" {
				t.Fatal("the provider's error body was not kept for the record")
			}
		})
	}
}

// ReadAudio synthesises and reads the whole body.
func ReadAudio(t *testing.T, p ports.SpeechProvider, req ports.SynthesisRequest) ([]byte, ports.Audio) {
	t.Helper()
	a, err := p.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatalf("Synthesize: %v", err)
	}
	defer a.Body.Close()
	b, err := io.ReadAll(a.Body)
	if err != nil {
		t.Fatalf("read audio: %v", err)
	}
	return b, a
}

// SpeechRequest is a request for text in format with the given passthrough options.
func SpeechRequest(model, voice, text string, f speech.Format, options map[string]any) ports.SynthesisRequest {
	return ports.SynthesisRequest{UpstreamModel: model, Input: text, Voice: voice, Format: f, Options: options}
}
