package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// responsesSuite is the suite TestResponses runs against a gateway of its own.
const responsesSuite = "responses.test.mjs"

// responsesConfig serves resp/native from an OpenAI fake that speaks the Responses API (calls pass through) and
// resp/chat from one that only has chat (calls are translated).
func responsesConfig(native, chatOnly *fakes.OpenAI) string {
	return fmt.Sprintf(`
providers:
  - {slug: oairesp, kind: openai, base_url: %s, api_key: sk-resp, responses_api: true}
  - {slug: chatonly, kind: openai, base_url: %s, api_key: sk-chat}
models:
  - {id: resp/native, modality: chat, endpoints: [{provider: oairesp, upstream_model: gpt-fake, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: resp/chat, modality: chat, endpoints: [{provider: chatonly, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, native.BaseURL(), chatOnly.BaseURL())
}

// TestResponses runs responses.test.mjs (the openai npm client and @openrouter/sdk), then checks what reached the
// fakes: the Responses fake got the caller's body as it came (its instructions, its items), the chat fake its
// translation into chat completions, and neither got a previous_response_id it could not honour.
func TestResponses(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)))
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_KEY": key}, func(f string) bool { return f == responsesSuite })

	for _, r := range native.Requests() {
		if r.Path != "/v1/responses" {
			t.Fatalf("the Responses upstream was called at %s", r.Path)
		}
	}
	var sawInstructions, sawCallOutput bool
	for _, r := range native.Requests() {
		var body struct {
			Model, Instructions string
			Stream              bool
			Input               json.RawMessage
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Model != "gpt-fake" || !body.Stream {
			t.Fatalf("the Responses upstream got %s", r.Body)
		}
		sawInstructions = sawInstructions || body.Instructions == "Be brief."
		sawCallOutput = sawCallOutput || strings.Contains(string(body.Input), `"type":"function_call_output"`)
	}
	if !sawInstructions || !sawCallOutput {
		t.Errorf("the Responses upstream never got the instructions (%v) or a function call's output (%v)", sawInstructions, sawCallOutput)
	}
	var translated bool
	for _, r := range chatOnly.Requests() {
		if r.Path != "/v1/chat/completions" || strings.Contains(string(r.Body), "previous_response_id") {
			t.Fatalf("the chat upstream got %s %s", r.Path, r.Body)
		}
		var body struct {
			Messages []struct {
				Role       string
				ToolCallID string `json:"tool_call_id"`
			}
			Tools []struct{ Type string }
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		for _, m := range body.Messages {
			translated = translated || m.Role == "tool" && m.ToolCallID == "call_fake_1" && len(body.Tools) == 1 && body.Tools[0].Type == "function"
		}
	}
	if !translated {
		t.Errorf("the chat upstream never got a translated function call round trip")
	}
}

// TestResponsesUntranslatable: a message of a misspelt type, a content part of an unknown type and an item
// reference (which only the upstream's store resolves) go as they came to an upstream that speaks the Responses
// API, and are a 400 naming them where the call would be translated into chat, rather than left out unseen.
func TestResponsesUntranslatable(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)))
	key, _ := g.Key(t, nil)
	for _, tt := range []struct{ input, field string }{
		{`{"role":"user","content":"a"},{"type":"mesage","role":"user","content":"b"}`, "input[1].type"},
		{`{"role":"user","content":"a"},{"type":"message","role":"user","content":[{"type":"input_txt","text":"b"}]}`, "input[1].content[0].type"},
		{`{"role":"user","content":"a"},{"type":"item_reference","id":"msg_1"}`, "input[1]"},
	} {
		body := `{"model":"%s","input":[` + tt.input + `]}`
		r := g.Do(t, "POST", "/responses", key, fmt.Sprintf(body, "resp/chat"))
		e, _ := r.JSON(t)["error"].(map[string]any)
		if r.Status != 400 || e == nil || !strings.HasPrefix(fmt.Sprint(e["message"]), tt.field+": ") {
			t.Errorf("%s to a chat upstream: %d %s, want a 400 naming %s", tt.input, r.Status, r.Body, tt.field)
		}
		if r := g.Do(t, "POST", "/responses", key, fmt.Sprintf(body, "resp/native")); r.Status != 200 {
			t.Errorf("%s to a Responses upstream: %d %s", tt.input, r.Status, r.Body)
		}
	}
	if n := len(chatOnly.Requests()); n != 0 {
		t.Errorf("the chat upstream was called %d times", n)
	}
	if reqs := native.Requests(); len(reqs) != 3 || !strings.Contains(string(reqs[0].Body), `{"type":"mesage","role":"user","content":"b"}`) {
		t.Errorf("the Responses upstream got %d calls, not 3 with the misspelt item as it came", len(reqs))
	}
}
