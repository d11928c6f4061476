package minimax_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/minimax"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func client(f *fakes.MiniMax, key string, wait time.Duration) *minimax.Client {
	return minimax.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

func TestVideoFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewMiniMax(t, "mm-key")
	fakes.CheckVideoFailures(t, f.Fake, func(wait time.Duration) *minimax.Client { return client(f, "mm-key", wait) },
		fakes.VideoTarget{UpstreamID: "11", Output: video.Output{Ref: "21"}},
		fakes.VideoErrors{
			RateLimited: fakes.Step{Status: 429, Body: fakes.MiniMaxRateLimited, Header: map[string]string{"Retry-After": "5"}},
			RetryAfter:  5 * time.Second,
			ServerError: fakes.MiniMaxServerError, Overloaded: fakes.MiniMaxOverloaded, BadInput: fakes.MiniMaxBadInput,
		})
}

// TestVideoStatusCodes: MiniMax's failures come with HTTP 200 and a base_resp code, classified as the status each
// stands for.
func TestVideoStatusCodes(t *testing.T) {
	t.Parallel()
	f := fakes.NewMiniMax(t, "mm-key")
	for _, tc := range []struct {
		name      string
		body      string
		kind      domain.Kind
		retryable bool
		reason    string
	}{
		{"rate limited", fakes.MiniMaxRateLimited, domain.KindRateLimited, true, "rate limiting"},
		{"bad params", fakes.MiniMaxBadInput, domain.KindInvalid, false, "duration should be 6 or 10"},
		{"sensitive prompt", fakes.MiniMaxSensitive, domain.KindInvalid, false, "sensitive"},
		{"no balance", fakes.MiniMaxNoBalance, domain.KindUpstream, true, "out of quota"},
		{"unknown error", fakes.MiniMaxServerError, domain.KindUpstream, true, "failed (500)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Script(fakes.MiniMaxStatus(tc.body))
			_, err := client(f, "mm-key", fakes.Patient).Submit(t.Context(), ports.VideoSubmission{UpstreamModel: "MiniMax-Hailuo-2.3", Request: video.Request{Prompt: "x"}})
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != tc.kind || ue.Retryable != tc.retryable || !strings.Contains(ue.Reason, tc.reason) || ue.Raw == "" {
				t.Fatalf("%v: %+v", err, ue)
			}
		})
	}
	// A wrong key: MiniMax's 1004, the gateway's credentials.
	_, err := client(f, "wrong", fakes.Patient).Submit(t.Context(), ports.VideoSubmission{UpstreamModel: "m", Request: video.Request{Prompt: "x"}})
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 401 || !strings.Contains(ue.Reason, "credentials") {
		t.Fatalf("a wrong key: %v", err)
	}
}

// TestVideo: a Hailuo task with first and last frames, polled through Preparing, Queueing and Processing to its
// file, retrieved for a download URL fetched without the key; a task whose output is flagged fails.
func TestVideo(t *testing.T) {
	t.Parallel()
	f := fakes.NewMiniMax(t, "mm-key")
	f.SetVideo(fakes.VideoScript{Polls: 3, Size: 30_000})
	c := client(f, "mm-key", fakes.Patient)
	id, st := fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "MiniMax-Hailuo-02",
		Request: video.Request{Prompt: "rain", Duration: 6, Resolution: "768p", AspectRatio: "16:9",
			FrameImages: []video.Frame{{Type: "first_frame", URL: "https://img/a.png"}, {Type: "last_frame", URL: "data:image/png;base64,AA=="}}},
		Options: map[string]any{"prompt_optimizer": false}}, 6)
	if id != "11" || st.Status != video.Completed || len(st.Outputs) != 1 || st.Outputs[0].Ref != "21" {
		t.Fatalf("task %s: %+v", id, st)
	}
	var sent map[string]any
	_ = json.Unmarshal(f.Requests()[0].Body, &sent)
	if sent["model"] != "MiniMax-Hailuo-02" || sent["duration"] != 6.0 || sent["resolution"] != "768P" || sent["prompt_optimizer"] != false ||
		sent["first_frame_image"] != "https://img/a.png" || sent["last_frame_image"] != "data:image/png;base64,AA==" || sent["aspect_ratio"] != nil {
		t.Fatalf("sent %v", sent)
	}
	fakes.CheckVideoContent(t, c, id, st.Outputs[0], 30_000)
	if n := f.Leaked(); n != 0 {
		t.Fatalf("the key went to the download host %d times", n)
	}

	f.SetVideo(fakes.VideoScript{Fail: true})
	_, st = fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "MiniMax-Hailuo-2.3", Request: video.Request{Prompt: "x"}}, 2)
	if st.Status != video.Failed || !strings.Contains(st.Error, "output video sensitive") {
		t.Fatalf("flagged task: %+v", st)
	}
	// A reference image is a subject reference (S2V-01).
	f.Script()
	if _, err := c.Submit(t.Context(), ports.VideoSubmission{UpstreamModel: "S2V-01", Request: video.Request{Prompt: "x",
		InputReferences: []video.Reference{{Type: "image_url", URL: "https://img/face.png"}}}}); err != nil {
		t.Fatal(err)
	}
	if b := string(f.Requests()[0].Body); !strings.Contains(b, `"subject_reference":[{"image":["https://img/face.png"],"type":"character"}]`) {
		t.Fatalf("sent %s", b)
	}
}

// TestVideoRefusals: what MiniMax cannot make is refused before anything is sent, naming the field.
func TestVideoRefusals(t *testing.T) {
	t.Parallel()
	f := fakes.NewMiniMax(t, "mm-key")
	c := client(f, "mm-key", fakes.Patient)
	seed, yes := int64(1), true
	for _, tc := range []struct {
		req   video.Request
		field string
	}{
		{video.Request{Seed: &seed}, "seed"},
		{video.Request{Size: "1366x768"}, "size"},
		{video.Request{AspectRatio: "9:16"}, "aspect_ratio"},
		{video.Request{GenerateAudio: &yes}, "generate_audio"},
		{video.Request{InputReferences: []video.Reference{{Type: "video_url", URL: "https://x"}}}, "input_references"},
	} {
		tc.req.Prompt = "p"
		_, err := c.Submit(t.Context(), ports.VideoSubmission{UpstreamModel: "MiniMax-Hailuo-2.3", Request: tc.req})
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !strings.HasPrefix(ue.Reason, tc.field+":") {
			t.Errorf("%+v: %v, want a refusal naming %s", tc.req, err, tc.field)
		}
	}
	if n := f.Calls(); n != 0 {
		t.Fatalf("refusals reached the provider: %d calls", n)
	}
}
