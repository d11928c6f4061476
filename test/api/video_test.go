package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

type videoRig struct {
	g      *harness.Gateway
	openai *fakes.OpenAI
	gemini *fakes.Gemini
	clock  *harness.Clock
	key    string
}

func videoConfig(o *fakes.OpenAI, gm *fakes.Gemini, extra string) string {
	return fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up, timeout: 2s, idle_timeout: 1s}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-up, timeout: 2s, idle_timeout: 1s}
models:
  - {id: sora, modality: video, endpoints: [{provider: openai, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
  - {id: veo, modality: video, endpoints: [{provider: gemini, upstream_model: veo-3.1-generate-preview, pricing: {per_second: 0.4}}]}
  - {id: speech, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1}]}
video:
  poll_interval: 1s
  worker_interval: 1h
%s
`, o.BaseURL(), gm.BaseURL(), extra)
}

func newVideoRig(t *testing.T, extra string, opts ...harness.Option) *videoRig {
	r := &videoRig{openai: fakes.NewOpenAI(t, "sk-up"), gemini: fakes.NewGemini(t, "g-up"),
		clock: harness.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC))}
	r.g = harness.Start(t, append([]harness.Option{harness.WithClock(r.clock),
		harness.WithConfig(videoConfig(r.openai, r.gemini, extra))}, opts...)...)
	r.key, _ = r.g.Key(t, nil)
	return r
}

func (r *videoRig) create(t *testing.T, body map[string]any) string {
	t.Helper()
	req := map[string]any{"model": "sora", "prompt": "a cat on a skateboard", "duration": 8}
	for k, v := range body {
		req[k] = v
	}
	resp := r.g.Do(t, "POST", "/videos", r.key, req)
	if resp.Status != http.StatusAccepted {
		t.Fatalf("create: %d %s", resp.Status, resp.Body)
	}
	harness.AssertShape(t, resp.JSON(t), `{id:string,polling_url:string,status:string}`)
	job := resp.JSON(t)
	if job["status"] != "pending" || !strings.HasPrefix(job["id"].(string), "gen-vid-") ||
		job["polling_url"] != r.g.URL+"/videos/"+job["id"].(string) {
		t.Fatalf("job %v", job)
	}
	return job["id"].(string)
}

// poll advances the clock past the poll interval and reads the job.
func (r *videoRig) poll(t *testing.T, id string) map[string]any {
	t.Helper()
	r.clock.Advance(2 * time.Second)
	resp := r.g.Do(t, "GET", "/videos/"+id, r.key, nil)
	if resp.Status != 200 {
		t.Fatalf("poll: %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)
}

func TestVideoLifecycle(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	r.openai.SetVideo(fakes.VideoScript{Polls: 2, Size: 300_000, ExpiresAt: r.clock.Now().Add(time.Hour)})
	id := r.create(t, map[string]any{"resolution": "720p", "aspect_ratio": "16:9", "session_id": "s1"})
	var sent map[string]any
	_ = json.Unmarshal(r.openai.Requests()[0].Body, &sent)
	if sent["size"] != "1280x720" || sent["seconds"] != "8" || sent["model"] != "sora-2" {
		t.Fatalf("sent to the provider: %v", sent)
	}

	if st := r.poll(t, id)["status"]; st != "pending" {
		t.Fatalf("first poll: %v", st)
	}
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 409) // not done yet
	if st := r.poll(t, id)["status"]; st != "in_progress" {
		t.Fatalf("second poll: %v", st)
	}
	done := r.poll(t, id)
	harness.AssertShape(t, done, `{generation_id:string,id:string,polling_url:string,status:string,unsigned_urls:[string],usage:{cost:number,is_byok:boolean}}`)
	if done["status"] != "completed" || jsonString(done["usage"].(map[string]any)["cost"]) != "0.8" ||
		done["unsigned_urls"].([]any)[0] != r.g.URL+"/videos/"+id+"/content?index=0" {
		t.Fatalf("completed job %v", done)
	}
	// The generation record: api_type video, priced per second.
	rec := r.g.Do(t, "GET", "/generation?id="+done["generation_id"].(string), r.key, nil)
	harness.Eventually(t, 5*time.Second, func() bool {
		rec = r.g.Do(t, "GET", "/generation?id="+done["generation_id"].(string), r.key, nil)
		return rec.Status == 200
	})
	if d := rec.JSON(t)["data"].(map[string]any); d["api_type"] != "video" || jsonString(d["total_cost"]) != "0.8" ||
		d["finish_reason"] != "completed" || d["session_id"] != "s1" {
		t.Fatalf("record %v", d)
	}

	// Content: the bytes, their length, and ranges passed through.
	full := r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil)
	want, _ := io.ReadAll(fakes.NewVideoBytes(300_000))
	if full.Status != 200 || full.Header.Get("Content-Type") != "video/mp4" || full.Header.Get("Content-Length") != "300000" ||
		!bytes.Equal(full.Body, want) {
		t.Fatalf("content: %d %v (%d bytes)", full.Status, full.Header, len(full.Body))
	}
	part := r.g.Do(t, "GET", "/videos/"+id+"/content?index=0", r.key, nil, "Range", "bytes=1000-1999")
	if part.Status != 206 || part.Header.Get("Content-Range") != "bytes 1000-1999/300000" || !bytes.Equal(part.Body, want[1000:2000]) {
		t.Fatalf("range: %d %v", part.Status, part.Header)
	}
	// A range RFC 9110 calls invalid (its last before its first) is ignored, not forwarded: the whole content.
	invalid := r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil, "Range", "bytes=1999-1000")
	last := r.openai.Requests()[len(r.openai.Requests())-1]
	if invalid.Status != 200 || invalid.Header.Get("Content-Range") != "" || !bytes.Equal(invalid.Body, want) ||
		last.Header.Get("Range") != "" {
		t.Fatalf("invalid range: %d %v, the provider got Range %q", invalid.Status, invalid.Header, last.Header.Get("Range"))
	}
	for name, values := range full.Header {
		for _, v := range values {
			if strings.Contains(v, r.openai.URL) || strings.Contains(v, "sk-up") {
				t.Fatalf("the provider's address or key reached the caller: %s: %s", name, v)
			}
		}
	}

	// Outputs past their expiry: the job reads as expired and its content is gone.
	r.clock.Advance(2 * time.Hour)
	if st := r.g.Do(t, "GET", "/videos/"+id, r.key, nil).JSON(t)["status"]; st != "expired" {
		t.Fatalf("after expiry: %v", st)
	}
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 410)
}

func TestVideoContentErrors(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	r.openai.SetVideo(fakes.VideoScript{Polls: 0})
	id := r.create(t, nil)
	r.poll(t, id) // completes at once
	other := r.g.Workspace(t, "elsewhere")
	theirs, _ := r.g.Key(t, map[string]any{"workspace_id": other})
	tests := []struct {
		name   string
		path   string
		key    string
		status int
	}{
		{"index past the outputs", "/videos/" + id + "/content?index=1", r.key, 404},
		{"index not a number", "/videos/" + id + "/content?index=abc", r.key, 400},
		{"negative index", "/videos/" + id + "/content?index=-1", r.key, 400},
		{"empty index", "/videos/" + id + "/content?index=", r.key, 400},
		{"unknown job", "/videos/gen-vid-0-nope/content", r.key, 404},
		{"unknown job status", "/videos/gen-vid-0-nope", r.key, 404},
		{"another workspace", "/videos/" + id, theirs, 404},
		{"another workspace's content", "/videos/" + id + "/content", theirs, 404},
		{"no key", "/videos/" + id + "/content", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := harness.AssertError(t, r.g.Do(t, "GET", tt.path, tt.key, nil), tt.status)
			if tt.status == 400 && !strings.Contains(e["message"].(string), "index") {
				t.Fatalf("400 does not name index: %v", e["message"])
			}
		})
	}
	if r := r.g.Do(t, "GET", "/videos/"+id, r.g.Admin, nil); r.Status != 200 {
		t.Fatalf("a management key cannot see the job: %d", r.Status)
	}
	// The provider dropped the file: gone. A range outside it: 416.
	r.openai.SetVideo(fakes.VideoScript{Expired: true})
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 410)
	r.openai.SetVideo(fakes.VideoScript{})
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil, "Range", "bytes=99999999-"), 416)
	// A Range header past the bound is refused, never forwarded; a provider that times out is a 524, as for speech.
	calls := len(r.openai.Requests())
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil, "Range", "bytes=0-"+strings.Repeat("1", 60<<10)), 416)
	if n := len(r.openai.Requests()); n != calls {
		t.Fatalf("an oversized Range reached the provider (%d calls)", n-calls)
	}
	r.openai.SetVideo(fakes.VideoScript{Stall: true})
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 524)
}

// TestVideoDownloadCut: the upstream breaks off mid-download; the caller sees an aborted response, never a
// truncated 200 that looks whole, with and without Content-Length.
func TestVideoDownloadCut(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	id := r.create(t, nil)
	r.poll(t, id)
	for _, chunked := range []bool{false, true} {
		r.openai.SetVideo(fakes.VideoScript{Size: 1 << 20, Cut: 200_000, Chunked: chunked})
		req, _ := http.NewRequest("GET", r.g.URL+"/videos/"+id+"/content", nil)
		req.Header.Set("Authorization", "Bearer "+r.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("chunked=%v: a cut download read as whole (%d bytes, status %d)", chunked, n, resp.StatusCode)
		}
	}
}

func TestVideoFailedAndValidation(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	r.openai.SetVideo(fakes.VideoScript{Polls: 1, Fail: true})
	id := r.create(t, nil)
	r.poll(t, id)
	failed := r.poll(t, id)
	harness.AssertShape(t, failed, `{error:string,generation_id:string,id:string,polling_url:string,status:string,usage:{cost:number,is_byok:boolean}}`)
	if failed["status"] != "failed" || !strings.Contains(failed["error"].(string), "moderation") {
		t.Fatalf("failed job %v", failed)
	}
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 409)

	tests := []struct {
		body   map[string]any
		key    string
		status int
		field  string
	}{
		{map[string]any{"prompt": "x"}, r.key, 400, "model"},
		{map[string]any{"model": "sora"}, r.key, 400, "prompt"},
		{map[string]any{"model": "sora", "prompt": "x", "duration": 0}, r.key, 400, "duration"},
		{map[string]any{"model": "sora", "prompt": "x", "duration": 2.5}, r.key, 400, "duration"},
		{map[string]any{"model": "sora", "prompt": "x", "resolution": "8K"}, r.key, 400, "resolution"},
		{map[string]any{"model": "sora", "prompt": "x", "aspect_ratio": "5:4"}, r.key, 400, "aspect_ratio"},
		{map[string]any{"model": "sora", "prompt": "x", "size": "big"}, r.key, 400, "size"},
		{map[string]any{"model": "sora", "prompt": "x", "frame_images": []any{map[string]any{"image_url": map[string]any{"url": "ftp://x"}, "frame_type": "first_frame"}}}, r.key, 400, "frame_images[0]"},
		{map[string]any{"model": "sora", "prompt": "x", "duration": 5}, r.key, 400, "seconds"}, // the provider's own 400
		{map[string]any{"model": "sora", "prompt": "x", "callback_url": "https://example.com/hook"}, r.key, 400, "callback_url"},
		{map[string]any{"model": "sora", "prompt": "x", "previous_job_id": "gen-vid-1-x"}, r.key, 400, "previous_job_id"},
		{map[string]any{"model": "nope", "prompt": "x"}, r.key, 404, ""},
		{map[string]any{"model": "speech", "prompt": "x"}, r.key, 400, "model"},
		{map[string]any{"model": "sora", "prompt": "x"}, r.g.Admin, 403, ""},
		{map[string]any{"model": "sora", "prompt": "x"}, "", 401, ""},
	}
	for _, tt := range tests {
		e := harness.AssertError(t, r.g.Do(t, "POST", "/videos", tt.key, tt.body), tt.status)
		if tt.field != "" && !strings.Contains(e["message"].(string), tt.field) {
			t.Errorf("%v: message %q does not name %s", tt.body, e["message"], tt.field)
		}
	}
}

// TestVeo: several outputs per job, each downloadable; the file download redirects to storage, and the API key
// never follows it there.
func TestVeo(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	r.gemini.SetVideo(fakes.VideoScript{Polls: 1, Outputs: 2, Size: 50_000})
	id := r.create(t, map[string]any{"model": "veo", "aspect_ratio": "9:16", "resolution": "1080p", "seed": 42,
		"frame_images": []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}, "frame_type": "first_frame"}},
		"provider":     map[string]any{"options": map[string]any{"google-ai-studio": map[string]any{"x": 1}, "gemini": map[string]any{"parameters": map[string]any{"negativePrompt": "rain", "aspectRatio": "1:1"}}}}})
	var sent struct {
		Instances []map[string]any `json:"instances"`
		Params    map[string]any   `json:"parameters"`
	}
	_ = json.Unmarshal(r.gemini.Requests()[0].Body, &sent)
	if sent.Params["aspectRatio"] != "9:16" || sent.Params["negativePrompt"] != "rain" || sent.Params["durationSeconds"] != 8.0 ||
		sent.Instances[0]["image"].(map[string]any)["mimeType"] != "image/png" {
		t.Fatalf("sent %+v", sent)
	}
	r.poll(t, id)
	done := r.poll(t, id)
	urls := done["unsigned_urls"].([]any)
	if done["status"] != "completed" || len(urls) != 2 || jsonString(done["usage"].(map[string]any)["cost"]) != "3.2" {
		t.Fatalf("veo job %v", done)
	}
	want, _ := io.ReadAll(fakes.NewVideoBytes(50_000))
	for i := range urls {
		c := r.g.Do(t, "GET", fmt.Sprintf("/videos/%s/content?index=%d", id, i), r.key, nil)
		if c.Status != 200 || !bytes.Equal(c.Body, want) {
			t.Fatalf("output %d: %d, %d bytes", i, c.Status, len(c.Body))
		}
	}
	part := r.g.Do(t, "GET", "/videos/"+id+"/content?index=1", r.key, nil, "Range", "bytes=0-23")
	if part.Status != 206 || !bytes.Equal(part.Body, want[:24]) {
		t.Fatalf("range through the redirect: %d", part.Status)
	}
	if n := r.gemini.Storage.Leaked(); n != 0 {
		t.Fatalf("the API key followed the redirect to storage %d times", n)
	}
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content?index=2", r.key, nil), 404)
	// Google keeps the files 48 hours, counted on the gateway's clock from the job's end.
	r.clock.Advance(47 * time.Hour)
	if st := r.g.Do(t, "GET", "/videos/"+id, r.key, nil).JSON(t)["status"]; st != "completed" {
		t.Fatalf("47 hours on: %v", st)
	}
	r.clock.Advance(time.Hour)
	if st := r.g.Do(t, "GET", "/videos/"+id, r.key, nil).JSON(t)["status"]; st != "expired" {
		t.Fatalf("48 hours on: %v", st)
	}
	harness.AssertError(t, r.g.Do(t, "GET", "/videos/"+id+"/content", r.key, nil), 410)

	r.gemini.SetVideo(fakes.VideoScript{Filtered: true})
	filtered := r.create(t, map[string]any{"model": "veo"})
	if j := r.poll(t, filtered); j["status"] != "failed" || !strings.Contains(j["error"].(string), "safety") {
		t.Fatalf("filtered job %v", j)
	}
}

// TestVideoPolling: the gateway polls no more often than the interval, and the background worker finishes jobs
// nobody polls; a restart with jobs in flight loses none.
func TestVideoPolling(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	r.openai.SetVideo(fakes.VideoScript{Polls: 3})
	id := r.create(t, nil)
	calls := func() int { return r.openai.Calls() - 1 } // less the create
	r.poll(t, id)
	for range 3 { // no time passes: no new poll
		r.g.Do(t, "GET", "/videos/"+id, r.key, nil)
	}
	if n := calls(); n != 1 {
		t.Fatalf("%d polls without time passing, want 1", n)
	}

	// Restart: a new gateway on the same database picks the job up and finishes it.
	r.g.Stop()
	g2 := harness.Start(t, harness.WithClock(r.clock), harness.WithEnv("DATABASE_URL", r.g.DatabaseURL),
		harness.WithConfig(videoConfig(r.openai, r.gemini, "")))
	var st any
	for range 4 {
		r.clock.Advance(2 * time.Second)
		st = g2.Do(t, "GET", "/videos/"+id, r.key, nil).JSON(t)["status"]
	}
	if st != "completed" {
		t.Fatalf("after a restart the job is %v", st)
	}

	// The worker: nobody polls this job, yet it completes.
	r.openai.SetVideo(fakes.VideoScript{Polls: 1})
	id2 := g2.Do(t, "POST", "/videos", r.key, map[string]any{"model": "sora", "prompt": "unwatched"}).JSON(t)["id"].(string)
	for range 3 {
		r.clock.Advance(2 * time.Second)
		g2.App.Videos.PollDue(t.Context()) // what the worker runs on its tick
	}
	job, err := g2.App.Videos.Get(t.Context(), adminPrincipal(t, g2), id2)
	if err != nil || job.Status != "completed" {
		t.Fatalf("the worker did not complete the job: %v %v", job.Status, err)
	}
}

func adminPrincipal(t *testing.T, g *harness.Gateway) account.Principal {
	t.Helper()
	p, err := g.App.Accounts.Authenticate(t.Context(), g.Admin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVideoPolicies(t *testing.T) {
	t.Parallel()
	r := newVideoRig(t, "")
	p, _ := r.g.App.Accounts.Authenticate(t.Context(), r.key)
	gr := createGuardrail(t, r.g, `{"name":"video-budget","limit_usd":1.2,"reset_interval":"daily"}`)
	if resp := r.g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", r.g.Admin, map[string]any{"key_hashes": []string{p.KeyHash}}); resp.Status != 200 {
		t.Fatal(resp.Status)
	}
	r.openai.SetVideo(fakes.VideoScript{Polls: 1})
	first := r.create(t, nil) // 8 s at $0.10: $0.80 reserved while it runs
	e := harness.AssertError(t, r.g.Do(t, "POST", "/videos", r.key, map[string]any{"model": "sora", "prompt": "x", "duration": 8}), 403)
	if e["metadata"].(map[string]any)["guardrail_id"] != gr {
		t.Fatalf("refusal: %v", e)
	}
	r.poll(t, first)
	if st := r.poll(t, first)["status"]; st != "completed" {
		t.Fatalf("first job: %v", st)
	}
	// Settled at $0.80: $0.40 remains, enough for one 4 s job (no refusal while room remains) but not two.
	if resp := r.g.Do(t, "POST", "/videos", r.key, map[string]any{"model": "sora", "prompt": "x", "duration": 4}); resp.Status != 202 {
		t.Fatalf("refused with room left: %d %s", resp.Status, resp.Body)
	}
	harness.AssertError(t, r.g.Do(t, "POST", "/videos", r.key, map[string]any{"model": "sora", "prompt": "x", "duration": 4}), 403)

	// Credits: none left is a 402 before the provider is asked.
	c := newVideoRig(t, "credits:\n  enabled: true")
	calls := c.openai.Calls()
	e = harness.AssertError(t, c.g.Do(t, "POST", "/videos", c.key, map[string]any{"model": "sora", "prompt": "x"}), 402)
	if e["metadata"].(map[string]any)["limit_source"] != "credits" || c.openai.Calls() != calls {
		t.Fatalf("402: %v", e)
	}
}

// TestVideoEnds: through fal, a job that completes is billed once at the rate of its sound (the model's
// default), however often it is read; one the provider fails, and one still running past video.job_timeout, end
// failed, recorded once, unbilled, in the reference's shape. What the model's configuration or the provider
// cannot take is a 400 naming the field, and no provider is asked.
func TestVideoEnds(t *testing.T) {
	t.Parallel()
	fal := fakes.NewFal(t, "fal-up")
	clock := harness.NewClock(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: fal, kind: fal, base_url: %s, api_key: fal-up, timeout: 2s, idle_timeout: 1s}
models:
  - id: kling
    modality: video
    video: {durations: [5, 10], generate_audio: true, default: {duration: 5, generate_audio: true}}
    endpoints: [{provider: fal, upstream_model: fal-ai/kling-video/v2.6/pro/text-to-video, pricing: {per_second: 0.07, per_second_with_audio: 0.14}}]
video: {poll_interval: 1s, worker_interval: 1h, job_timeout: 1h}
`, fal.BaseURL())))
	key, _ := g.Key(t, nil)
	create := func(body map[string]any) string {
		t.Helper()
		resp := g.Do(t, "POST", "/videos", key, body)
		if resp.Status != http.StatusAccepted {
			t.Fatalf("create: %d %s", resp.Status, resp.Body)
		}
		return resp.JSON(t)["id"].(string)
	}
	read := func(id string) map[string]any {
		t.Helper()
		clock.Advance(2 * time.Second)
		return g.Do(t, "GET", "/videos/"+id, key, nil).JSON(t)
	}
	record := func(genID string) map[string]any {
		t.Helper()
		var rec harness.Response
		harness.Eventually(t, 5*time.Second, func() bool {
			rec = g.Do(t, "GET", "/generation?id="+genID, key, nil)
			return rec.Status == 200
		})
		return rec.JSON(t)["data"].(map[string]any)
	}
	usage := func() string {
		return jsonString(g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["usage"])
	}

	// Completed: 5 s (the model's default) with sound (its default) at $0.14: $0.70, booked once.
	fal.SetVideo(fakes.VideoScript{Polls: 1})
	id := create(map[string]any{"model": "kling", "prompt": "a kite"})
	read(id)
	done := read(id)
	for range 3 {
		read(id)
	}
	if done["status"] != "completed" || jsonString(done["usage"].(map[string]any)["cost"]) != "0.7" {
		t.Fatalf("completed: %v", done)
	}
	if d := record(done["generation_id"].(string)); jsonString(d["total_cost"]) != "0.7" || d["finish_reason"] != "completed" {
		t.Fatalf("record %v", d)
	}
	harness.Eventually(t, 5*time.Second, func() bool { return usage() == "0.7" })

	// Failed by the provider, and timed out: recorded as failed, unbilled.
	fal.SetVideo(fakes.VideoScript{Polls: 1, Fail: true})
	failed := create(map[string]any{"model": "kling", "prompt": "a kite", "duration": 10, "generate_audio": false})
	read(failed)
	read(failed) // ends: the fake's script is the current one, for every job
	fal.SetVideo(fakes.VideoScript{Polls: 1 << 20})
	stuck := create(map[string]any{"model": "kling", "prompt": "a kite"})
	read(stuck)
	clock.Advance(time.Hour)
	for _, tc := range []struct{ id, reason string }{{failed, "flagged by a content checker"}, {stuck, "did not finish the job within 1h0m0s"}} {
		j := read(tc.id)
		harness.AssertShape(t, j, `{error:string,generation_id:string,id:string,polling_url:string,status:string,usage:{cost:number,is_byok:boolean}}`)
		if j["status"] != "failed" || !strings.Contains(j["error"].(string), tc.reason) || jsonString(j["usage"].(map[string]any)["cost"]) != "0" {
			t.Fatalf("job %v", j)
		}
		if d := record(j["generation_id"].(string)); jsonString(d["total_cost"]) != "0" || d["finish_reason"] != "failed" {
			t.Fatalf("record %v", d)
		}
		harness.AssertError(t, g.Do(t, "GET", "/videos/"+tc.id+"/content", key, nil), 409)
	}
	if u := usage(); u != "0.7" {
		t.Fatalf("usage %s after two jobs that did not complete", u)
	}

	// Refused before any provider call: the configuration's durations, and what fal's apps take.
	calls := fal.Calls()
	for field, body := range map[string]map[string]any{
		"duration": {"model": "kling", "prompt": "x", "duration": 6},
		"size":     {"model": "kling", "prompt": "x", "size": "1280x720"},
	} {
		e := harness.AssertError(t, g.Do(t, "POST", "/videos", key, body), 400)
		if !strings.HasPrefix(e["message"].(string), field+":") {
			t.Errorf("%s: %v", field, e["message"])
		}
	}
	if n := fal.Calls(); n != calls {
		t.Fatalf("refusals reached the provider (%d calls)", n-calls)
	}
}
