package runway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/runway"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func client(f *fakes.Runway, key string, wait time.Duration) *runway.Client {
	return runway.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

func TestVideoFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewRunway(t, "rw-key")
	fakes.CheckVideoFailures(t, f.Fake, func(wait time.Duration) *runway.Client { return client(f, "rw-key", wait) },
		fakes.VideoTarget{UpstreamID: "task-job1", Output: video.Output{Ref: f.URL + "/outputs/task-job1/0.mp4?_jwt=signed"}},
		fakes.VideoErrors{
			RateLimited: fakes.Step{Status: 429, Body: fakes.RunwayRateLimited},
			ServerError: fakes.RunwayServerError, Overloaded: fakes.RunwayOverloaded, BadInput: fakes.RunwayBadInput,
		})
}

// TestVideo: an image-to-video task with first and last frames, polled through PENDING, THROTTLED and RUNNING
// to two outputs, each downloaded without the key; an output whose signature expired is gone.
func TestVideo(t *testing.T) {
	t.Parallel()
	f := fakes.NewRunway(t, "rw-key")
	f.SetVideo(fakes.VideoScript{Polls: 3, Outputs: 2, Size: 40_000})
	c := client(f, "rw-key", fakes.Patient)
	seed := int64(3)
	id, st := fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "gen4_turbo",
		Request: video.Request{Prompt: "waves", Duration: 10, Resolution: "720p", AspectRatio: "9:16", Seed: &seed,
			FrameImages: []video.Frame{{Type: "first_frame", URL: "https://img/a.png"}, {Type: "last_frame", URL: "https://img/b.png"}}}}, 6)
	if st.Status != video.Completed || len(st.Outputs) != 2 || st.Retention != runway.Retention {
		t.Fatalf("task %s: %+v", id, st)
	}
	reqs := f.Requests()
	var sent map[string]any
	_ = json.Unmarshal(reqs[0].Body, &sent)
	images, _ := json.Marshal(sent["promptImage"])
	if reqs[0].Path != "/v1/image_to_video" || reqs[0].Header.Get("X-Runway-Version") != runway.Version || sent["model"] != "gen4_turbo" ||
		sent["promptText"] != "waves" || sent["ratio"] != "720:1280" || sent["duration"] != 10.0 || sent["seed"] != 3.0 ||
		string(images) != `[{"position":"first","uri":"https://img/a.png"},{"position":"last","uri":"https://img/b.png"}]` {
		t.Fatalf("sent %s %v", reqs[0].Path, sent)
	}
	for _, out := range st.Outputs {
		fakes.CheckVideoContent(t, c, id, out, 40_000)
	}
	if n := f.Leaked(); n != 0 {
		t.Fatalf("the key went to storage %d times", n)
	}
	expired := video.Output{Ref: strings.Split(st.Outputs[0].Ref, "?")[0]} // no signature: storage's 403
	if _, err := c.Download(t.Context(), id, expired, ""); !errors.Is(err, video.ErrExpired) {
		t.Fatalf("an expired URL: %v", err)
	}

	// Text to video, sized; and a task that fails moderation.
	f.SetVideo(fakes.VideoScript{Fail: true})
	f.Script()
	_, st = fakes.RunVideo(t, c, ports.VideoSubmission{UpstreamModel: "gen4.5", Request: video.Request{Prompt: "x", Size: "1920x1080"}}, 2)
	if st.Status != video.Failed || !strings.Contains(st.Error, "SAFETY.INPUT.TEXT") {
		t.Fatalf("failed task: %+v", st)
	}
	if r := f.Requests()[0]; r.Path != "/v1/text_to_video" || !strings.Contains(string(r.Body), `"ratio":"1920:1080"`) {
		t.Fatalf("sent %s %s", r.Path, r.Body)
	}
}

// TestVideoRefusals: what Runway cannot make is refused before anything is sent, naming the field.
func TestVideoRefusals(t *testing.T) {
	t.Parallel()
	f := fakes.NewRunway(t, "rw-key")
	c := client(f, "rw-key", fakes.Patient)
	yes := true
	for _, tc := range []struct {
		req   video.Request
		field string
	}{
		{video.Request{GenerateAudio: &yes}, "generate_audio"},
		{video.Request{InputReferences: []video.Reference{{Type: "image_url", URL: "https://x"}}}, "input_references"},
		{video.Request{Resolution: "1080p", AspectRatio: "1:1"}, "resolution and aspect_ratio"},
		{video.Request{Resolution: "4K"}, "resolution and aspect_ratio"},
	} {
		tc.req.Prompt = "p"
		_, err := c.Submit(t.Context(), ports.VideoSubmission{UpstreamModel: "gen4.5", Request: tc.req})
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !strings.HasPrefix(ue.Reason, tc.field+":") {
			t.Errorf("%+v: %v, want a refusal naming %s", tc.req, err, tc.field)
		}
	}
	if n := f.Calls(); n != 0 {
		t.Fatalf("refusals reached the provider: %d calls", n)
	}
}
