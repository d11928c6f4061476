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

// TestResponsesUntranslatable: a message of a misspelt type, a content part of an unknown type, an item
// reference (which only the upstream's store resolves) and an input of no item chat reads go as they came to an
// upstream that speaks the Responses API, and are a 400 naming them where the call would be translated into chat,
// rather than left out unseen.
func TestResponsesUntranslatable(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)))
	key, _ := g.Key(t, nil)
	for _, tt := range []struct{ input, field string }{
		{`{"role":"user","content":"a"},{"type":"mesage","role":"user","content":"b"}`, "input[1].type"},
		{`{"role":"user","content":"a"},{"type":"message","role":"user","content":[{"type":"input_txt","text":"b"}]}`, "input[1].content[0].type"},
		{`{"role":"user","content":"a"},{"type":"item_reference","id":"msg_1"}`, "input[1]"},
		{`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://x/s.png"}}`, "input"},
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
	if reqs := native.Requests(); len(reqs) != 4 || !strings.Contains(string(reqs[0].Body), `{"type":"mesage","role":"user","content":"b"}`) {
		t.Errorf("the Responses upstream got %d calls, not 4 with the misspelt item as it came", len(reqs))
	}
}

// TestResponsesGuardrailsScanItemsAside: the texts of the items a chat conversation has no place for (a custom
// tool call's output, a shell command's output), which a Responses upstream is sent as they came, are scanned by
// the guardrails as the messages' are (and so is the text of a content part of an unknown type): a blocking filter
// refuses the call; a redaction sends it as chat, without the items, so the text never reaches the upstream.
func TestResponsesGuardrailsScanItemsAside(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)))
	key, hash := g.Key(t, nil)
	codenameRails(t, g, hash)
	body := func(output string) string {
		return `{"model":"resp/native","input":[{"role":"user","content":"run it"},
			{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"},
			{"type":"custom_tool_call_output","call_id":"c1","output":"` + output + `"},
			{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"}]}`
	}
	if r := g.Do(t, "POST", "/responses", key, body("Done")); r.Status != 200 {
		t.Fatalf("a clean call: %d %s", r.Status, r.Body)
	}
	if got := string(native.Requests()[0].Body); !strings.Contains(got, `"custom_tool_call_output"`) || !strings.Contains(got, `"opaque"`) {
		t.Fatalf("the Responses upstream got %s, want the items as they came", got)
	}
	for _, blocked := range []string{
		body("notes on Project Falcon"),
		`{"model":"resp/native","input":[{"role":"user","content":"go"},{"type":"tool_search_call","arguments":{"id":"Project Falcon"}}]}`,
		`{"model":"resp/native","input":[{"role":"user","content":[{"type":"input_txt","text":"Project Falcon"}]}]}`,
	} {
		e := harness.AssertError(t, g.Do(t, "POST", "/responses", key, blocked), 400)
		if !strings.Contains(fmt.Sprint(e["message"]), "codename") {
			t.Errorf("blocked: %v, want the filter named", e)
		}
	}
	if r := g.Do(t, "POST", "/responses", key, body("mail ada@example.com")); r.Status != 200 {
		t.Fatalf("a redacted call: %d %s", r.Status, r.Body)
	}
	reqs := native.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the Responses upstream got %d calls, want 2 (the blocked one never sent)", len(reqs))
	}
	if got := string(reqs[1].Body); strings.Contains(got, "ada@example.com") || strings.Contains(got, "custom_tool_call_output") {
		t.Errorf("after a redaction the upstream got %s", got)
	}
}

// TestResponsesReservesItemsAside: a call's budget is reserved for the items chat leaves out where they are sent
// (a Responses upstream), and not where they are not (a chat upstream): 40 KB of reasoning passes a $0.01 key limit
// to a chat model and is a 402 to a Responses one.
func TestResponsesReservesItemsAside(t *testing.T) {
	t.Parallel()
	native, chatOnly := fakes.NewOpenAI(t, "sk-resp"), fakes.NewOpenAI(t, "sk-chat")
	g := harness.Start(t, harness.WithConfig(responsesConfig(native, chatOnly)))
	key, _ := g.Key(t, map[string]any{"limit": 0.01})
	body := `{"model":"%s","max_output_tokens":100,"input":[{"role":"user","content":"go on"},
		{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"` + strings.Repeat("A", 40_000) + `"}]}`
	if r := g.Do(t, "POST", "/responses", key, fmt.Sprintf(body, "resp/chat")); r.Status != 200 {
		t.Errorf("to a chat upstream: %d %s", r.Status, r.Body)
	}
	harness.AssertError(t, g.Do(t, "POST", "/responses", key, fmt.Sprintf(body, "resp/native")), 402)
	if n := len(native.Requests()); n != 0 {
		t.Errorf("the Responses upstream was called %d times", n)
	}
}

// codenameRails assigns the key of hash a guardrail that redacts emails and blocks "Project Falcon" (its filter
// labelled codename).
func codenameRails(t *testing.T, g *harness.Gateway, hash string) {
	t.Helper()
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"codename rails",
		"content_filter_builtins":[{"slug":"email","action":"redact"}],
		"content_filters":[{"pattern":"(?i)project falcon","action":"block","label":"codename"}]}`)
	gr := r.JSON(t)["data"].(map[string]any)["id"].(string)
	if r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{hash}}); r.Status != 200 {
		t.Fatalf("assign: %d %s", r.Status, r.Body)
	}
}
