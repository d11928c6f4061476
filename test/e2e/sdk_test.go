// Package e2e runs real clients of the reference API, unchanged, against the gateway: the official TypeScript
// SDK @openrouter/sdk (and the openai package) under Node from js/, and the Go openai client.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/short"
)

// videoSuite is the suite TestVideoSDK runs against a gateway of its own, with every video provider.
const videoSuite = "videos.test.mjs"

// ownGateway are the suites that run against a gateway of their own (their tests say which), not the shared one.
var ownGateway = []string{videoSuite, messagesSuite, responsesSuite, embeddingsSuite}

// runNode runs the js/*.test.mjs suites that keep says to run with env, and fails the test with their output when
// any fails.
func runNode(t *testing.T, env map[string]string, keep func(file string) bool) {
	t.Helper()
	short.Skip(t, "npm's clients (node)")
	if _, err := os.Stat("js/node_modules/@openrouter/sdk"); err != nil {
		t.Fatalf("the SDK is not installed: run `make test` (it runs npm ci in test/e2e/js) or `npm ci` there: %v", err)
	}
	all, _ := filepath.Glob("js/*.test.mjs")
	var files []string
	for _, f := range all {
		if f = filepath.Base(f); keep(f) {
			files = append(files, f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Dir = "js"
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("SDK suite failed: %v\n%s", err, out)
	}
	t.Logf("SDK suite:\n%s", out)
}

func TestOpenRouterSDK(t *testing.T) {
	t.Parallel()
	sora := fakes.NewOpenAI(t, "sk-video")
	chat := fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: local, kind: espeak}
  - {slug: sora, kind: openai, base_url: %s, api_key: sk-video}
  - {slug: chatfake, kind: openai, base_url: %s, api_key: sk-chat}
models:
  - {id: local/espeak, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 1}}]}
  - {id: video/sora, modality: video, endpoints: [{provider: sora, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
  - {id: chat/fake, modality: chat, endpoints: [{provider: chatfake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
video: {poll_interval: 50ms, worker_interval: 1h}
`, sora.BaseURL(), chat.BaseURL())))
	key, keyHash := g.Key(t, nil)
	ws := g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)
	var memberIDs []string
	for _, email := range []string{"sdk-a@example.com", "sdk-b@example.com"} {
		r := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": email})
		memberIDs = append(memberIDs, r.JSON(t)["data"].(map[string]any)["id"].(string))
	}

	genID := generation.NewID(time.Now(), "sdkfixture")
	g.App.Recorder.Record(context.Background(), harness.GenerationEntry(genID, ws, time.Now()))
	harness.Eventually(t, 5*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+genID, key, nil).Status == 200 })

	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ADMIN": g.Admin, "SB_KEY": key, "SB_KEY_HASH": keyHash,
		"SB_GENERATION_ID": genID, "SB_MEMBER_IDS": strings.Join(memberIDs, ",")}, func(f string) bool { return !slices.Contains(ownGateway, f) })

	// chat.test.mjs applied preset chat-e2e twice: its system prompt and temperature reached the upstream each
	// time, its max_tokens once (the other call set its own).
	var applied []string
	for _, r := range chat.Requests() {
		var body struct {
			Messages    []struct{ Role, Content string }
			Temperature *float64
			MaxTokens   int `json:"max_tokens"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Messages) == 0 || body.Messages[0].Content != "You are a pirate." {
			continue
		}
		if body.Messages[0].Role != "system" || body.Temperature == nil || *body.Temperature != 0.3 {
			t.Fatalf("the preset's request upstream: %s", r.Body)
		}
		applied = append(applied, fmt.Sprint(body.MaxTokens))
	}
	if strings.Join(applied, ",") != "4,2" {
		t.Fatalf("the preset reached the upstream with max_tokens %v", applied)
	}
}
