package gemini_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream/gemini"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func TestChatContract(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	fakes.ChatContract{Fake: f.Fake, Key: "g-key",
		Client: func(key string, wait time.Duration) ports.ChatProvider { return client(f, key, wait) },
		Sent: func(t *testing.T, r fakes.Request) (string, float64, int) {
			var body struct {
				SystemInstruction struct {
					Parts []struct{ Text string } `json:"parts"`
				} `json:"systemInstruction"`
				GenerationConfig struct {
					Temperature     float64 `json:"temperature"`
					MaxOutputTokens int     `json:"maxOutputTokens"`
				} `json:"generationConfig"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil || r.Path != "/v1beta/models/up-model:streamGenerateContent" ||
				r.Query.Get("alt") != "sse" {
				t.Fatalf("%s?%s: %v: %s", r.Path, r.Query.Encode(), err, r.Body)
			}
			system := ""
			if p := body.SystemInstruction.Parts; len(p) > 0 {
				system = p[0].Text
			}
			return system, body.GenerationConfig.Temperature, body.GenerationConfig.MaxOutputTokens
		},
		Failures: []fakes.Failure{
			{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.GeminiRateLimited},
				Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 1500 * time.Millisecond},
			{Name: "daily quota", Step: fakes.Step{Status: 429, Body: fakes.GeminiDailyQuota}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "server error", Step: fakes.Step{Status: 500, Body: fakes.GeminiServerError}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.GeminiOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
			{Name: "caller's input", Step: fakes.Step{Status: 400, Body: fakes.GeminiBadInput}, Kind: domain.KindInvalid},
		},
	}.Run(t)
}

// TestChatBody: the translation of an OpenAI-shaped request into generateContent.
func TestChatBody(t *testing.T) {
	t.Parallel()
	req := fakes.ChatRequest(t, "gemini-2.5-flash", map[string]any{
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "developer", "content": "Use metric units."},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png?x=1"}},
				map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": "QQ==", "format": "wav"}}}},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "look", "arguments": `{"at":"it"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "a cat"},
			map[string]any{"role": "user", "content": "Thanks"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "look", "description": "Look",
			"parameters": map[string]any{"type": "object", "additionalProperties": false}}}},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "look"}},
		"stop":        "END", "temperature": 0.5, "top_p": 0.9, "max_tokens": 50, "seed": 3,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "object"}}},
	})
	req.Options = map[string]any{"safetySettings": []any{}, "contents": "ignored"}
	body, err := gemini.ChatBody(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(body)
	want := `{"contents":[` +
		`{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"data":"iVBORw0KGgo=","mimeType":"image/png"}},` +
		`{"fileData":{"fileUri":"https://example.com/cat.png?x=1","mimeType":"image/png"}},` +
		`{"input_audio":{"data":"QQ==","format":"wav"},"type":"input_audio"}]},` + // a part of a kind not read: as it came
		`{"role":"model","parts":[{"functionCall":{"args":{"at":"it"},"name":"look"}}]},` +
		`{"role":"user","parts":[{"functionResponse":{"name":"look","response":{"content":"a cat"}}},{"text":"Thanks"}]}],` +
		`"generationConfig":{"maxOutputTokens":50,"responseJsonSchema":{"type":"object"},"responseMimeType":"application/json",` +
		`"seed":3,"stopSequences":["END"],"temperature":0.5,"topP":0.9},"safetySettings":[],` +
		`"systemInstruction":{"parts":[{"text":"Be brief.\n\nUse metric units."}]},` +
		`"toolConfig":{"functionCallingConfig":{"allowedFunctionNames":["look"],"mode":"ANY"}},` +
		`"tools":[{"functionDeclarations":[{"description":"Look","name":"look","parametersJsonSchema":{"additionalProperties":false,"type":"object"}}]}]}`
	if string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

// TestChatBlocked: a prompt the safety filter blocks is an answer with no content and finish reason
// content_filter.
func TestChatBlocked(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	f.Safety = true
	res, err := fakes.ReadChat(t, client(f, "g-key", fakes.Patient), fakes.ChatRequest(t, "m", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}))
	if err != nil || res.FinishReason != "content_filter" || res.NativeFinishReason != "SAFETY" || res.Content.Len() != 0 || res.Usage == nil || res.Usage.PromptTokens != 9 {
		t.Fatalf("err %v finish %q/%q usage %+v", err, res.FinishReason, res.NativeFinishReason, res.Usage)
	}
}

