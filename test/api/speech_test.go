package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// upstreams are one fake of each TTS provider, and a config that serves them.
type upstreams struct {
	openai     *fakes.OpenAI
	elevenlabs *fakes.ElevenLabs
	gemini     *fakes.Gemini
	deepgram   *fakes.Deepgram
	// timeout is every provider's timeout: 1 s, so that the tests of a provider that never answers are quick;
	// tests that hammer the fakes and expect answers raise it, since a loaded machine can stall a fake that long.
	timeout string
}

func newUpstreams(t *testing.T) *upstreams {
	return &upstreams{openai: fakes.NewOpenAI(t, "sk-up"), elevenlabs: fakes.NewElevenLabs(t, "xi-up", "alloy"),
		gemini: fakes.NewGemini(t, "g-up"), deepgram: fakes.NewDeepgram(t, "dg-up"), timeout: "1s"}
}

// config serves model "tts" from the endpoints named, in order.
func (u *upstreams) config(order ...string) string { return u.configWith("", order...) }

// configWith is config with extra top-level settings.
func (u *upstreams) configWith(extra string, order ...string) string {
	ep := map[string]string{
		"openai":     "{provider: openai, upstream_model: tts-1, pricing: {per_million_characters: 15}}",
		"elevenlabs": "{provider: elevenlabs, upstream_model: eleven_turbo_v2_5, pricing: {per_million_characters: 30}}",
		"gemini":     "{provider: gemini, upstream_model: gemini-2.5-flash-preview-tts, pricing: {per_second: 0.001}}",
		"deepgram":   "{provider: deepgram, upstream_model: aura-2, pricing: {per_million_characters: 30}}",
	}
	var eps []string
	for _, o := range order {
		eps = append(eps, ep[o])
	}
	return fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %[1]s, api_key: sk-up, timeout: %[7]s, idle_timeout: %[7]s}
  - {slug: elevenlabs, kind: elevenlabs, base_url: %[2]s, api_key: xi-up, timeout: %[7]s}
  - {slug: gemini, kind: google-ai-studio, base_url: %[3]s, api_key: g-up, timeout: %[7]s}
  - {slug: deepgram, kind: deepgram, base_url: %[4]s, api_key: dg-up, timeout: %[7]s}
models:
  - {id: tts, modality: tts, endpoints: [%[5]s]}
  - {id: video-model, modality: video, endpoints: [{provider: openai, upstream_model: sora-2}]}
