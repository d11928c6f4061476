package openai_test

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func TestVideoFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	fakes.CheckVideoFailures(t, f.Fake, dial(f, "sk-test"), fakes.VideoTarget{UpstreamID: "video_job1", Output: video.Output{ContentType: "video/mp4"}},
		fakes.VideoErrors{
			RateLimited: fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "2"}},
			RetryAfter:  2 * time.Second,
			ServerError: fakes.OpenAIServerError, Overloaded: fakes.OpenAIOverloaded, BadInput: fakes.OpenAIBadInput,
		})
}
