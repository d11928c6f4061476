package openai_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// client calls the fake with key, waiting up to wait for the first byte and between chunks.
func client(f *fakes.OpenAI, key string, wait time.Duration) *openai.Client {
	return openai.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

// dial is client for the shared contracts, which choose how long each call may wait.
func dial(f *fakes.OpenAI, key string) func(time.Duration) *openai.Client {
	return func(wait time.Duration) *openai.Client { return client(f, key, wait) }
}

func TestSpeech(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := client(f, "sk-test", fakes.Patient)
	speed := 1.5
	req := fakes.SpeechRequest("tts-1", "alloy", "Hello there", speech.PCM,
		map[string]any{"instructions": "cheerful", "voice": "echo", "response_format": "wav"})
	req.Speed = &speed
	got, a := fakes.ReadAudio(t, c, req)
	want, _ := io.ReadAll(fakes.Sine(fakes.PCMBytesFor("Hello there")))
	if !bytes.Equal(got, want) || a.UpstreamID != "req_fake_openai" {
		t.Fatalf("audio %d bytes (want %d), upstream id %q", len(got), len(want), a.UpstreamID)
	}
	r := f.Requests()[0]
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	// Canonical fields win over passthrough; passthrough that does not collide is forwarded; the format is explicit.
	if r.Path != "/v1/audio/speech" || r.Header.Get("Authorization") != "Bearer sk-test" || body["voice"] != "alloy" ||
		body["response_format"] != "pcm" || body["instructions"] != "cheerful" || body["speed"] != 1.5 || body["model"] != "tts-1" {
		t.Fatalf("request: %s %s %v", r.Path, r.Header.Get("Authorization"), body)
	}
	mp3, _ := fakes.ReadAudio(t, c, fakes.SpeechRequest("tts-1", "alloy", "Hello there", speech.MP3, nil))
	if !bytes.HasPrefix(mp3, []byte{0xFF, 0xFB, 0x90, 0x00}) {
		t.Fatalf("mp3 does not start with a frame header: % x", mp3[:4])
	}
}

func TestSpeechFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	req := fakes.SpeechRequest("tts-1", "alloy", "Hello", speech.PCM, nil)
	fakes.CheckFailures(t, f.Fake, dial(f, "sk-test"), req, []fakes.Failure{
		{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "2"}},
			Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 2 * time.Second},
		{Name: "retry-after-ms", Step: fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"retry-after-ms": "1500"}},
			Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 1500 * time.Millisecond},
		{Name: "quota is not a rate limit", Step: fakes.Step{Status: 429, Body: fakes.OpenAIQuota},
			Kind: domain.KindUpstream, Retryable: true},
		{Name: "server error", Step: fakes.Step{Status: 500, Body: fakes.OpenAIServerError}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "529", Step: fakes.Step{Status: 529, Body: `{"error":{"type":"overloaded_error"}}`}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "gateway timeout", Step: fakes.Step{Status: 504, Body: fakes.OpenAIServerError}, Kind: domain.KindTimeout, Retryable: true},
		{Name: "caller's input", Step: fakes.Step{Status: 400, Body: fakes.OpenAIBadInput}, Kind: domain.KindInvalid},
		{Name: "no first byte in time", Step: fakes.Step{Hold: make(chan struct{})}, Kind: domain.KindTimeout, Retryable: true},
		{Name: "stalls mid-stream", Step: fakes.Step{HoldAfter: 5000}, Kind: domain.KindTimeout, Retryable: true},
		{Name: "cut mid-stream", Step: fakes.Step{Abort: 5000}, Kind: domain.KindUpstream, Retryable: true},
	})
	t.Run("our key rejected", func(t *testing.T) {
		fakes.CheckFailures(t, f.Fake, dial(f, "sk-wrong"), req, []fakes.Failure{
			{Name: "401", Step: fakes.Step{}, Kind: domain.KindUpstream, Retryable: true},
		})
	})
}
