package gemini_test

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func TestVideoFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	fakes.CheckVideoFailures(t, f.Fake, dial(f, "g-key"),
		fakes.VideoTarget{UpstreamID: "models/veo/operations/job1",
			Output: video.Output{Ref: f.BaseURL() + "/files/job1-0:download?alt=media", ContentType: "video/mp4"}},
		fakes.VideoErrors{
			RateLimited: fakes.Step{Status: 429, Body: fakes.GeminiRateLimited},
			RetryAfter:  1500 * time.Millisecond,
			ServerError: `{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}`,
			Overloaded:  fakes.GeminiOverloaded,
			BadInput:    `{"error":{"code":400,"message":"A prompt is required.","status":"INVALID_ARGUMENT"}}`,
		})
}
