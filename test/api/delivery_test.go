package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// deliveryRig is one fake of every chat and speech upstream behind a gateway, each under two slugs: <kind>, which
// waits a minute for anything (a caller's departure is the only thing that ends a call that stalls), and
// <kind>-quick, whose provider times out after 1 s without a first byte and 400 ms without a chunk. Model
// <modality>/<slug> is served by that slug alone; every price is a micro-dollar a token (or a character), and
// espeak's a micro-dollar a second of audio, so that what a call is billed reads as what it delivered.
type deliveryRig struct {
	g                  *harness.Gateway
	key                string
	openai, elevenlabs *fakes.Fake
	anthropic, gemini  *fakes.Fake
	deepgram           *fakes.Fake
}

func newDeliveryRig(t *testing.T) *deliveryRig {
	oai, ant, gem := fakes.NewOpenAI(t, "sk-up"), fakes.NewAnthropic(t, "sk-ant"), fakes.NewGemini(t, "g-up")
	el, dg := fakes.NewElevenLabs(t, "xi-up", "alloy"), fakes.NewDeepgram(t, "dg-up")
	r := &deliveryRig{openai: oai.Fake, anthropic: ant.Fake, gemini: gem.Fake, elevenlabs: el.Fake, deepgram: dg.Fake}
	var providers, models strings.Builder
	for _, p := range []struct{ kind, slug, url, key string }{
		{"openai", "openai", oai.BaseURL(), "sk-up"}, {"anthropic", "anthropic", ant.BaseURL(), "sk-ant"},
		{"google-ai-studio", "gemini", gem.BaseURL(), "g-up"}, {"elevenlabs", "elevenlabs", el.BaseURL(), "xi-up"},
		{"deepgram", "deepgram", dg.BaseURL(), "dg-up"},
	} {
		fmt.Fprintf(&providers, "  - {slug: %s, kind: %s, base_url: %s, api_key: %s, timeout: 1m, idle_timeout: 1m}\n", p.slug, p.kind, p.url, p.key)
		fmt.Fprintf(&providers, "  - {slug: %s-quick, kind: %s, base_url: %s, api_key: %s, timeout: 1s, idle_timeout: 400ms}\n", p.slug, p.kind, p.url, p.key)
	}
	providers.WriteString("  - {slug: espeak, kind: espeak}\n")
	for _, slug := range []string{"openai", "anthropic", "gemini"} {
		for _, s := range []string{slug, slug + "-quick"} {
			fmt.Fprintf(&models, "  - {id: chat/%s, modality: chat, endpoints: [{provider: %s, upstream_model: m-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}\n", s, s)
		}
	}
	for _, slug := range []string{"openai", "elevenlabs", "gemini", "deepgram"} {
		upstream := map[string]string{"openai": "tts-1", "elevenlabs": "eleven_turbo_v2_5", "gemini": "gemini-2.5-flash-preview-tts", "deepgram": "aura-2"}[slug]
		for _, s := range []string{slug, slug + "-quick"} {
			fmt.Fprintf(&models, "  - {id: tts/%s, modality: tts, endpoints: [{provider: %s, upstream_model: %s, pricing: {per_million_characters: 1}}]}\n", s, s, upstream)
		}
	}
	models.WriteString("  - {id: tts/espeak, modality: tts, endpoints: [{provider: espeak, pricing: {per_second: 0.000001}}]}\n")
	r.g = harness.Start(t, harness.WithConfig("providers:\n"+providers.String()+"models:\n"+models.String()))
	r.key, _ = r.g.Key(t, nil)
	return r
}

// fake is the upstream fake behind a slug.
func (r *deliveryRig) fake(slug string) *fakes.Fake {
	return map[string]*fakes.Fake{"openai": r.openai, "anthropic": r.anthropic, "gemini": r.gemini, "elevenlabs": r.elevenlabs,
		"deepgram": r.deepgram}[strings.TrimSuffix(slug, "-quick")]
}

