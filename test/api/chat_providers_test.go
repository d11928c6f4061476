package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestChatProviders: chat through the gateway to each upstream that is not OpenAI-compatible, answered in
// OpenAI's shape — a tool call round trip not streamed, then a stream with its usage — and recorded with the
// upstream's own finish reason.
func TestChatProviders(t *testing.T) {
	t.Parallel()
	ant, gem := fakes.NewAnthropic(t, "sk-ant"), fakes.NewGemini(t, "g-key")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant, timeout: 10s, idle_timeout: 10s}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-key, timeout: 10s, idle_timeout: 10s}
models:
  - id: claude
    modality: chat
    endpoints: [{provider: anthropic, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]
  - id: gemini
    modality: chat
    endpoints: [{provider: gemini, upstream_model: gemini-x, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 4}}]
`, ant.BaseURL(), gem.BaseURL())))
	key, _ := g.Key(t, nil)
	for _, tc := range []struct {
		model, provider        string
		nativeStop, nativeTool string
		fake                   *fakes.Fake
		system                 func(body []byte) string
	}{
		{"claude", "anthropic", "end_turn", "tool_use", ant.Fake, func(b []byte) string {
			var body struct{ System string }
			_ = json.Unmarshal(b, &body)
			return body.System
		}},
		{"gemini", "gemini", "STOP", "STOP", gem.Fake, func(b []byte) string {
			var body struct {
				SystemInstruction struct{ Parts []struct{ Text string } }
			}
			_ = json.Unmarshal(b, &body)
			if len(body.SystemInstruction.Parts) == 0 {
				return ""
			}
			return body.SystemInstruction.Parts[0].Text
		}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}}}}
			msgs := []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Weather in Paris?"}}
			r := g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": tc.model, "messages": msgs, "tools": tools})
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			choice := r.JSON(t)["choices"].([]any)[0].(map[string]any)
			calls, _ := choice["message"].(map[string]any)["tool_calls"].([]any)
			if choice["finish_reason"] != "tool_calls" || choice["native_finish_reason"] != tc.nativeTool || len(calls) != 1 {
				t.Fatalf("tool call: %s", r.Body)
			}
			if got := tc.system(tc.fake.Requests()[0].Body); got != "Be brief." {
				t.Fatalf("system prompt upstream: %q", got)
			}
			call := calls[0].(map[string]any)
			fn := call["function"].(map[string]any)
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": calls},
				map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
			if fn["name"] != "get_weather" || fn["arguments"] != `{"location":"Paris"}` {
				t.Fatalf("tool call: %v", call)
			}
			r = g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": tc.model, "messages": msgs, "tools": tools,
				"stream": true, "stream_options": map[string]any{"include_usage": true}})
			var text strings.Builder
			var usage map[string]any
			for _, e := range events(t, r.Body) {
				var c struct {
					Choices []struct {
						Delta struct{ Content string }
					}
					Usage map[string]any
				}
				if e != "[DONE]" && json.Unmarshal([]byte(e), &c) != nil {
					t.Fatalf("chunk %s", e)
				}
				if len(c.Choices) > 0 {
					text.WriteString(c.Choices[0].Delta.Content)
				}
				if c.Usage != nil {
					usage = c.Usage
				}
			}
			if text.String() != "The tool said: sunny" || usage == nil || usage["completion_tokens"] != 4.0 {
				t.Fatalf("stream: text %q usage %v: %s", text.String(), usage, r.Body)
			}
			rec := generationOf(t, g, r)
			if rec["native_finish_reason"] != tc.nativeStop || rec["finish_reason"] != "stop" || jsonString(rec["tokens_completion"]) != "4" ||
				jsonString(rec["tokens_prompt"]) == "0" || rec["provider_name"] != tc.provider || rec["streamed"] != true {
				t.Fatalf("record %v", rec)
			}
		})
	}
}

// TestMessagesMalformedUpstream: a Messages answer not streamed is gathered from the Anthropic upstream's events;
// events that make no message (none begins it, a block restarted without its block) are the upstream's fault: a
// 502 in Anthropic's shape, recorded as an error and not billed, never a 500 or a charge for an answer the caller
// did not get. A tool's input cut by max_tokens is answered, with the input {}.
func TestMessagesMalformedUpstream(t *testing.T) {
	t.Parallel()
	ant := fakes.NewAnthropic(t, "sk-ant")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant}
models:
  - {id: claude, modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
`, ant.BaseURL())))
	key, _ := g.Key(t, nil)
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":30,"output_tokens":1}}}`)
	tool := ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`)
	args := ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Par"}}`)
	end := ev("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":8}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
	for _, tt := range []struct {
		name   string
		events []string
		status int
	}{
		{"max_tokens inside a tool's input", []string{start, tool, args, end}, 200},
		{"no message_start", []string{tool, args, end}, 502},
		{"a block restarted without its block", []string{start, tool, args, ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":null}`), end}, 502},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ant.Script(fakes.Step{Events: tt.events})
			r := g.Do(t, "POST", "/messages", key, `{"model":"claude","max_tokens":8,"messages":[{"role":"user","content":"Weather in Paris?"}],`+
				`"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`)
			if r.Status != tt.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			rec := generationOf(t, g, r)
			if tt.status == 200 {
				var msg struct {
					StopReason string `json:"stop_reason"`
					Content    []struct {
						Type  string
						Input map[string]any
					}
				}
				if err := json.Unmarshal(r.Body, &msg); err != nil || msg.StopReason != "max_tokens" || len(msg.Content) != 1 || msg.Content[0].Input == nil {
					t.Fatalf("message %s: %v", r.Body, err)
				}
				if rec["cancelled"] != false || fmt.Sprint(rec["total_cost"]) == "0" {
					t.Fatalf("record %v", rec)
				}
				return
			}
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(r.Body, &e); err != nil || e.Type != "error" || e.Error.Type != "api_error" || !strings.Contains(e.Error.Message, "malformed") {
				t.Fatalf("error %s: %v", r.Body, err)
			}
			if rec["cancelled"] != false || rec["finish_reason"] != "error" || fmt.Sprint(rec["total_cost"]) != "0" {
				t.Fatalf("record: cancelled %v, finish_reason %v, total_cost %v", rec["cancelled"], rec["finish_reason"], rec["total_cost"])
			}
		})
	}
}
