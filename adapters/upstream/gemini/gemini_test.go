package gemini_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/gemini"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// client calls the fake with key, waiting up to wait for the first byte and between chunks.
func client(f *fakes.Gemini, key string, wait time.Duration) *gemini.Client {
	return gemini.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

// dial is client for the shared contracts, which choose how long each call may wait.
func dial(f *fakes.Gemini, key string) func(time.Duration) *gemini.Client {
	return func(wait time.Duration) *gemini.Client { return client(f, key, wait) }
}

// TestSpeech decodes base64 PCM event by event (odd-sized events split samples) into exactly the fake's audio.
func TestSpeech(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	got, _ := fakes.ReadAudio(t, client(f, "g-key", fakes.Patient), fakes.SpeechRequest("gemini-2.5-flash-preview-tts", "Kore",
		"A longer sentence, to span several events.", speech.PCM, map[string]any{"languageCode": "en-US"}))
	want, _ := io.ReadAll(fakes.Sine(fakes.PCMBytesFor("A longer sentence, to span several events.")))
	if string(got) != string(want) {
		t.Fatalf("decoded %d bytes differing from the %d sent", len(got), len(want))
	}
	r := f.Requests()[0]
	var body struct {
		GenerationConfig struct {
			ResponseModalities []string `json:"responseModalities"`
			SpeechConfig       struct {
				LanguageCode string `json:"languageCode"`
				VoiceConfig  struct {
					PrebuiltVoiceConfig struct{ VoiceName string } `json:"prebuiltVoiceConfig"`
				} `json:"voiceConfig"`
			} `json:"speechConfig"`
		} `json:"generationConfig"`
	}
	_ = json.Unmarshal(r.Body, &body)
	if r.Path != "/v1beta/models/gemini-2.5-flash-preview-tts:streamGenerateContent" || r.Header.Get("x-goog-api-key") != "g-key" ||
		body.GenerationConfig.SpeechConfig.VoiceConfig.PrebuiltVoiceConfig.VoiceName != "Kore" ||
		body.GenerationConfig.SpeechConfig.LanguageCode != "en-US" || body.GenerationConfig.ResponseModalities[0] != "AUDIO" {
		t.Fatalf("request %s %s", r.Path, r.Body)
	}
}

// TestSpeechResamples converts 16 kHz inline audio to 24 kHz.
func TestSpeechResamples(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	f.Rate = 16000
	got, _ := fakes.ReadAudio(t, client(f, "g-key", fakes.Patient), fakes.SpeechRequest("m", "Kore", "Resample me please", speech.PCM, nil))
	want := fakes.PCMBytesFor("Resample me please")
	if d := int64(len(got)) - want; d < -8 || d > 8 || len(got)%2 != 0 {
		t.Fatalf("%d bytes at 24 kHz, want about %d", len(got), want)
	}
	if s := int16(binary.LittleEndian.Uint16(got[200:])); s == 0 {
		t.Fatal("resampled audio is silent")
	}
}

func TestSpeechFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	req := fakes.SpeechRequest("m", "Kore", "Hello", speech.PCM, nil)
	fakes.CheckFailures(t, f.Fake, dial(f, "g-key"), req, []fakes.Failure{
		{Name: "rate limited with retryDelay", Step: fakes.Step{Status: 429, Body: fakes.GeminiRateLimited},
			Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 1500 * time.Millisecond},
		{Name: "per-day quota", Step: fakes.Step{Status: 429, Body: fakes.GeminiDailyQuota}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.GeminiOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "cut mid-stream", Step: fakes.Step{Abort: 6000}, Kind: domain.KindUpstream, Retryable: true},
	})
	fakes.CheckFailures(t, f.Fake, dial(f, "bad"), req, []fakes.Failure{
		{Name: "invalid key comes as 400", Step: fakes.Step{}, Kind: domain.KindUpstream, Retryable: true},
	})
	f.Safety = true
	fakes.CheckFailures(t, f.Fake, dial(f, "g-key"), req, []fakes.Failure{
		{Name: "safety: a 200 without audio", Step: fakes.Step{}, Kind: domain.KindInvalid},
	})
	if _, err := client(f, "g-key", fakes.Patient).Synthesize(t.Context(), fakes.SpeechRequest("m", "Kore", "x", speech.MP3, nil)); err == nil {
		t.Fatal("mp3 was not refused")
	}
	if n := f.Calls(); n != 1 {
		t.Fatalf("mp3 reached the provider (%d calls)", n)
	}
}