%[6]s
`, u.openai.BaseURL(), u.elevenlabs.BaseURL(), u.gemini.BaseURL(), u.deepgram.BaseURL(), strings.Join(eps, ", "), extra, u.timeout)
}

func speak(t *testing.T, g *harness.Gateway, key string, body map[string]any, headers ...string) harness.Response {
	t.Helper()
	req := map[string]any{"model": "tts", "input": "Hello there", "voice": "alloy"}
	for k, v := range body {
		req[k] = v
	}
	return g.Do(t, "POST", "/audio/speech", key, req, headers...)
}

func generationOf(t *testing.T, g *harness.Gateway, r harness.Response) map[string]any {
	t.Helper()
	id := r.Header.Get("X-Generation-Id")
	if !strings.HasPrefix(id, "gen-") {
		t.Fatalf("no X-Generation-Id: %v", r.Header)
	}
	var rec map[string]any
	harness.Eventually(t, 5*time.Second, func() bool {
		resp := g.Do(t, "GET", "/generation?id="+id, g.Admin, nil)
		if resp.Status == 200 {
			rec = resp.JSON(t)["data"].(map[string]any)
		}
		return resp.Status == 200
	})
	return rec
}

func TestSpeechStreamsAndRecords(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, nil)

	r := speak(t, g, key, map[string]any{"session_id": "s-body", "user": "end-user-9"}, "X-Session-Id", "s-header",
		"HTTP-Referer", "https://app.example/page", "User-Agent", "test-agent/1")
	want, _ := io.ReadAll(fakes.Sine(fakes.PCMBytesFor("Hello there")))
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=24000;channels=1" || !bytes.Equal(r.Body, want) {
		t.Fatalf("pcm: %d %q %d bytes (want %d)", r.Status, r.Header.Get("Content-Type"), len(r.Body), len(want))
	}
	rec := generationOf(t, g, r)
	checks := map[string]string{"api_type": "tts", "model": "tts", "provider_name": "openai", "total_cost": "0.000165",
		"finish_reason": "stop", "streamed": "true", "cancelled": "false", "session_id": "s-body", "external_user": "end-user-9",
		"http_referer": "https://app.example/page", "user_agent": "test-agent/1", "upstream_id": "req_fake_openai",
		"tokens_prompt": "11", "num_media_completion": "1"}
	for k, v := range checks {
		if got := fmt.Sprint(jsonString(rec[k])); got != v && fmt.Sprint(rec[k]) != v {
			t.Errorf("record %s = %v, want %s", k, rec[k], v)
		}
	}
	if prs := rec["provider_responses"].([]any); len(prs) != 1 || jsonString(prs[0].(map[string]any)["status"]) != "200" {
		t.Errorf("provider_responses = %v", prs)
	}
	content := g.Do(t, "GET", "/generation/content?id="+rec["id"].(string), g.Admin, nil).JSON(t)["data"].(map[string]any)
	if msgs := content["input"].(map[string]any)["messages"].([]any); msgs[0].(map[string]any)["content"] != "Hello there" {
		t.Errorf("content input = %v", content["input"])
	}
	// The key's usage reflects the call (booked right after it, off the request path).
	harness.Eventually(t, 5*time.Second, func() bool {
		return jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"]) == "0.000165"
	})

	mp3 := speak(t, g, key, map[string]any{"response_format": "mp3"})
	if mp3.Status != 200 || mp3.Header.Get("Content-Type") != "audio/mpeg" || !bytes.HasPrefix(mp3.Body, []byte{0xFF, 0xFB}) {
		t.Fatalf("mp3: %d %q", mp3.Status, mp3.Header.Get("Content-Type"))
	}
	if got := g.Do(t, "GET", "/generation?id="+mp3.Header.Get("X-Generation-Id"), g.Admin, nil); got.Status != 200 {
		harness.Eventually(t, 5*time.Second, func() bool {
			return g.Do(t, "GET", "/generation?id="+mp3.Header.Get("X-Generation-Id"), g.Admin, nil).Status == 200
		})
	}
}

// TestSpeechFallbackOrder fails over, in the configured order, on failures another endpoint may not have.
func TestSpeechFallbackOrder(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("elevenlabs", "gemini", "deepgram", "openai")))
	key, _ := g.Key(t, nil)
	u.elevenlabs.Script(fakes.Step{Status: 429, Body: fakes.ElevenLabsConcurrency})
	u.gemini.Script(fakes.Step{Status: 503, Body: fakes.GeminiOverloaded})
	u.deepgram.Script(fakes.Step{Hold: make(chan struct{})}) // no first byte within its 1 s
	r := speak(t, g, key, nil)
	if r.Status != 200 || int64(len(r.Body)) != fakes.PCMBytesFor("Hello there") {
		t.Fatalf("fallback: %d %s", r.Status, r.Body)
	}
	rec := generationOf(t, g, r)
	var order []string
	for _, p := range rec["provider_responses"].([]any) {
		pm := p.(map[string]any)
		order = append(order, fmt.Sprintf("%s:%v", pm["provider_name"], jsonString(pm["status"])))
	}
	if strings.Join(order, ",") != "elevenlabs:429,gemini:503,deepgram:null,openai:200" || rec["provider_name"] != "openai" {
		t.Fatalf("attempts %v, provider %v", order, rec["provider_name"])
	}
	for name, f := range map[string]*fakes.Fake{"elevenlabs": u.elevenlabs.Fake, "gemini": u.gemini.Fake, "deepgram": u.deepgram.Fake, "openai": u.openai.Fake} {
		if f.Calls() != 1 {
			t.Errorf("%s called %d times, want once", name, f.Calls())
		}
	}
}

func TestSpeechStatuses(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("elevenlabs", "openai")))
	key, _ := g.Key(t, nil)
	hold := func() fakes.Step { return fakes.Step{Hold: make(chan struct{})} }
	tests := []struct {
		name       string
		eleven     fakes.Step
		openai     fakes.Step
		status     int
		retryAfter string
		openaiHit  bool
	}{
		{"last timed out", fakes.Step{Status: 500, Body: `{"detail":{"status":"error","message":"x"}}`}, hold(), 524, "", true},
		{"last overloaded", hold(), fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded}, 529, "", true},
		{"plain failures", fakes.Step{Status: 500, Body: `{"detail":"x"}`}, fakes.Step{Status: 500, Body: fakes.OpenAIServerError}, 502, "", true},
		{"our credentials rejected", fakes.Step{Status: 401, Body: `{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`},
			fakes.Step{Status: 500, Body: fakes.OpenAIServerError}, 502, "", true},
		{"the caller's input: no failover", fakes.Step{Status: 422, Body: `{"detail":[{"loc":["body","text"],"msg":"too long","type":"value_error"}]}`},
			fakes.Step{}, 400, "", false},
		// Last: each provider is then skipped until its Retry-After ends.
		{"every provider rate limits", fakes.Step{Status: 429, Body: fakes.ElevenLabsConcurrency, Header: map[string]string{"Retry-After": "7"}},
			fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "3"}}, 429, "3", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u.elevenlabs.Script(tt.eleven)
			u.openai.Script(tt.openai)
			r := speak(t, g, key, nil)
			e := harness.AssertError(t, r, tt.status)
			if r.Header.Get("Retry-After") != tt.retryAfter {
				t.Fatalf("Retry-After %q, want %q", r.Header.Get("Retry-After"), tt.retryAfter)
			}
			if (u.openai.Calls() == 1) != tt.openaiHit {
				t.Fatalf("second endpoint called %d times", u.openai.Calls())
			}
			meta := e["metadata"].(map[string]any)
			if meta["provider_reason"] == nil || strings.Contains(string(r.Body), "Invalid API key") || strings.Contains(string(r.Body), "sk-up") {
				t.Fatalf("metadata %v; body must hold a short reason and no upstream secret or raw body: %s", meta, r.Body)
			}
			if r.Header.Get("X-Generation-Id") == "" {
				t.Fatal("a failed call has no generation id")
			}
		})
	}
}

func TestSpeechRequestErrors(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, nil)
	tests := []struct {
		name   string
		body   any
		key    string
		status int
		field  string
	}{
		{"no model", map[string]any{"input": "x", "voice": "v"}, key, 400, "model"},
		{"no input", map[string]any{"model": "tts", "voice": "v"}, key, 400, "input"},
		{"no voice", map[string]any{"model": "tts", "input": "x"}, key, 400, "voice"},
		{"bad format", map[string]any{"model": "tts", "input": "x", "voice": "v", "response_format": "flac"}, key, 400, "response_format"},
		{"speed too high", map[string]any{"model": "tts", "input": "x", "voice": "v", "speed": 5}, key, 400, "speed"},
		{"speed not a number", map[string]any{"model": "tts", "input": "x", "voice": "v", "speed": "fast"}, key, 400, "speed"},
		{"options not an object", map[string]any{"model": "tts", "input": "x", "voice": "v", "provider": map[string]any{"options": map[string]any{"openai": 5}}}, key, 400, "provider.options.openai"},
		{"unknown model", map[string]any{"model": "nope", "input": "x", "voice": "v"}, key, 404, ""},
		{"not a TTS model", map[string]any{"model": "video-model", "input": "x", "voice": "v"}, key, 400, "model"},
		{"malformed JSON", `{"model":`, key, 400, ""},
		{"too large", `{"model":"tts","voice":"v","input":"` + strings.Repeat("a", 11<<20) + `"}`, key, 413, ""},
		{"management key", map[string]any{"model": "tts", "input": "x", "voice": "v"}, g.Admin, 403, ""},
		{"no key", map[string]any{"model": "tts", "input": "x", "voice": "v"}, "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := harness.AssertError(t, g.Do(t, "POST", "/audio/speech", tt.key, tt.body), tt.status)
			if tt.field != "" && !strings.Contains(e["message"].(string), tt.field) {
				t.Fatalf("message %q does not name %s", e["message"], tt.field)
			}
		})
	}
	if n := u.openai.Calls(); n != 0 {
		t.Fatalf("invalid requests reached the provider %d times", n)
	}
}

// TestSpeechNoRetryAfterFirstByte: once audio has gone to the caller, an upstream failure is not retried
// elsewhere; the caller sees an aborted response, not a truncated 200 that looks whole, and pays nothing.
func TestSpeechNoRetryAfterFirstByte(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai", "deepgram")))
	key, _ := g.Key(t, nil)
	u.openai.Script(fakes.Step{Abort: 20000})
	body, _ := json.Marshal(map[string]any{"model": "tts", "input": strings.Repeat("long text ", 20), "voice": "alloy"})
	req, _ := http.NewRequest("POST", g.URL+"/audio/speech", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("the response looked whole (%d bytes) though the upstream was cut", len(got))
	}
	if u.deepgram.Calls() != 0 {
		t.Fatal("retried after the first byte")
	}
	rec := generationOf(t, g, harness.Response{Header: resp.Header})
	if rec["finish_reason"] != "error" || jsonString(rec["total_cost"]) != "0" {
		t.Fatalf("record of a cut stream: finish %v cost %v", rec["finish_reason"], rec["total_cost"])
	}
}

// TestSpeechDisconnectCancelsUpstream: a caller who goes away mid-stream cancels the upstream call at once.
func TestSpeechDisconnectCancelsUpstream(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, nil)
	u.openai.Script(fakes.Step{HoldAfter: 10000}) // sends some audio, then waits as long as the call lasts
	body, _ := json.Marshal(map[string]any{"model": "tts", "input": strings.Repeat("long text ", 50), "voice": "alloy"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/audio/speech", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(bufio.NewReader(resp.Body), make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	cancel() // the caller goes away
	resp.Body.Close()
	select {
	case <-u.openai.Gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	rec := generationOf(t, g, harness.Response{Header: resp.Header})
	if rec["cancelled"] != true || rec["finish_reason"] != "cancelled" {
		t.Fatalf("record: cancelled %v finish %v", rec["cancelled"], rec["finish_reason"])
	}
}

// TestSpeechCallerLeavesBeforeUpstreamAnswers: a caller who goes away while the upstream has not answered yet (the
// gateway has sent nothing, so no write notices) cancels the upstream call too: net/http's server reads the
// connection once the request's body is read, and its end cancels the request's context. The call is recorded as
// cancelled.
func TestSpeechCallerLeavesBeforeUpstreamAnswers(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, nil)
	u.openai.Script(fakes.Step{Hold: make(chan struct{})}) // never answers
	body, _ := json.Marshal(map[string]any{"model": "tts", "input": "hello", "voice": "alloy"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/audio/speech", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	harness.Eventually(t, 10*time.Second, func() bool { return len(u.openai.Requests()) == 1 })
	cancel() // the caller goes away
	if err := <-done; err == nil {
		t.Fatal("answered though the upstream never did")
	}
	select {
	case <-u.openai.Gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	if rec := onlyGeneration(t, g); rec["cancelled"] != true || rec["finish_reason"] != "cancelled" {
		t.Fatalf("record: cancelled %v finish %v", rec["cancelled"], rec["finish_reason"])
	}
}

// TestSpeechCallerLeavesAfterAPipelinedByte: a caller who sends one byte past its request (the start of a pipelined
// request) and then closes its connection. A byte that came with the request is in net/http's read buffer: its
// background read of the connection, from the end of the body on, sees the close at once, as for any caller who
// leaves. A byte that comes later is what that read gets: net/http keeps it for the next request and stops reading,
// so the close is not seen while the gateway has nothing to write (docs/http.md); the gateway's next write fails and
// cancels the call: a stream stops there, and a call still waiting on its upstream stops at the first write after
// the upstream answered. Every way, the upstream call is cancelled and the call recorded as cancelled.
func TestSpeechCallerLeavesAfterAPipelinedByte(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		withTheRequest    bool // the byte comes in the request's last write; otherwise once the gateway read the body
		midWait, answered bool // the caller leaves before the upstream answers; the upstream answers after it left
	}{
		{"with the request, mid-wait: noticed at once", true, true, false},
		{"after the request, mid-wait: noticed at the first write", false, true, true},
		{"with the request, mid-stream", true, false, false},
		{"after the first bytes, mid-stream", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := newUpstreams(t)
			u.timeout = "1m" // no provider timeout ends a call the test waits on
			g := harness.Start(t, harness.WithConfig(u.config("openai")))
			key, _ := g.Key(t, nil)
			hold := make(chan struct{})
			step := fakes.Step{Size: 256 << 20} // longer than any socket buffers: the gateway writes until a write fails
			if tt.midWait {
				step.Hold = hold
			}
			u.openai.Script(step)
			body := `{"model":"tts","input":"hello","voice":"alloy","response_format":"pcm"}`
			conn, err := net.Dial("tcp", strings.TrimPrefix(g.Root, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			req := fmt.Sprintf("POST /api/v1/audio/speech HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
			if tt.withTheRequest {
				req += "P"
			}
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			if tt.midWait {
				harness.Eventually(t, 10*time.Second, func() bool { return len(u.openai.Requests()) == 1 })
			} else {
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("%v %v", resp, err)
				}
				if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
					t.Fatal(err)
				}
			}
			if !tt.withTheRequest {
				if _, err := io.WriteString(conn, "P"); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close() // with the rest of the answer unread, if any came
			if tt.answered {
				close(hold)
			}
			select {
			case <-u.openai.Gone:
			case <-time.After(20 * time.Second):
				t.Fatal("the upstream call was not cancelled")
			}
			if rec := onlyGeneration(t, g); rec["cancelled"] != true || rec["finish_reason"] != "cancelled" {
				t.Fatalf("record: cancelled %v finish %v", rec["cancelled"], rec["finish_reason"])
			}
		})
	}
}

// onlyGeneration is the record of the one call the gateway has recorded, read through the API once the recorder
// wrote it (a caller who left never saw its id).
func onlyGeneration(t *testing.T, g *harness.Gateway) map[string]any {
	t.Helper()
	db, err := gorm.Open(postgres.Open(g.DatabaseURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	var ids []string
	harness.Eventually(t, 10*time.Second, func() bool {
		ids = nil
		return db.Raw("SELECT id FROM generations").Scan(&ids).Error == nil && len(ids) > 0
	})
	if len(ids) != 1 {
		t.Fatalf("%d records, want 1", len(ids))
	}
	return generationOf(t, g, harness.Response{Header: http.Header{"X-Generation-Id": {ids[0]}}})
}

// TestSpeechOptions forwards only the matched provider's options, under the canonical fields, without callback
// or URL-valued keys; other and unknown slugs are ignored.
func TestSpeechOptions(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	g := harness.Start(t, harness.WithConfig(u.config("openai")))
	key, _ := g.Key(t, nil)
	r := speak(t, g, key, map[string]any{"provider": map[string]any{"options": map[string]any{
		"openai":     map[string]any{"instructions": "whisper", "voice": "echo", "model": "other", "callback_url": "https://x", "webhook": "y", "reference": "http://169.254.169.254/"},
		"elevenlabs": map[string]any{"seed": 1},
		"not-real":   map[string]any{"x": 1},
	}}})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var body map[string]any
	_ = json.Unmarshal(u.openai.Requests()[0].Body, &body)
	if body["instructions"] != "whisper" || body["voice"] != "alloy" || body["model"] != "tts-1" || body["seed"] != nil ||
		body["callback_url"] != nil || body["webhook"] != nil || body["reference"] != nil || body["x"] != nil || body["response_format"] != "pcm" {
		t.Fatalf("forwarded body %v", body)
	}
}
