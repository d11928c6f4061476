package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// referenceSpeechBody is the body as encoding/json built it from a map of the fields (before speechBody): what
// speechBody's must decode the same as.
func referenceSpeechBody(r ports.SynthesisRequest) ([]byte, error) {
	canonical := map[string]any{"model": r.UpstreamModel, "input": r.Input, "voice": r.Voice,
		"response_format": string(r.Format), "stream_format": "audio"}
	if r.Speed != nil {
		canonical["speed"] = *r.Speed
	}
	return json.Marshal(upstream.Merge(r.Options, canonical))
}

// TestSpeechBody holds the body appended by hand to the one encoding/json built: the same JSON, whatever the text
// (escapes, invalid UTF-8), the speed and the options.
func TestSpeechBody(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		req  ports.SynthesisRequest
	}{
		{"plain", ports.SynthesisRequest{UpstreamModel: "tts-1", Input: "Hello there", Voice: "alloy", Format: speech.PCM}},
		{"escapes", ports.SynthesisRequest{UpstreamModel: "up-<model>", Input: "say \"<b>&</b>\"\n\t\u2028é😀\x01\xff", Voice: `a\b`,
			Format: speech.MP3, Speed: f(1.5)}},
		{"options", ports.SynthesisRequest{UpstreamModel: "gpt-4o-mini-tts", Input: "hi", Voice: "echo", Format: speech.PCM, Speed: f(0.25),
			Options: map[string]any{"instructions": "cheerful <b>", "voice": "fable", "response_format": "wav", "speed": 3.0,
				"model": "costly", "stream_format": "sse", "input": "other", "n": json.Number("2"), "x<&>": nil,
				"nested": map[string]any{"b": []any{true, 1e21, "é"}, "a": json.Number("1e3")}}}},
		{"speed from the options", ports.SynthesisRequest{UpstreamModel: "m", Input: "hi", Voice: "v", Format: speech.PCM,
			Options: map[string]any{"speed": 2.0}}},
	} {
		got, err := speechBody(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := referenceSpeechBody(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := decodeAny(t, got), decodeAny(t, want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}

// TestSpeechBodyGatewayFieldsWin holds the call's own fields against options that name them in another case or by
// Unicode's folding: an upstream that decodes with encoding/json matches keys so and takes the last.
func TestSpeechBodyGatewayFieldsWin(t *testing.T) {
	speed := 1.25
	got, err := speechBody(ports.SynthesisRequest{UpstreamModel: "tts-1", Input: "hi", Voice: "alloy", Format: speech.PCM, Speed: &speed,
		Options: map[string]any{"MODEL": "costly", "ſpeed": 4.0, "Voice": "echo", "Response_Format": "wav", "inpuT": "more", "Stream_Format": "sse"}})
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		Model, Input, Voice string
		ResponseFormat      string  `json:"response_format"`
		StreamFormat        string  `json:"stream_format"`
		Speed               float64 `json:"speed"`
	}
	if err := json.Unmarshal(got, &up); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if up.Model != "tts-1" || up.Input != "hi" || up.Voice != "alloy" || up.ResponseFormat != "pcm" || up.StreamFormat != "audio" || up.Speed != 1.25 {
		t.Errorf("%s: an upstream decoding with encoding/json reads %+v", got, up)
	}
}

// BenchmarkSpeechBody times a speech call's body for an OpenAI-compatible upstream, on the way to its first byte.
func BenchmarkSpeechBody(b *testing.B) {
	speed := 1.25
	r := ports.SynthesisRequest{UpstreamModel: "gpt-4o-mini-tts", Input: "Hello there, and welcome to the show.", Voice: "alloy",
		Format: speech.MP3, Speed: &speed}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := speechBody(r); err != nil {
			b.Fatal(err)
		}
	}
}
