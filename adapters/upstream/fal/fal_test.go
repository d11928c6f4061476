package fal_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/fal"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func client(f *fakes.Fal, key string, wait time.Duration) *fal.Client {
	return fal.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

func TestVideoFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewFal(t, "fal-key")
	fakes.CheckVideoFailures(t, f.Fake, func(wait time.Duration) *fal.Client { return client(f, "fal-key", wait) },
		fakes.VideoTarget{UpstreamID: "/fal-ai/kling-video/requests/req-job1", Output: video.Output{Ref: f.URL + "/files/job1-0.mp4"}},
		fakes.VideoErrors{
			RateLimited: fakes.Step{Status: 429, Body: fakes.FalRateLimited, Header: map[string]string{"Retry-After": "3"}},
			RetryAfter:  3 * time.Second,
			ServerError: fakes.FalServerError, Overloaded: fakes.FalOverloaded, BadInput: fakes.FalBadInput,
		})
}

// TestVideo: a Kling job through the queue: the reference's fields in the app's names, polled from queued to
// completed, and the video fetched from the CDN without the key, a range included.
func TestVideo(t *testing.T) {
	t.Parallel()
	f := fakes.NewFal(t, "fal-key")
	f.SetVideo(fakes.VideoScript{Polls: 2, Size: 70_000})
	c := client(f, "fal-key", fakes.Patient)
	seed, audio := int64(7), true
	id, st := fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "fal-ai/kling-video/v2.6/pro/image-to-video",
		Request: video.Request{Prompt: "a fox", Duration: 10, AspectRatio: "9:16", Seed: &seed, GenerateAudio: &audio,
			FrameImages: []video.Frame{{Type: "first_frame", URL: "https://img/a.png"}, {Type: "last_frame", URL: "data:image/png;base64,AA=="}}},
		Options: map[string]any{"negative_prompt": "blur", "prompt": "overridden"}}, 5)
	if id != "/fal-ai/kling-video/requests/req-job1" || st.Status != video.Completed || len(st.Outputs) != 1 {
		t.Fatalf("job %s: %+v", id, st)
	}
	reqs := f.Requests()
	var sent map[string]any
	_ = json.Unmarshal(reqs[0].Body, &sent)
	want := map[string]any{"prompt": "a fox", "duration": "10", "aspect_ratio": "9:16", "seed": 7.0, "generate_audio": true,
		"image_url": "https://img/a.png", "tail_image_url": "data:image/png;base64,AA==", "negative_prompt": "blur"}
	if reqs[0].Path != "/fal-ai/kling-video/v2.6/pro/image-to-video" || len(sent) != len(want) {
		t.Fatalf("sent %s %v", reqs[0].Path, sent)
	}
	for k, v := range want {
		if sent[k] != v {
			t.Fatalf("sent %s = %v, want %v", k, sent[k], v)
		}
	}
	if got := reqs[1].Path; got != "/fal-ai/kling-video/requests/req-job1/status" {
		t.Fatalf("polled %s", got)
	}
	fakes.CheckVideoContent(t, c, id, st.Outputs[0], 70_000)
	if n := f.Leaked(); n != 0 {
		t.Fatalf("the key went to the CDN %d times", n)
	}

	// Several videos, the way apps that make several answer.
	f.SetVideo(fakes.VideoScript{Outputs: 2})
	_, st = fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "fal-ai/wan-25-preview/text-to-video", Request: video.Request{Prompt: "x"}}, 2)
	if len(st.Outputs) != 2 {
		t.Fatalf("outputs %+v", st.Outputs)
	}
}

// TestVideoEnds: an app that refuses the input once it runs it, or whose checker flags the output, ends the job
// failed with its reason.
func TestVideoEnds(t *testing.T) {
	t.Parallel()
	f := fakes.NewFal(t, "fal-key")
	c := client(f, "fal-key", fakes.Patient)
	for _, tc := range []struct {
		script fakes.VideoScript
		reason string
	}{
		{fakes.VideoScript{Polls: 1, Fail: true}, "flagged by a content checker"},
		{fakes.VideoScript{Filtered: true}, "Output video flagged"},
	} {
		f.SetVideo(tc.script)
		_, st := fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "fal-ai/veo3.1", Request: video.Request{Prompt: "x"}}, 3)
		if st.Status != video.Failed || !strings.Contains(st.Error, tc.reason) {
			t.Fatalf("%+v: %+v", tc.script, st)
		}
	}
}

