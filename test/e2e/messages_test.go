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
// fake (gpt/fake), one whose Anthropic fake is rate limited (claude/limited), and one whose stream breaks
// (claude/broken).
func messagesGateway(t *testing.T) (*harness.Gateway, *fakes.Anthropic, *fakes.OpenAI, *fakes.Anthropic) {
	anthropic := fakes.NewAnthropic(t, "sk-ant-fake")
	openai := fakes.NewOpenAI(t, "sk-openai-fake")
	limited := fakes.NewAnthropic(t, "sk-ant-limited")
	steps := make([]fakes.Step, 20)
	for i := range steps {
		steps[i] = fakes.Step{Status: 429, Body: fakes.AnthropicRateLimited}
	}
	limited.Script(steps...)
	// claude/broken's fake breaks its stream with an overloaded_error event after the first token, every time.
	broken := fakes.NewAnthropic(t, "sk-ant-broken")
	broken.Default = fakes.Step{Events: []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"partial\"}}\n\n",
		"event: error\ndata: " + fakes.AnthropicOverloaded + "\n\n",
	}}
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant-fake}
  - {slug: openaifake, kind: openai, base_url: %s, api_key: sk-openai-fake}
  - {slug: limited, kind: anthropic, base_url: %s, api_key: sk-ant-limited}
  - {slug: broken, kind: anthropic, base_url: %s, api_key: sk-ant-broken}