// TestChatBodyLimit: generationConfig is the options' one under the translated fields, with maxOutputTokens
// chat.DefaultMaxTokens (the limit the call's budget was reserved for) when neither names one.
func TestChatBodyLimit(t *testing.T) {
	t.Parallel()
	hi := []any{map[string]any{"role": "user", "content": "Hi"}}
	for _, tc := range []struct {
		name string
		body map[string]any
		opts map[string]any
		want string
	}{
		{"none: the default", map[string]any{"messages": hi}, nil, `{"maxOutputTokens":4096}`},
		{"max_tokens", map[string]any{"messages": hi, "max_tokens": 9, "temperature": 0.5}, nil, `{"maxOutputTokens":9,"temperature":0.5}`},
		{"options kept, with the default", map[string]any{"messages": hi},
			map[string]any{"generationConfig": map[string]any{"thinkingConfig": map[string]any{"thinkingBudget": 0.0}}},
			`{"maxOutputTokens":4096,"thinkingConfig":{"thinkingBudget":0}}`},
		{"options maxOutputTokens", map[string]any{"messages": hi},
			map[string]any{"generationConfig": map[string]any{"maxOutputTokens": 20000.0}}, `{"maxOutputTokens":20000}`},
		{"the request's over the options'", map[string]any{"messages": hi, "max_tokens": 9},
			map[string]any{"generationConfig": map[string]any{"maxOutputTokens": 20000.0, "topK": 3.0}}, `{"maxOutputTokens":9,"topK":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakes.ChatRequest(t, "up-model", tc.body)
			req.Options = tc.opts
			body, err := gemini.ChatBody(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(body["generationConfig"])
			if string(got) != tc.want {
				t.Fatalf("generationConfig %s, want %s", got, tc.want)
			}
		})
	}
}

// TestChatNothingToSend: Gemini refuses a request without contents: a conversation with nothing else than its
// system instruction is not sent.
func TestChatNothingToSend(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	fakes.CheckNothingToSend(t, f.Fake, client(f, "g-key", fakes.Patient))
}

// TestChatUnnamedToolResult: Gemini matches a tool's result to its call by the function's name, and refuses one
// without; a result answering a call id no earlier message made, and naming no function, is not sent (another
// endpoint may take it), the field named. With a name of its own, or answering a call made before, it is sent.
func TestChatUnnamedToolResult(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	p := client(f, "g-key", fakes.Patient)
	call := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "look", "arguments": "{}"}}}}
	ask := map[string]any{"role": "user", "content": "Look"}
	for _, tc := range []struct {
		name   string
		msgs   []any
		field  string // "" when sent
		system string // a preset's system prompt
	}{
		{"an unknown call id", []any{ask, call, map[string]any{"role": "tool", "tool_call_id": "c9", "content": "x"}}, "messages[2].tool_call_id", ""},
		{"under a preset's system prompt", []any{ask, map[string]any{"role": "tool", "tool_call_id": "c9", "content": "x"}}, "messages[1].tool_call_id", "Be brief."},
		{"no call before it", []any{ask, map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}, "messages[1].tool_call_id", ""},
		{"named", []any{ask, map[string]any{"role": "tool", "tool_call_id": "c9", "name": "look", "content": "x"}}, "", ""},
		{"answering its call", []any{ask, call, map[string]any{"role": "tool", "tool_call_id": "c1", "content": "x"}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.Calls()
			req := fakes.ChatRequest(t, "up-model", map[string]any{"messages": tc.msgs})
			var serr error
			if req.Request, serr = req.Request.WithSystem(chat.SystemPrompt{Text: tc.system, MaxBytes: 10 << 20}); serr != nil {
				t.Fatal(serr)
			}
			_, err := fakes.ReadChat(t, p, req)
			if tc.field == "" {
				if err != nil || f.Calls() != before+1 {
					t.Fatalf("err %v, calls %d -> %d", err, before, f.Calls())
				}
				return
			}
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !ue.Retryable || !strings.HasPrefix(ue.Reason, tc.field+": ") {
				t.Fatalf("err = %v (%+v), want a refusal naming %s", err, ue, tc.field)
			}
		})
	}
}