// TestVideoDialects: each family's names for duration, resolution and frames; what an app has no input for is
// refused before anything is sent, naming the field.
func TestVideoDialects(t *testing.T) {
	t.Parallel()
	f := fakes.NewFal(t, "fal-key")
	c := client(f, "fal-key", fakes.Patient)
	first := video.Frame{Type: "first_frame", URL: "https://img/f.png"}
	last := video.Frame{Type: "last_frame", URL: "https://img/l.png"}
	for _, tc := range []struct {
		app  string
		req  video.Request
		want map[string]any
	}{
		{"fal-ai/veo3.1/fast", video.Request{Duration: 8, Resolution: "1080p", FrameImages: []video.Frame{first}},
			map[string]any{"duration": "8s", "resolution": "1080p", "image_url": "https://img/f.png"}},
		{"fal-ai/veo3.1/first-last-frame-to-video", video.Request{FrameImages: []video.Frame{first, last}},
			map[string]any{"first_frame_url": "https://img/f.png", "last_frame_url": "https://img/l.png"}},
		{"fal-ai/veo3.1/reference-to-video", video.Request{InputReferences: []video.Reference{{Type: "image_url", URL: "https://img/r.png"}}},
			map[string]any{"image_urls": []any{"https://img/r.png"}}},
		{"fal-ai/minimax/hailuo-02/standard/image-to-video", video.Request{Duration: 6, Resolution: "768p", FrameImages: []video.Frame{first, last}},
			map[string]any{"duration": "6", "resolution": "768P", "image_url": "https://img/f.png", "end_image_url": "https://img/l.png"}},
		{"fal-ai/luma-dream-machine/ray-2", video.Request{Duration: 5}, map[string]any{"duration": "5s"}},
		{"fal-ai/bytedance/seedance/v1/pro/image-to-video", video.Request{Duration: 5, FrameImages: []video.Frame{first, last}},
			map[string]any{"duration": "5", "image_url": "https://img/f.png", "end_image_url": "https://img/l.png"}},
	} {
		f.Script()
		tc.req.Prompt = "p"
		if _, err := c.Submit(t.Context(), ports.VideoSubmission{UpstreamModel: tc.app, Request: tc.req}); err != nil {
			t.Fatalf("%s: %v", tc.app, err)
		}
		var sent map[string]any
		_ = json.Unmarshal(f.Requests()[0].Body, &sent)
		for k, v := range tc.want {
			if got, _ := json.Marshal(sent[k]); string(got) != mustJSON(v) {
				t.Errorf("%s: %s = %s, want %s", tc.app, k, got, mustJSON(v))
			}
		}
	}

	for _, tc := range []struct {
		app   string
		req   video.Request
		field string
	}{
		{"fal-ai/veo3.1", video.Request{FrameImages: []video.Frame{last}}, "frame_images"},
		{"fal-ai/kling-video/v2.1/master/text-to-video", video.Request{InputReferences: []video.Reference{{Type: "image_url", URL: "https://x"}}}, "input_references"},
		{"fal-ai/veo3.1/reference-to-video", video.Request{InputReferences: []video.Reference{{Type: "video_url", URL: "https://x"}}}, "input_references"},
		{"fal-ai/wan-25-preview/text-to-video", video.Request{Size: "1280x720"}, "size"},
	} {
		f.Script()
		tc.req.Prompt = "p"
		_, err := c.Submit(t.Context(), ports.VideoSubmission{UpstreamModel: tc.app, Request: tc.req})
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !ue.Retryable || !strings.HasPrefix(ue.Reason, tc.field+":") {
			t.Errorf("%s %+v: %v, want a refusal naming %s that another endpoint may take", tc.app, tc.req, err, tc.field)
		}
		if n := f.Calls(); n != 0 {
			t.Errorf("%s: refused after %d calls", tc.app, n)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