models:
  - {id: claude/sonnet, aliases: [claude-sonnet-4-5-20250929], modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-sonnet-4-5, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
  - {id: gpt/fake, modality: chat, endpoints: [{provider: openaifake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: claude/limited, modality: chat, endpoints: [{provider: limited, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
  - {id: claude/broken, modality: chat, endpoints: [{provider: broken, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
`, anthropic.BaseURL(), openai.BaseURL(), limited.BaseURL(), broken.BaseURL())))
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
		"SB_MESSAGES_MODEL": "claude/sonnet", "SB_FAILING_MODEL": "claude/limited", "SB_BROKEN_MODEL": "claude/broken",
		"SB_MODEL_ALIAS": "claude-sonnet-4-5-20250929"},
		func(f string) bool { return f == messagesSuite })

	// Claude Code's max_tokens 32000 at $15 a million is $0.48 reserved: a key limited to $0.10 is refused, in
	// Anthropic's shape, saying what to change.
	small, _ := g.Key(t, map[string]any{"limit": 0.1})
	r := g.Do(t, "POST", "/messages", small, map[string]any{"model": "claude/sonnet", "max_tokens": 32000,
		"messages": []any{map[string]any{"role": "user", "content": "Hi"}}})
	var refused struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(r.Body, &refused); err != nil || r.Status != 402 || refused.Type != "error" ||
		refused.Error.Type != "billing_error" || !strings.Contains(refused.Error.Message, "smaller max_tokens") {
		t.Errorf("a reservation the key cannot hold: %d %s", r.Status, r.Body)
	}

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

// TestAnthropicSDKGemini runs the same suite routed to a Gemini fake, translated both ways as for OpenAI.
func TestAnthropicSDKGemini(t *testing.T) {
	t.Parallel()
	gemini := fakes.NewGemini(t, "gemini-key")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: gemini-key}
models:
  - {id: google/gemini, modality: chat, endpoints: [{provider: gemini, upstream_model: gemini-2.5-flash, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, gemini.BaseURL())))
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ANTHROPIC_URL": strings.TrimSuffix(g.URL, "/v1"), "SB_KEY": key,
		"SB_MESSAGES_MODEL": "google/gemini"}, func(f string) bool { return f == messagesSuite })
	for _, r := range gemini.Requests() {
		if body := string(r.Body); strings.Contains(body, "SYSTEM-CACHED") &&
			(strings.Contains(body, "cache_control") || strings.Contains(body, "THINKING-SENT-BACK")) {
			t.Errorf("what Gemini cannot take reached it: %s", body)
		}
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

// TestMessagesCacheBilling: a call whose upstream reports cache reads and 1-hour cache writes is billed from the
// configured prices to the micro-dollar, through /messages and /chat/completions alike, and GET /generation shows
// what caching took off the cost and the cached count.
func TestMessagesCacheBilling(t *testing.T) {
	t.Parallel()
	anthropic := fakes.NewAnthropic(t, "sk-ant-fake")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant-fake}
models:
  - id: claude/cached
    modality: chat
    endpoints:
      - provider: anthropic
        upstream_model: claude-sonnet-4-5
        pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15, per_million_cache_read_tokens: 0.3,
                  per_million_cache_write_tokens: 3.75, per_million_cache_write_1h_tokens: 6}
`, anthropic.BaseURL())))
	key, _ := g.Key(t, nil)
	// 1,001 tokens of input, 200,001 read from the cache, 10,000 written to it for an hour and none for 5 minutes;
	// 501 out. A prompt that large is only plausible for a request about as large: one of 120,000 bytes.
	const usage = `"usage":{"input_tokens":1001,"cache_creation_input_tokens":10000,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":10000},"cache_read_input_tokens":200001,"output_tokens":1}`
	events := []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null," + usage + "}}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"cached\"}}\n\n",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":501}}\n\n",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	}
	anthropic.Script(fakes.Step{Events: events}, fakes.Step{Events: events})
	// At $ per million: 1,001 × 3 + 200,001 × 0.3 + 10,000 × 6 + 501 × 15 = 130,518.3 micro-dollars, rounded once;
	// without caching the whole prompt (211,002 tokens) at 3: 640,521, so caching took 510,002.7 off.
	const wantCost, wantDiscount = "0.130518", "0.510003"
	big := strings.Repeat("cache me ", 120_000/9)
	for _, call := range []struct {
		path string
		body map[string]any
	}{
		{"/messages", map[string]any{"model": "claude/cached", "max_tokens": 1024, "system": []any{map[string]any{"type": "text", "text": big,
			"cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}}, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}},
		{"/chat/completions", map[string]any{"model": "claude/cached", "max_tokens": 1024, "messages": []any{
			map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": big, "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}}},
			map[string]any{"role": "user", "content": "Hi"}}}},
	} {
		r := g.Do(t, "POST", call.path, key, call.body)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", call.path, r.Status, r.Body)
		}
		id := r.Header.Get("X-Generation-Id")
		var gen map[string]any
		harness.Eventually(t, 10*time.Second, func() bool {
			res := g.Do(t, "GET", "/generation?id="+id, key, nil)
			if res.Status == 200 {
				gen = res.JSON(t)["data"].(map[string]any)
			}
			return res.Status == 200
		})
		cost, _ := json.Marshal(gen["total_cost"])
		discount, _ := json.Marshal(gen["cache_discount"])
		if string(cost) != wantCost || string(discount) != wantDiscount || fmt.Sprint(gen["native_tokens_cached"]) != "200001" ||
			fmt.Sprint(gen["native_tokens_prompt"]) != "211002" {
			t.Errorf("%s: total_cost %s cache_discount %s native_tokens_cached %v native_tokens_prompt %v, want %s %s 200001 211002",
				call.path, cost, discount, gen["native_tokens_cached"], gen["native_tokens_prompt"], wantCost, wantDiscount)
		}
	}
	// The chat completions call's cache_control reached Anthropic on its system block.
	reqs := anthropic.Requests()
	var sent struct{ System json.RawMessage }
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil || !strings.Contains(string(sent.System), `"cache_control":{"ttl":"1h","type":"ephemeral"}`) /* as the test sent it */ {
		t.Errorf("system upstream from chat completions: %.200s", sent.System)
	}
}

// TestMessagesPreset: a preset saved from a Messages body is used by /messages: its fields lie under the call's
// (max_tokens, temperature), its system prompt is laid when the call has none, and @preset/slug names it.
func TestMessagesPreset(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	if r := g.Do(t, "POST", "/presets/pirate/messages", key, map[string]any{"model": "claude/sonnet", "max_tokens": 300,
		"temperature": 0.3, "system": "You are a pirate.", "messages": []any{map[string]any{"role": "user", "content": "saved"}}}); r.Status != 200 {
		t.Fatalf("save the preset: %d %s", r.Status, r.Body)
	}
	r := g.Do(t, "POST", "/messages", key, map[string]any{"model": "@preset/pirate",
		"messages": []any{map[string]any{"role": "user", "content": "Ahoy"}}}, "anthropic-version", "2023-06-01")
	if r.Status != 200 {
		t.Fatalf("/messages with the preset: %d %s", r.Status, r.Body)
	}
	reqs := anthropic.Requests()
	var sent struct {
		Model       string
		System      string
		MaxTokens   int `json:"max_tokens"`
		Temperature float64
		Messages    []struct{ Role string }
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Model != "claude-sonnet-4-5" || sent.System != "You are a pirate." || sent.MaxTokens != 300 || sent.Temperature != 0.3 ||
		len(sent.Messages) != 1 || sent.Messages[0].Role != "user" {
		t.Fatalf("upstream got %s", reqs[len(reqs)-1].Body)
	}
}

// TestMessagesGuardrailsScanBlocks: the text a block of another kind carries (a document's, passed on as it came)
// is scanned as a text block's is: a blocking filter refuses the call, and so does a redacting one, which cannot
// rewrite the block as it came; a redaction in a text block beside it leaves the block as it came. A search result
// in a tool result is scanned too. The model's own blocks (thinking, a server tool's result) go back to it as they
// came, unscanned.
func TestMessagesGuardrailsScanBlocks(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, hash := g.Key(t, nil)
	codenameRails(t, g, hash)
	body := func(doc, ask string) string {
		return `{"model":"claude/sonnet","max_tokens":50,"messages":[
			{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"` + doc + `"}},
				{"type":"text","text":"` + ask + `"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"mail bob@example.org","signature":"sig"},{"type":"text","text":"Done."}]},
			{"role":"user","content":"More."}]}`
	}
	for doc, filter := range map[string]string{"notes on Project Falcon": "codename", "write to ada@example.com": "email"} {
		e := harness.AssertError(t, g.Do(t, "POST", "/messages", key, body(doc, "Sum it up."), "anthropic-version", "2023-06-01"), 400)
		if m := fmt.Sprint(e["message"]); !strings.Contains(m, filter) {
			t.Errorf("%s: %v, want the filter named", doc, e)
		}
	}
	// A search result a client's tool returned is the caller's: scanned.
	inResult := `{"model":"claude/sonnet","max_tokens":50,"messages":[{"role":"user","content":"Look it up."},
		{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"search","input":{"q":"x"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"Found:"},
			{"type":"search_result","source":"https://x.example","title":"Notes","content":[{"type":"text","text":"Project Falcon"}]}]}]}]}`
	e := harness.AssertError(t, g.Do(t, "POST", "/messages", key, inResult, "anthropic-version", "2023-06-01"), 400)
	if m := fmt.Sprint(e["message"]); !strings.Contains(m, "codename") {
		t.Errorf("a search result in a tool result: %v, want the filter named", e)
	}
	if r := g.Do(t, "POST", "/messages", key, body("plain notes", "Sum it up for ada@example.com."), "anthropic-version", "2023-06-01"); r.Status != 200 {
		t.Fatalf("a redacted call: %d %s", r.Status, r.Body)
	}
	// A server tool's result in the model's own turn goes back to it as it came, an email in it unscanned.
	served := `{"model":"claude/sonnet","max_tokens":50,"messages":[{"role":"user","content":"Search."},
		{"role":"assistant","content":[{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"contact"}},
			{"type":"web_search_tool_result","tool_use_id":"srv_1","content":[{"type":"web_search_result","url":"https://x.example",
				"title":"Write to bob@example.org","encrypted_content":"abc"}]},{"type":"text","text":"Found it."}]},
		{"role":"user","content":"Thanks."}]}`
	if r := g.Do(t, "POST", "/messages", key, served, "anthropic-version", "2023-06-01"); r.Status != 200 {
		t.Fatalf("a server tool's result in the model's turn: %d %s", r.Status, r.Body)
	}
	reqs := anthropic.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "bob@example.org") {
		t.Fatalf("the upstream got %d calls, want 2 (the refused ones never sent), the second as it came", len(reqs))
	}
	got := string(reqs[0].Body)
	if strings.Contains(got, "ada@example.com") || !strings.Contains(got, "for [EMAIL].") || !strings.Contains(got, `"data":"plain notes"`) ||
		!strings.Contains(got, `"signature":"sig"`) {
		t.Errorf("after a redaction the upstream got %s", got)
	}
}

// TestMessagesCountTokensGuardrails: a token count reaches an upstream as the call would, so the caller's
// guardrails hold for it: a provider they leave out is not asked (a fallback model they allow is), a blocked text
// is a 400 before any upstream, and a redacted one is counted as the call would send it.
func TestMessagesCountTokensGuardrails(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, hash := g.Key(t, nil)
	codenameRails(t, g, hash)
	count := func(key, text string) harness.Response {
		return g.Do(t, "POST", "/messages/count_tokens", key, `{"model":"claude/sonnet","messages":[{"role":"user","content":"`+text+`"}]}`,
			"anthropic-version", "2023-06-01")
	}
	e := harness.AssertError(t, count(key, "notes on Project Falcon"), 400)
	if !strings.Contains(fmt.Sprint(e["message"]), "codename") {
		t.Errorf("blocked: %v, want the filter named", e)
	}
	if r := count(key, "write to ada@example.com"); r.Status != 200 {
		t.Fatalf("a redacted count: %d %s", r.Status, r.Body)
	}
	other, otherHash := g.Key(t, nil)
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"no anthropic","ignored_providers":["anthropic"]}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{otherHash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
	harness.AssertError(t, count(other, "hello"), 403)
	// With a fallback the guardrails allow, the count is the fallback's, as the call would be.
	if r := g.Do(t, "POST", "/messages/count_tokens", other, `{"model":"claude/sonnet","models":["claude/sonnet","gpt/fake"],
		"messages":[{"role":"user","content":"hello"}]}`, "anthropic-version", "2023-06-01"); r.Status != 200 {
		t.Errorf("a count with a fallback: %d %s", r.Status, r.Body)
	}
	reqs := anthropic.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/messages/count_tokens" || strings.Contains(string(reqs[0].Body), "ada@example.com") ||
		!strings.Contains(string(reqs[0].Body), "[EMAIL]") {
		t.Fatalf("the upstream got %d requests, want the one redacted count: %v", len(reqs), reqs)
	}
}