// post sends a call and returns its response with the body unread.
func (r *deliveryRig) post(t *testing.T, ctx context.Context, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", r.g.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// chatBody is a call that asks for 50 words: enough for every fake's stream to be well past its first tokens at
// the stall points below.
func chatBody(model string, stream bool) map[string]any {
	return map[string]any{"model": model, "stream": stream, "max_tokens": 50,
		"messages": []any{map[string]any{"role": "user", "content": "Hi there"}}}
}

// streamed reads a chat stream to its end: the text of its deltas, and the last event's error, if it had one.
func streamed(t *testing.T, body io.Reader) (text string, errEvent map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
			Error   map[string]any
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, c := range ev.Choices {
			text += c.Delta.Content
		}
		if ev.Error != nil {
			errEvent = ev.Error
		}
	}
	return text, errEvent
}

// TestUpstreamTimeoutsAreFailures: a provider that goes quiet — before its first byte, or after its answer has
// begun — ends the call as failed by the provider's timeout, never as a caller who left, on every chat and speech
// provider, streamed or not. Before the answer: a 524 in the envelope, recorded with finish_reason "error" and a
// failure of status 524, not billed. After it began: a stream ends with an error event of code 524 (chat) or is cut
// (audio: never a clip that looks whole), recorded the same way (not cancelled), and billed only for what was
// delivered: chat's prompt and the tokens the caller got, speech nothing (a broken stream is not billed).
func TestUpstreamTimeoutsAreFailures(t *testing.T) {
	t.Parallel()
	failed := func(t *testing.T, r *deliveryRig, rec map[string]any) {
		t.Helper()
		if st := failureOf(t, r.g, rec); rec["finish_reason"] != "error" || rec["cancelled"] != false || st != "524" {
			t.Fatalf("record: finish %v, cancelled %v, failure %s; want a failure by timeout (error, false, 524)",
				rec["finish_reason"], rec["cancelled"], st)
		}
	}
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		r := newDeliveryRig(t)
		for _, slug := range []string{"openai-quick", "anthropic-quick", "gemini-quick"} {
			t.Run(slug, func(t *testing.T) {
				t.Parallel()
				for _, tc := range []struct {
					name   string
					step   fakes.Step
					stream bool
				}{
					{"no first byte, streamed", fakes.Step{Hold: make(chan struct{})}, true},
					{"no first byte", fakes.Step{Hold: make(chan struct{})}, false},
					{"quiet before the first token, streamed", fakes.Step{HoldAfter: 1}, true},
					{"quiet after the first tokens", fakes.Step{HoldAfter: 1500}, false},
					{"quiet after the first tokens, streamed", fakes.Step{HoldAfter: 1500}, true},
				} {
					r.fake(slug).Script(tc.step)
					resp := r.post(t, context.Background(), "/chat/completions", chatBody("chat/"+slug, tc.stream))
					if !tc.stream || tc.step.HoldAfter <= 1 {
						raw, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						harness.AssertError(t, harness.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}, 524)
						rec := generationOf(t, r.g, harness.Response{Header: resp.Header})
						failed(t, r, rec)
						if jsonString(rec["total_cost"]) != "0" {
							t.Fatalf("%s: billed %v for an answer nobody got", tc.name, rec["total_cost"])
						}
						continue
					}
					text, ev := streamed(t, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || text == "" || ev == nil || fmt.Sprint(ev["code"]) != "524" {
						t.Fatalf("%s: %d, %q, then %v; want the first tokens, then an error event of code 524", tc.name, resp.StatusCode, text, ev)
					}
					rec := generationOf(t, r.g, harness.Response{Header: resp.Header})
					failed(t, r, rec)
					// A micro-dollar a token: the bill is the prompt (the upstream's count, or the gateway's estimate)
					// and what the caller got, never more.
					delivered := chat.Tokens(text)
					if got := jsonString(rec["tokens_completion"]); got != fmt.Sprint(delivered) {
						t.Fatalf("%s: billed %s completion tokens, delivered %q (%d)", tc.name, got, text, delivered)
					}
					if cost := jsonString(rec["total_cost"]); cost == "0" {
						t.Fatalf("%s: what was delivered was not billed", tc.name)
					}
				}
			})
		}
	})
	t.Run("tts", func(t *testing.T) {
		t.Parallel()
		r := newDeliveryRig(t)
		for _, slug := range []string{"openai-quick", "elevenlabs-quick", "gemini-quick", "deepgram-quick"} {
			t.Run(slug, func(t *testing.T) {
				t.Parallel()
				body := map[string]any{"model": "tts/" + slug, "input": strings.Repeat("long text ", 50), "voice": "alloy"}
				r.fake(slug).Script(fakes.Step{Hold: make(chan struct{})})
				resp := r.post(t, context.Background(), "/audio/speech", body)
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				harness.AssertError(t, harness.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}, 524)
				failed(t, r, generationOf(t, r.g, harness.Response{Header: resp.Header}))

				r.fake(slug).Script(fakes.Step{HoldAfter: 10000})
				resp = r.post(t, context.Background(), "/audio/speech", body)
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 || err == nil {
					t.Fatalf("a stall mid-stream: %d, %d bytes, %v; want the first bytes, then a cut", resp.StatusCode, n, err)
				}
				rec := generationOf(t, r.g, harness.Response{Header: resp.Header})
				failed(t, r, rec)
				if jsonString(rec["total_cost"]) != "0" {
					t.Fatalf("a broken stream billed %v", rec["total_cost"])
				}
			})
		}
	})
	t.Run("video download", func(t *testing.T) {
		t.Parallel()
		r := newVideoRig(t, "")
		id := r.create(t, nil)
		r.poll(t, id)
		// The headers, then nothing: the answer has not begun, and it is a 524 in the envelope.
		r.openai.SetVideo(fakes.VideoScript{StallBody: true})
		harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 524)
		// The first bytes, then nothing: the download is cut, never a 200 that looks whole.
		r.openai.SetVideo(fakes.VideoScript{Size: 1 << 20, StallBody: true, StallAfter: 100_000})
		req, _ := http.NewRequest("GET", r.g.URL+"/videos/"+id+"/content", nil)
		req.Header.Set("Authorization", "Bearer "+r.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 || err == nil {
			t.Fatalf("a stall mid-download: %d, %d bytes, %v; want the first bytes, then a cut", resp.StatusCode, n, err)
		}
	})
}

