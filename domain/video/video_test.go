package video_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/video"
)

// TestNewJobID: a job id keeps at most 20 characters of the random value, without its hyphens, whatever the
// length of what the id generator returns.
func TestNewJobID(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct{ random, want string }{
		{"0f915ba8-11e3-40ac-a9c8-a5d1e01ad73e", "gen-vid-1700000000-0f915ba811e340aca9c8"},
		{"0123456789abcdefghij", "gen-vid-1700000000-0123456789abcdefghij"},
		{"short", "gen-vid-1700000000-short"},
		{"a-b", "gen-vid-1700000000-ab"},
		{"", "gen-vid-1700000000-"},
	} {
		if got := video.NewJobID(now, tc.random); got != tc.want {
			t.Errorf("NewJobID(%q) = %q, want %q", tc.random, got, tc.want)
		}
	}
}

func usd(s string) *domain.Micros {
	m, err := domain.ParseUSD(s)
	if err != nil {
		panic(err)
	}
	return &m
}

// TestPlanOf: a job is priced per second at the rate of its resolution and sound, asked for or the model's
// defaults; seconds come from the request, then the model's default, then DefaultDuration.
func TestPlanOf(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	byRes := catalog.ResolutionRates{
		"720p":  {PerSecond: usd("0.1"), PerSecondWithAudio: usd("0.15")},
		"1080p": {PerSecond: usd("0.2"), PerSecondWithAudio: usd("0.3")},
	}
	flat := catalog.Pricing{PerSecond: usd("0.05"), PerSecondWithAudio: usd("0.07")}
	tiered := catalog.Pricing{PerSecond: usd("0.05"), Resolutions: &byRes}
	onlyTiers := catalog.Pricing{Resolutions: &byRes}
	caps := &catalog.VideoCaps{DefaultDuration: 5, DefaultResolution: "1080p", DefaultAudio: true}
	for _, tc := range []struct {
		name    string
		req     video.Request
		caps    *catalog.VideoCaps
		pricing catalog.Pricing
		cost    string
	}{
		{"flat, silent by default, default duration", video.Request{}, nil, flat, "0.4"},
		{"flat, with audio", video.Request{Duration: 4, GenerateAudio: &yes}, nil, flat, "0.28"},
		{"model defaults: 5 s, 1080p, audio", video.Request{}, caps, tiered, "1.5"},
		{"asked resolution and no audio", video.Request{Resolution: "720p", GenerateAudio: &no}, caps, tiered, "0.5"},
		{"size names the resolution", video.Request{Size: "1280x720", Duration: 10}, nil, tiered, "1"},
		{"untiered resolution: the endpoint's own rate", video.Request{Resolution: "480p", Duration: 10}, nil, tiered, "0.5"},
		{"no rate for it at all: the dearest tier", video.Request{Resolution: "480p", Duration: 10}, nil, onlyTiers, "2"},
		{"unpriced", video.Request{Duration: 10}, nil, catalog.Pricing{}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := video.PlanOf(tc.req, tc.caps, tc.pricing).Cost(0).Decimal(); got != tc.cost {
				t.Fatalf("cost %s, want %s", got, tc.cost)
			}
		})
	}
	// The seconds the provider reports win over the plan's.
	if got := video.PlanOf(video.Request{}, nil, flat).Cost(3).Decimal(); got != "0.15" {
		t.Fatalf("cost of 3 reported seconds: %s", got)
	}
}

// TestFits: what a model's configuration says it does not take is a 400 naming the field; what it leaves out
// is the provider's to judge.
func TestFits(t *testing.T) {
	t.Parallel()
	no := false
	caps := catalog.VideoCaps{Durations: []int{5, 10}, Resolutions: []string{"720p"}, AspectRatios: []string{"16:9"},
		Sizes: []string{"1280x720"}, FrameImages: []string{"first_frame"}, GenerateAudio: &no, Seed: &no}
	yes, seed := true, int64(1)
	for _, tc := range []struct {
		req   video.Request
		field string
	}{
		{video.Request{Duration: 5, Resolution: "720p", AspectRatio: "16:9", Size: "1280x720",
			FrameImages: []video.Frame{{Type: "first_frame"}}, GenerateAudio: &no}, ""},
		{video.Request{Duration: 6}, "duration"},
		{video.Request{Resolution: "1080p"}, "resolution"},
		{video.Request{AspectRatio: "9:16"}, "aspect_ratio"},
		{video.Request{Size: "720x1280"}, "size"},
		{video.Request{GenerateAudio: &yes}, "generate_audio"},
		{video.Request{Seed: &seed}, "seed"},
		{video.Request{FrameImages: []video.Frame{{Type: "first_frame"}, {Type: "last_frame"}}}, "frame_images[1].frame_type"},
	} {
		tc.req.Model = "m"
		err := tc.req.Fits(caps)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v refused: %v", tc.req, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+": ") || domain.KindOf(err) != domain.KindInvalid {
			t.Errorf("%+v: %v, want a 400 naming %s", tc.req, err, tc.field)
		}
	}
	if err := (video.Request{Duration: 7, Seed: &seed}).Fits(catalog.VideoCaps{}); err != nil {
		t.Errorf("nothing configured, yet refused: %v", err)
	}
}
