package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/inbound/responses"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// responsesRequest decodes body as the gateway decodes a Responses body.
func responsesRequest(t *testing.T, body string) ports.ChatRequest {
	t.Helper()
	b, err := responses.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Request()
	if err != nil {
		t.Fatal(err)
	}
	return ports.ChatRequest{UpstreamModel: "gpt-fake", Request: r}
}

// TestResponsesPassThrough: a Responses request to a provider that serves the Responses API goes to POST
// /responses as it came (its items, its hosted tools, store), with the gateway's model, stream, instructions and
// completion limit; its events come back each as a chunk, whole in Native, read for the text, the call and the
// usage.
func TestResponsesPassThrough(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := openai.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: "sk-test", Timeout: time.Minute, Responses: true}, upstream.NewHTTPClient())
	if !c.Speaks(chat.Responses) || !c.Speaks(chat.ChatCompletions) {
		t.Fatal("the client does not say it speaks the Responses API")
	}
	req := responsesRequest(t, `{"model":"m","instructions":"Be brief.","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[]},
		{"role":"user","content":"Weather?"}],"tools":[{"type":"function","name":"get_weather"},{"type":"web_search"}]}`)
	reply, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer reply.Body.Close()
	stream := reply.Decode(reply.Body)
	var res chat.Result
	var native strings.Builder
	for {
		chunk, err := stream.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			break
		}
		res.Add(chunk)
		native.Write(chunk.Native)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "get_weather" || res.ToolCalls[0].Arguments != `{"location":"Paris"}` ||
		res.FinishReason != "tool_calls" || res.Usage == nil || res.Usage.CompletionTokens != 12 {
		t.Fatalf("result %+v", res)
	}
	if !strings.HasPrefix(native.String(), "event: response.created\ndata: {") || !strings.Contains(native.String(), "event: response.completed\n") {
		t.Fatalf("native events %.200s", native.String())
	}
	reqs := f.Requests()
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].Body, &sent); err != nil || reqs[0].Path != "/v1/responses" {
		t.Fatalf("%s %s", reqs[0].Path, reqs[0].Body)
	}
	for k, want := range map[string]string{"model": `"gpt-fake"`, "stream": "true", "instructions": `"Be brief."`, "store": "false",
		"max_output_tokens": "4096"} {
		if string(sent[k]) != want {
			t.Errorf("%s sent as %s, want %s", k, sent[k], want)
		}
	}
	if !strings.Contains(string(sent["input"]), `"type":"reasoning"`) || !strings.Contains(string(sent["tools"]), "web_search") {
		t.Errorf("the caller's items and tools were not passed on: %s", reqs[0].Body)
	}
}

// TestResponsesTranslated: a provider that only has chat gets the Responses request as chat completions: its
// messages, its function tools (not the hosted ones), its completion limit.
func TestResponsesTranslated(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := client(f, "sk-test", time.Minute)
	if c.Speaks(chat.Responses) {
		t.Fatal("a chat-only provider says it speaks the Responses API")
	}
	req := responsesRequest(t, `{"model":"m","instructions":"Be brief.","max_output_tokens":3,"temperature":0.5,"store":false,
		"input":"Hi","tools":[{"type":"function","name":"get_weather"},{"type":"web_search"}],"tool_choice":"none"}`)
	res, err := fakes.ReadChat(t, c, req)
	if err != nil || res.Content.String() != " w0 w1 w2" || res.FinishReason != "length" {
		t.Fatalf("%v %+v", err, res)
	}
	var sent struct {
		Messages []struct{ Role, Content string }
		Tools    []struct {
			Type     string
			Function struct{ Name string }
		}
		ToolChoice          string  `json:"tool_choice"`
		MaxCompletionTokens int     `json:"max_completion_tokens"`
		Temperature         float64 `json:"temperature"`
		Store               *bool   `json:"store"`
		Input               *string `json:"input"`
	}
	r := f.Requests()[0]
	if err := json.Unmarshal(r.Body, &sent); err != nil || r.Path != "/v1/chat/completions" {
		t.Fatalf("%s %s", r.Path, r.Body)
	}
	if len(sent.Messages) != 2 || sent.Messages[0].Content != "Be brief." || len(sent.Tools) != 1 || sent.Tools[0].Function.Name != "get_weather" ||
		sent.ToolChoice != "none" || sent.MaxCompletionTokens != 3 || sent.Temperature != 0.5 || sent.Store != nil || sent.Input != nil {
		t.Fatalf("the chat upstream got %s", r.Body)
	}
}

// TestResponsesRedacted: a request whose text a guardrail redacted goes as chat (the redacted messages, not the
// caller's input as it came); one that continues a stored response, or holds what chat cannot carry, then cannot, and
// is the caller's 400.
func TestResponsesRedacted(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := openai.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: "sk-test", Timeout: time.Minute, Responses: true}, upstream.NewHTTPClient())
	req := responsesRequest(t, `{"model":"m","input":"my card is 4111"}`)
	req.Request = req.Request.WithTexts([]string{"my card is [REDACTED]"})
	if _, err := fakes.ReadChat(t, c, req); err != nil {
		t.Fatal(err)
	}
	if r := f.Requests()[0]; r.Path != "/v1/chat/completions" || strings.Contains(string(r.Body), "4111") {
		t.Fatalf("a redacted request went as %s %s", r.Path, r.Body)
	}
	req.Request.Continues = "resp_1"
	_, err := c.Chat(context.Background(), req)
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !strings.HasPrefix(ue.Reason, "previous_response_id") {
		t.Fatalf("%v", err)
	}
	req.Request.Continues, req.Request.Untranslatable = "", `input[1].type: unknown input item type "x"`
	if _, err := c.Chat(context.Background(), req); !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !strings.HasPrefix(ue.Reason, "input[1].type") {
		t.Fatalf("%v", err)
	}
}

// TestResponsesPresetPrompt: a preset's system prompt laid before a Responses request's input goes upstream as the
// instructions, the caller's fields as they came (a reasoning item chat has not among them), not as chat.
func TestResponsesPresetPrompt(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := openai.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: "sk-test", Timeout: time.Minute, Responses: true}, upstream.NewHTTPClient())
	req := responsesRequest(t, `{"model":"m","input":[{"type":"reasoning","summary":[],"encrypted_content":"e"},{"role":"user","content":"Hi"}]}`)
	var err error
	if req.Request, err = req.Request.WithSystem(chat.SystemPrompt{Text: "Be brief.", MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := fakes.ReadChat(t, c, req); err != nil {
		t.Fatal(err)
	}
	r := f.Requests()[0]
	var body struct {
		Instructions string
		Input        []struct{ Type string }
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || r.Path != "/v1/responses" || body.Instructions != "Be brief." ||
		len(body.Input) != 2 || body.Input[0].Type != "reasoning" {
		t.Fatalf("a preset's prompt went as %s %s", r.Path, r.Body)
	}
}

// TestResponsesStreamFailures: an event that is no JSON, a failure event, and a stream that ends before the
// response completed each break the answer (and may fail over before its first token).
func TestResponsesStreamFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, events string }{
		{"not JSON", "event: response.created\ndata: {\n\n"},
		{"failed", "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"message\":\"boom\"}}}\n\n"},
		{"error", "event: error\ndata: {\"type\":\"error\",\"message\":\"boom\"}\n\n"},
		{"cut", "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"},
	} {
		s := openai.NewResponsesStream(strings.NewReader(tt.events), 200)
		var err error
		for err == nil {
			_, err = s.Next()
		}
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || !ue.Retryable {
			t.Errorf("%s: %v, want a retryable upstream failure", tt.name, err)
		}
	}
}
