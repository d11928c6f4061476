package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// messagesSuite is the Anthropic SDK's suite (js/messages.test.mjs).
const messagesSuite = "messages.test.mjs"

// messagesGateway starts a gateway with a model on an Anthropic fake (claude/sonnet), one on an OpenAI-compatible
// fake (gpt/fake), and one whose Anthropic fake is rate limited (claude/limited).
func messagesGateway(t *testing.T) (*harness.Gateway, *fakes.Anthropic, *fakes.OpenAI, *fakes.Anthropic) {
	anthropic := fakes.NewAnthropic(t, "sk-ant-fake")
	openai := fakes.NewOpenAI(t, "sk-openai-fake")
	limited := fakes.NewAnthropic(t, "sk-ant-limited")
	steps := make([]fakes.Step, 20)
	for i := range steps {
		steps[i] = fakes.Step{Status: 429, Body: fakes.AnthropicRateLimited}
	}
	limited.Script(steps...)
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant-fake}
  - {slug: openaifake, kind: openai, base_url: %s, api_key: sk-openai-fake}
  - {slug: limited, kind: anthropic, base_url: %s, api_key: sk-ant-limited}
models:
  - {id: claude/sonnet, modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-sonnet-4-5, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
  - {id: gpt/fake, modality: chat, endpoints: [{provider: openaifake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: claude/limited, modality: chat, endpoints: [{provider: limited, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
`, anthropic.BaseURL(), openai.BaseURL(), limited.BaseURL())))
	return g, anthropic, openai, limited
}

// TestAnthropicSDK runs the Anthropic SDK against /messages routed to an Anthropic fake, whose requests must carry
// what the SDK sent as it came: the system blocks with their cache_control, the thinking block with its signature,
// the anthropic-beta header.
func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ANTHROPIC_URL": strings.TrimSuffix(g.URL, "/v1"), "SB_KEY": key,
		"SB_MESSAGES_MODEL": "claude/sonnet", "SB_FAILING_MODEL": "claude/limited"},
		func(f string) bool { return f == messagesSuite })

	var found bool
	for _, r := range anthropic.Requests() {
		if !strings.Contains(string(r.Body), "SYSTEM-CACHED") {
			continue
		}
		found = true
		var body struct {
			Model    string
			Stream   bool
			System   json.RawMessage
			Messages []struct {
				Content json.RawMessage
			}
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		wantSystem := `[{"type":"text","text":"You are terse."},{"type":"text","text":"SYSTEM-CACHED","cache_control":{"type":"ephemeral","ttl":"1h"}}]`
		if string(body.System) != wantSystem {
			t.Errorf("system upstream: %s\nwant %s", body.System, wantSystem)
		}
		wantThinking := `[{"type":"thinking","thinking":"THINKING-SENT-BACK","signature":"c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw=="},{"type":"text","text":"I thought."}]`
		if len(body.Messages) != 3 || string(body.Messages[1].Content) != wantThinking {
			t.Errorf("messages upstream: %s", r.Body)
		}
		if want := `[{"type":"text","text":"Go on.","cache_control":{"type":"ephemeral"}}]`; string(body.Messages[2].Content) != want {
			t.Errorf("last message upstream: %s", body.Messages[2].Content)
		}
		if body.Model != "claude-sonnet-4-5" || !body.Stream {
			t.Errorf("model %q stream %v upstream", body.Model, body.Stream)
		}
		if got := r.Header.Get("anthropic-beta"); got != "interleaved-thinking-2025-05-14" {
			t.Errorf("anthropic-beta upstream: %q", got)
		}
		if got := r.Header.Get("anthropic-version"); got == "" || got == "2023-06-01" {
			t.Errorf("anthropic-version upstream: %q, want the SDK's own", got)
		}
	}
	if !found {
		t.Fatal("the cached system prompt never reached the upstream")
	}
}

// TestAnthropicSDKTranslated runs the same suite routed to an OpenAI-compatible fake: the gateway translates the
// request and the answer both ways, and drops what the upstream cannot take (cache_control, thinking).
func TestAnthropicSDKTranslated(t *testing.T) {
	t.Parallel()
	g, _, openai, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ANTHROPIC_URL": strings.TrimSuffix(g.URL, "/v1"), "SB_KEY": key,
		"SB_MESSAGES_MODEL": "gpt/fake"}, func(f string) bool { return f == messagesSuite })
	var found bool
	for _, r := range openai.Requests() {
		body := string(r.Body)
		if !strings.Contains(body, "SYSTEM-CACHED") {
			continue
		}
		found = true
		for _, dropped := range []string{"cache_control", "THINKING-SENT-BACK", "signature"} {
			if strings.Contains(body, dropped) {
				t.Errorf("%s reached the OpenAI-compatible upstream: %s", dropped, body)
			}
		}
		if !strings.Contains(body, `"role":"system"`) || !strings.Contains(body, "I thought.") {
			t.Errorf("the conversation upstream: %s", body)
		}
	}
	if !found {
		t.Fatal("the system prompt never reached the upstream")
	}
}

// claude runs the Claude Code CLI in print mode against the gateway, configured as agent-clients.md says, in dir
// with a home of its own, and returns what it printed.
func claude(t *testing.T, g *harness.Gateway, key, dir, model, prompt string, args ...string) string {
	t.Helper()
	bin, err := filepath.Abs("js/node_modules/.bin/claude")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Claude Code is not installed: run npm ci in test/e2e/js: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-p", prompt}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + strings.TrimSuffix(g.URL, "/v1"),
		"ANTHROPIC_AUTH_TOKEN=" + key, "ANTHROPIC_API_KEY=", "ANTHROPIC_MODEL=" + model, "ANTHROPIC_SMALL_FAST_MODEL=" + model,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude -p: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}
	return out.String()
}

// TestClaudeCode runs the Claude Code CLI against /messages routed to an Anthropic fake: it prints the fake's
// answer; and when the fake calls its Read tool, Claude Code reads the file and the result reaches the fake.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	dir := t.TempDir()
	anthropic.CallTool("none", "") // no tool call: Claude Code prints the answer
	if got := claude(t, g, key, dir, "claude/sonnet", "Say hello"); !strings.Contains(got, "Hello from the fake upstream.") {
		t.Fatalf("claude -p printed %q", got)
	}
	var sawBeta bool
	for _, r := range anthropic.Requests() {
		sawBeta = sawBeta || strings.Contains(r.Header.Get("anthropic-beta"), "claude-code")
	}
	if !sawBeta {
		t.Error("Claude Code's anthropic-beta never reached the upstream")
	}

	secret := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(secret, []byte("TOOL-RESULT-7f3a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	anthropic.CallTool("Read", fmt.Sprintf(`{"file_path":%q}`, secret))
	got := claude(t, g, key, dir, "claude/sonnet", "Read note.txt")
	if !strings.Contains(got, "The tool said:") || !strings.Contains(got, "TOOL-RESULT-7f3a") {
		t.Fatalf("claude -p printed %q", got)
	}
	var reached bool
	for _, r := range anthropic.Requests() {
		reached = reached || strings.Contains(string(r.Body), `"tool_result"`) && strings.Contains(string(r.Body), "TOOL-RESULT-7f3a")
	}
	if !reached {
		t.Error("the tool's result never reached the upstream")
	}
}
