package e2e_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// espeakConfig serves speech from the real espeak-ng engine on this host.
const espeakConfig = `
providers:
  - {slug: local, kind: espeak}
models:
  - {id: local/espeak, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 1}}]}
`

// TestOpenAIGoClient drives the gateway with the official Go client, unchanged but for its base URL, and reads
// back the generation record of the call.
func TestOpenAIGoClient(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithConfig(espeakConfig))
	key, _ := g.Key(t, nil)
	client := openai.NewClient(option.WithBaseURL(g.URL+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	resp, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Model:          "local/espeak",
		Input:          "The quick brown fox jumps over the lazy dog.",
		Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("en-us")},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatPCM,
		Speed:          openai.Float(1.25),
	})
	if err != nil {
		t.Fatalf("speech: %v", err)
	}
	pcm, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Content-Type") != "audio/pcm;rate=24000;channels=1" || len(pcm) < 48000 || len(pcm)%2 != 0 {
		t.Fatalf("%d bytes of %q (%v)", len(pcm), resp.Header.Get("Content-Type"), err)
	}
	id := resp.Header.Get("X-Generation-Id")
	harness.Eventually(t, 5*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+id, key, nil).Status == 200 })
	rec := g.Do(t, "GET", "/generation?id="+id, key, nil).JSON(t)["data"].(map[string]any)
	if rec["provider_name"] != "local" || rec["api_type"] != "tts" || rec["finish_reason"] != "stop" {
		t.Fatalf("record: %v", rec)
	}

	// A custom voice object is accepted and comes through as its id; an unknown one is the provider's 400.
	_, err = client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "local/espeak", Input: "hi",
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfAudioSpeechNewsVoiceID: &openai.AudioSpeechNewParamsVoiceID{ID: "voice_123"}}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown voice: %v", err)
	}
	_, err = client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Model: "missing", Input: "hi",
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("en")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown model: %v", err)
	}
}