// TestCallerWhoLeavesIsCancelled: a caller who hangs up mid-answer, on every chat and speech provider, the local
// espeak engine included, leaves a record of a cancelled call (finish_reason "cancelled", cancelled, the 200 it got),
// billed for what it was delivered; and the upstream call (or the engine) is stopped.
func TestCallerWhoLeavesIsCancelled(t *testing.T) {
	t.Parallel()
	r := newDeliveryRig(t)
	leave := func(t *testing.T, path string, body map[string]any, first int, fake *fakes.Fake) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		resp := r.post(t, ctx, path, body)
		if resp.StatusCode != 200 {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, first)); err != nil {
			t.Fatal(err)
		}
		cancel() // the caller goes away
		resp.Body.Close()
		if fake != nil {
			<-fake.Gone // the upstream call was cancelled (a leak would hold the test until it times out)
		}
		rec := generationOf(t, r.g, harness.Response{Header: resp.Header})
		if st := failureOf(t, r.g, rec); rec["finish_reason"] != "cancelled" || rec["cancelled"] != true || st != "null" {
			t.Fatalf("record: finish %v, cancelled %v, failure %s; want cancelled, no failure", rec["finish_reason"], rec["cancelled"], st)
		}
		if jsonString(rec["total_cost"]) == "0" {
			t.Fatal("what was delivered was not billed")
		}
	}
	for _, slug := range []string{"openai", "anthropic", "gemini"} {
		t.Run("chat/"+slug, func(t *testing.T) {
			r.fake(slug).Script(fakes.Step{HoldAfter: 1500})
			leave(t, "/chat/completions", chatBody("chat/"+slug, true), 100, r.fake(slug))
		})
	}
	for _, slug := range []string{"openai", "elevenlabs", "gemini", "deepgram"} {
		t.Run("tts/"+slug, func(t *testing.T) {
			r.fake(slug).Script(fakes.Step{HoldAfter: 10000})
			leave(t, "/audio/speech", map[string]any{"model": "tts/" + slug, "input": strings.Repeat("long text ", 50), "voice": "alloy"},
				1000, r.fake(slug))
		})
	}
	t.Run("tts/espeak", func(t *testing.T) {
		// Minutes of audio, more than any socket buffers: the engine is still making it when the caller leaves.
		leave(t, "/audio/speech", map[string]any{"model": "tts/espeak", "input": strings.Repeat("A long text to read aloud. ", 2000),
			"voice": "en"}, 100_000, nil)
	})
}
