package e2e_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestVideoSDK runs @openrouter/sdk's videoGeneration (generate, getGeneration, getVideoContent,
// listVideosModels), unchanged, against each video provider's fake: the content must be the provider's byte for
// byte, and a range of it a 206.
func TestVideoSDK(t *testing.T) {
	t.Parallel()
	const size = 150_000
	script := fakes.VideoScript{Polls: 1, Size: size}
	sora, fal, falFail := fakes.NewOpenAI(t, "sk-video"), fakes.NewFal(t, "fal-key"), fakes.NewFal(t, "fal-key")
	runway, minimax := fakes.NewRunway(t, "rw-key"), fakes.NewMiniMax(t, "mm-key")
	for _, f := range []interface{ SetVideo(fakes.VideoScript) }{sora, fal, runway, minimax} {
		f.SetVideo(script)
	}
	falFail.SetVideo(fakes.VideoScript{Polls: 1, Fail: true})
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: sora, kind: openai, base_url: %s, api_key: sk-video}
  - {slug: fal, kind: fal, base_url: %s, api_key: fal-key}
  - {slug: falfail, kind: fal, base_url: %s, api_key: fal-key}
  - {slug: runway, kind: runway, base_url: %s, api_key: rw-key}
  - {slug: minimax, kind: minimax, base_url: %s, api_key: mm-key}
models:
  - {id: video/sora, modality: video, video: {durations: [4, 8, 12]}, endpoints: [{provider: sora, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
  - id: video/fal-kling
    modality: video
    video: {durations: [5, 10], aspect_ratios: ["16:9", "9:16", "1:1"], frame_images: [first_frame, last_frame], generate_audio: true, seed: false, default: {duration: 5, generate_audio: true}}
    endpoints: [{provider: fal, upstream_model: fal-ai/kling-video/v2.6/pro/text-to-video, pricing: {per_second: 0.07, per_second_with_audio: 0.14}}]
  - {id: video/runway, modality: video, video: {durations: [5, 10]}, endpoints: [{provider: runway, upstream_model: gen4.5, pricing: {per_second: 0.12}}]}
  - id: video/minimax
    modality: video
    video: {durations: [6, 10], resolutions: [768p, 1080p], aspect_ratios: ["16:9"], generate_audio: false, seed: false, default: {resolution: 768p}}
    endpoints: [{provider: minimax, upstream_model: MiniMax-Hailuo-2.3, pricing: {resolutions: {768p: {per_second: 0.045}, 1080p: {per_second: 0.08}}}}]
  - {id: video/failing, modality: video, endpoints: [{provider: falfail, upstream_model: fal-ai/veo3.1, pricing: {per_second: 0.4}}]}
video: {poll_interval: 20ms, worker_interval: 1h}
`, sora.BaseURL(), fal.BaseURL(), falFail.BaseURL(), runway.BaseURL(), minimax.BaseURL())))
	key, _ := g.Key(t, nil)

	want, _ := io.ReadAll(fakes.NewVideoBytes(size))
	file := filepath.Join(t.TempDir(), "video.mp4")
	if err := os.WriteFile(file, want, 0o600); err != nil {
		t.Fatal(err)
	}
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_KEY": key, "SB_VIDEO_FILE": file, "SB_VIDEO_FAILING": "video/failing",
		"SB_VIDEO_MODELS": "video/sora,video/fal-kling,video/runway,video/minimax"}, func(f string) bool { return f == videoSuite })
	for name, leaked := range map[string]int64{"fal": fal.Leaked(), "runway": runway.Leaked(), "minimax": minimax.Leaked()} {
		if leaked != 0 {
			t.Errorf("the %s key went to its storage %d times", name, leaked)
		}
	}
}
