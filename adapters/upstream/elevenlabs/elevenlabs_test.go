package elevenlabs_test

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/elevenlabs"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// client calls the fake with key, waiting up to wait for the first byte and between chunks.
func client(f *fakes.ElevenLabs, key string, wait time.Duration) *elevenlabs.Client {
	return elevenlabs.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

// dial is client for the shared contracts, which choose how long each call may wait.
func dial(f *fakes.ElevenLabs, key string) func(time.Duration) *elevenlabs.Client {
	return func(wait time.Duration) *elevenlabs.Client { return client(f, key, wait) }
}

func TestSpeech(t *testing.T) {
	t.Parallel()
	f := fakes.NewElevenLabs(t, "xi-key", "21m00Tcm4TlvDq8ikWAM")
	speed := 2.0
	req := fakes.SpeechRequest("eleven_turbo_v2_5", "21m00Tcm4TlvDq8ikWAM", "Hi there", speech.PCM, map[string]any{
		"voice_settings": map[string]any{"stability": 0.3, "speed": 0.8}, "optimize_streaming_latency": 3, "seed": 7,
		"text": "not this"})
	req.Speed = &speed
	got, a := fakes.ReadAudio(t, client(f, "xi-key", fakes.Patient), req)
	want, _ := io.ReadAll(fakes.Sine(fakes.PCMBytesFor("Hi there")))
	if len(got) != len(want) || a.UpstreamID != "el_req_fake" {
		t.Fatalf("audio %d bytes, want %d; id %q", len(got), len(want), a.UpstreamID)
	}
	r := f.Requests()[0]
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	vs := body["voice_settings"].(map[string]any)
	if r.Path != "/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream" || r.Query.Get("output_format") != "pcm_24000" ||
		r.Query.Get("optimize_streaming_latency") != "3" || body["text"] != "Hi there" || body["model_id"] != "eleven_turbo_v2_5" ||
		vs["speed"] != 1.2 || vs["stability"] != 0.3 || body["seed"] != 7.0 || body["optimize_streaming_latency"] != nil {
		t.Fatalf("request %s?%s %v", r.Path, r.Query.Encode(), body)
	}
	fakes.ReadAudio(t, client(f, "xi-key", fakes.Patient), fakes.SpeechRequest("m", "21m00Tcm4TlvDq8ikWAM", "x", speech.MP3, nil))
	if q := f.Requests()[1].Query.Get("output_format"); q != "mp3_44100_128" {
		t.Fatalf("mp3 output_format %q", q)
	}
}

func TestSpeechFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewElevenLabs(t, "xi-key", "v1")
	req := fakes.SpeechRequest("m", "v1", "Hello", speech.PCM, nil)
	fakes.CheckFailures(t, f.Fake, dial(f, "xi-key"), req, []fakes.Failure{
		{Name: "concurrency", Step: fakes.Step{Status: 429, Body: fakes.ElevenLabsConcurrency}, Kind: domain.KindRateLimited, Retryable: true},
		{Name: "quota comes as 401", Step: fakes.Step{Status: 401, Body: fakes.ElevenLabsQuota}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "busy", Step: fakes.Step{Status: 503, Body: fakes.ElevenLabsBusy}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "no first byte", Step: fakes.Step{Hold: make(chan struct{})}, Kind: domain.KindTimeout, Retryable: true},
	})
	fakes.CheckFailures(t, f.Fake, dial(f, "xi-key"), fakes.SpeechRequest("m", "nobody", "Hello", speech.PCM, nil), []fakes.Failure{
		{Name: "voice not found", Step: fakes.Step{}, Kind: domain.KindInvalid},
	})
	fakes.CheckFailures(t, f.Fake, dial(f, "wrong"), req, []fakes.Failure{
		{Name: "bad key", Step: fakes.Step{}, Kind: domain.KindUpstream, Retryable: true},
	})
}
