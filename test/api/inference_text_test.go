package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestInferenceTextADatabaseCannotStore: a NUL in any text field of an inference call, or raw invalid UTF-8 in a
// speech body, is a 400 naming the field, before any upstream call and without a charge; invalid UTF-8 and NUL in
// stored headers are repaired, and the call keeps its record. Never a 200 without a record, on either dialect.
func TestInferenceTextADatabaseCannotStore(t *testing.T) {
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		u := newUpstreams(t)
		g := harness.Start(t, db, harness.WithConfig(u.config("openai")))
		key, _ := g.Key(t, nil)

		refused := []struct {
			field string
			body  map[string]any
		}{
			{"input", map[string]any{"input": "a\u0000b"}},
			{"voice", map[string]any{"voice": "al\u0000loy"}},
			{"user", map[string]any{"user": "u\u0000"}},
			{"session_id", map[string]any{"session_id": "\u0000"}},
			{"user", map[string]any{"user": strings.Repeat("u", 257)}},
			{"session_id", map[string]any{"session_id": strings.Repeat("é", 257)}},
			{"model", map[string]any{"model": "tts\u0000"}},
			{"provider.options.openai.instructions", map[string]any{"provider": map[string]any{"options": map[string]any{
				"openai": map[string]any{"instructions": "x\u0000"}}}}},
			{"provider.options.openai.list[1]", map[string]any{"provider": map[string]any{"options": map[string]any{
				"openai": map[string]any{"list": []any{"ok", "\u0000"}}}}}},
		}
		for _, tt := range refused {
			e := harness.AssertError(t, speak(t, g, key, tt.body), 400)
			if !strings.Contains(e["message"].(string), tt.field+":") {
				t.Errorf("%s: message %q does not name the field", tt.field, e["message"])
			}
		}
		// Raw invalid UTF-8 inside a JSON string is refused naming it, before encoding/json would decode it as U+FFFD.
		raw := []byte(`{"model":"tts","voice":"alloy","input":"caf` + "\xff" + `","user":"` + "\xc3" + `"}`)
		if e := harness.AssertError(t, g.Do(t, "POST", "/audio/speech", key, raw), 400); e["message"] != "input: must be valid UTF-8" {
			t.Errorf("raw invalid UTF-8: message %q", e["message"])
		}
		if n := u.openai.Calls(); n != 0 {
			t.Fatalf("refused calls reached the provider %d times", n)
		}

		// Invalid UTF-8 in stored headers is repaired (U+FFFD): stored as such.
		stored := []harness.Response{
			speak(t, g, key, nil, "User-Agent", "agent/\xff\xfe1", "Referer", "https://x.example/\xc3",
				"Origin", "https://o.example\xe2\x82", "X-Session-Id", "sess\xff"),
			speak(t, g, key, nil, "User-Agent", strings.Repeat("é", 600)), // kept: its first 512 bytes
		}
		for _, r := range stored {
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		}
		rec := generationOf(t, g, stored[0])
		for k, want := range map[string]string{"user_agent": "agent/\uFFFD1", "http_referer": "https://x.example/\uFFFD",
			"origin": "https://o.example\uFFFD", "session_id": "sess\uFFFD"} {
			if rec[k] != want {
				t.Errorf("%s = %q, want %q", k, rec[k], want)
			}
		}
		if ua := generationOf(t, g, stored[1])["user_agent"]; ua != strings.Repeat("é", 256) {
			t.Errorf("a 1,200-byte User-Agent was kept as %d bytes", len(ua.(string)))
		}
	})
}

// TestVideoTextADatabaseCannotStore: the same for a video job, whose request is stored with the job.
func TestVideoTextADatabaseCannotStore(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	for _, tt := range []struct {
		field string
		body  map[string]any
	}{
		{"prompt", map[string]any{"prompt": "a cat\u0000"}},
		{"user", map[string]any{"user": "\u0000"}},
		{"frame_images[0].image_url.url", map[string]any{"frame_images": []any{map[string]any{"type": "image_url",
			"frame_type": "first_frame", "image_url": map[string]any{"url": "https://x.example/\u0000.png"}}}}},
		{"provider.options.openai.style", map[string]any{"provider": map[string]any{"options": map[string]any{
			"openai": map[string]any{"style": "\u0000"}}}}},
		{"provider.options.openai.strength", map[string]any{"provider": map[string]any{"options": map[string]any{
			"openai": map[string]any{"strength": json.Number("-1e-999999")}}}}}, // past what jsonb holds
	} {
		body := map[string]any{"model": "sora", "prompt": "a cat"}
		for k, v := range tt.body {
			body[k] = v
		}
		e := harness.AssertError(t, r.g.Do(t, "POST", "/videos", r.key, body), 400)
		if !strings.Contains(e["message"].(string), tt.field+":") {
			t.Errorf("%s: message %q does not name the field", tt.field, e["message"])
		}
	}
	if n := r.openai.Calls(); n != 0 {
		t.Fatalf("refused jobs reached the provider %d times", n)
	}
}
