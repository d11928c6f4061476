package deepgram_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/deepgram"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// client calls the fake with key, waiting up to wait for the first byte and between chunks.
func client(f *fakes.Deepgram, key string, wait time.Duration) *deepgram.Client {
	return deepgram.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

// dial is client for the shared contracts, which choose how long each call may wait.
func dial(f *fakes.Deepgram, key string) func(time.Duration) *deepgram.Client {
	return func(wait time.Duration) *deepgram.Client { return client(f, key, wait) }
}

func TestModel(t *testing.T) {
	t.Parallel()
	for _, tt := range [][3]string{{"aura-2", "thalia", "aura-2-thalia-en"}, {"aura-2-{voice}-de", "julius", "aura-2-julius-de"},
		{"aura-2", "aura-2-orion-en", "aura-2-orion-en"}} {
		if got := deepgram.Model(tt[0], tt[1]); got != tt[2] {
			t.Errorf("Model(%q, %q) = %q, want %q", tt[0], tt[1], got, tt[2])
		}
	}
}

func TestSpeech(t *testing.T) {
	t.Parallel()
	f := fakes.NewDeepgram(t, "dg-key")
	speed := 3.0
	req := fakes.SpeechRequest("aura-2", "thalia", "Hello Deepgram", speech.PCM, map[string]any{"tag": "t1"})
	req.Speed = &speed
	got, a := fakes.ReadAudio(t, client(f, "dg-key", fakes.Patient), req)
	if int64(len(got)) != fakes.PCMBytesFor("Hello Deepgram") || a.UpstreamID != "dg-req-fake" {
		t.Fatalf("audio %d bytes, id %q", len(got), a.UpstreamID)
	}
	r := f.Requests()[0]
	var body map[string]any
	_ = json.Unmarshal(r.Body, &body)
	if q := r.Query; q.Get("model") != "aura-2-thalia-en" || q.Get("encoding") != "linear16" || q.Get("container") != "none" ||
		q.Get("sample_rate") != "24000" || q.Get("speed") != "1.5" || q.Get("tag") != "t1" || body["text"] != "Hello Deepgram" ||
		r.Header.Get("Authorization") != "Token dg-key" {
		t.Fatalf("request %s %v %s", r.Path, r.Query, r.Body)
	}
	fakes.ReadAudio(t, client(f, "dg-key", fakes.Patient), fakes.SpeechRequest("aura-2", "thalia", "x", speech.MP3, nil))
	if q := f.Requests()[1].Query; q.Get("encoding") != "mp3" || q.Has("sample_rate") {
		t.Fatalf("mp3 query %v", q)
	}
}

func TestSpeechFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewDeepgram(t, "dg-key")
	fakes.CheckFailures(t, f.Fake, dial(f, "dg-key"), fakes.SpeechRequest("aura-2", "thalia", "Hi", speech.PCM, nil), []fakes.Failure{
		{Name: "concurrency 429", Step: fakes.Step{Status: 429, Body: `{"err_code":"TOO_MANY_REQUESTS","err_msg":"Too many requests.","request_id":"x"}`},
			Kind: domain.KindRateLimited, Retryable: true},
		{Name: "unavailable", Step: fakes.Step{Status: 503, Body: `{"err_code":"SERVICE_UNAVAILABLE","err_msg":"down","request_id":"x"}`},
			Kind: domain.KindOverloaded, Retryable: true},
	})
	fakes.CheckFailures(t, f.Fake, dial(f, "nope"), fakes.SpeechRequest("aura-2", "thalia", "Hi", speech.PCM, nil), []fakes.Failure{
		{Name: "bad key", Step: fakes.Step{}, Kind: domain.KindUpstream, Retryable: true},
	})
}
