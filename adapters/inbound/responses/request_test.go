package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

func request(s string) (chat.Request, error) {
	b, err := Decode([]byte(s))
	if err != nil {
		return chat.Request{}, err
	}
	return b.Request()
}

// TestDecode: the input items become chat messages (a function call joins the assistant message before it, its
// output is a tool message, reasoning is left out), the instructions a system message counted as prepended, the
// tools functions (a namespace's flattened, hosted ones left out), and the caller's fields stay in Extra but the
// gateway's own.
func TestDecode(t *testing.T) {
	t.Parallel()
	r, err := request(`{"model":"m","instructions":"Be brief.","stream":true,"max_output_tokens":50,"store":false,
		"previous_response_id":"resp_1","tool_choice":{"type":"function","name":"look"},
		"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},
		"tools":[{"type":"function","name":"look","parameters":{"type":"object"}},{"type":"web_search"},
			{"type":"namespace","name":"ns","tools":[{"type":"function","name":"inner"}]}],
		"input":[{"role":"user","content":"What is this?"},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},
			{"type":"function_call","call_id":"c1","name":"look","arguments":"{}"},
			{"type":"function_call","call_id":"c2","name":"inner","arguments":"{\"x\":1}"},
			{"type":"function_call_output","call_id":"c1","output":"a cat"},
			{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"a dog"}]},
			{"role":"user","content":[{"type":"input_text","text":"And?"},{"type":"input_image","image_url":"https://x/a.png","detail":"low"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" || r.Prepended != 1 || r.Messages[0].Joined() != "Be brief." {
		t.Fatalf("messages %v, prepended %d", roles, r.Prepended)
	}
	if a := r.Messages[2]; a.Joined() != "Let me look." || len(a.ToolCalls) != 2 || a.ToolCalls[1] != (chat.ToolCall{ID: "c2", Name: "inner", Arguments: `{"x":1}`}) {
		t.Errorf("assistant message: %+v", a)
	}
	if m := r.Messages[4]; m.ToolCallID != "c2" || m.Joined() != "a dog" {
		t.Errorf("second tool output: %+v", m)
	}
	if p := r.Messages[5].Content[1]; p.Type != "image_url" || p.ImageURL != "https://x/a.png" || p.Detail != "low" {
		t.Errorf("image part: %+v", p)
	}
	if len(r.Tools) != 2 || r.Tools[0].Name != "look" || r.Tools[1].Name != "inner" {
		t.Errorf("tools: %+v", r.Tools)
	}
	if string(r.ToolChoice) != `{"function":{"name":"look"},"type":"function"}` ||
		string(r.ResponseFormat) != `{"json_schema":{"name":"out","schema":{"type":"object"},"strict":true},"type":"json_schema"}` {
		t.Errorf("tool_choice %s, response_format %s", r.ToolChoice, r.ResponseFormat)
	}
	if r.Format != chat.Responses || !r.Stream || *r.MaxTokens != 50 || r.Continues != "resp_1" || !r.IncludeUsage {
		t.Errorf("request: %+v", r)
	}
	for _, k := range []string{"input", "store", "tools", "text", "previous_response_id", "max_output_tokens"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("%s is not passed on", k)
		}
	}
	for _, k := range []string{"model", "stream", "instructions"} {
		if _, ok := r.Extra[k]; ok {
			t.Errorf("%s, the gateway's own, is passed on as it came", k)
		}
	}
	if got := strings.Join(r.Parameters(), ","); got != "max_tokens,previous_response_id,response_format,store,tool_choice,tools" {
		t.Errorf("parameters %v", got)
	}
}

// TestInputString: a string input is one user message.
func TestInputString(t *testing.T) {
	t.Parallel()
	r, err := request(`{"model":"m","input":"Hi"}`)
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Joined() != "Hi" || r.Prepended != 0 {
		t.Fatalf("%+v %v", r.Messages, err)
	}
}

// TestErrorFields: every refusal names the field as the caller sent it: the input item (not the message it
// became), the instructions, the tools.
func TestErrorFields(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ fields, field string }{
		{`"input":null`, "input"},
		{`"input":5`, "input"},
		{`"input":[]`, "input"},
		{`"input":[5]`, "input[0]"},
		{`"input":[{"role":"user","content":"a"},{"role":"robot","content":"x"}]`, "input[1].role"},
		{`"instructions":"x","input":[{"type":"function_call_output","output":"x"}]`, "input[0].call_id"},
		{`"instructions":"x","input":[{"role":"user","content":"a"},{"role":"user","content":"b\u0000"}]`, "input[1].content[0].text"},
		{`"input":[{"role":"user","content":5}]`, "input[0].content"},
		{`"input":[{"role":"user","content":[{"type":"input_text","text":"a"},7]}]`, "input[0].content[1]"},
		{`"instructions":"\u0000","input":"x"`, "instructions"},
		{`"instructions":5,"input":"x"`, "instructions"},
		{`"input":"x","max_output_tokens":0`, "max_output_tokens"},
		{`"input":"x","max_output_tokens":"5"`, "max_output_tokens"},
		{`"input":"x","temperature":3`, "temperature"},
		{`"input":"x","tools":[{"type":"function"}]`, "tools[0].name"},
		{`"input":"x","tools":[{"name":"f"}]`, "tools[0]"},
		{`"input":"x","tool_choice":5`, "tool_choice"},
		{`"input":"x","text":{"format":{"type":"xml"}}`, "text.format.type"},
		{`"input":"x","previous_response_id":5`, "previous_response_id"},
		{`"input":"x","tools":[{"type":"function","name":5}]`, "tools[0].name"},
		{`"input":"x","tools":[{"type":"function","name":"f","strict":"x"}]`, "tools[0].strict"},
		{`"input":"x","tools":[{"type":"namespace","tools":"x"}]`, "tools[0].tools"},
		{`"input":"x","tools":[5]`, "tools[0]"},
		{`"input":"x","text":{"format":{"type":5}}`, "text.format.type"},
		{`"input":"x","text":{"format":"x"}`, "text.format"},
		{`"input":"x","text":{"format":{"type":"json_schema","name":5}}`, "text.format.name"},
		{`"input":"x","text":"x"`, "text"},
		{`"input":"x","tool_choice":{"type":"function","name":5}`, "tool_choice.name"},
		{`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":5}]`, "input[0].arguments"},
		{`"input":[{"role":"user","content":[{"type":5}]}]`, "input[0].content[0].type"},
		{`"input":"x","metadata":{"k":"` + "\xff" + `"}`, "metadata"},
		{`"input":"x","Stream":true`, "Stream"},
		{`"input":[` + strings.Repeat(`{"role":"user","content":"x"},`, chat.MaxMessages) + `{"role":"user","content":"x"}]`, "input"},
	} {
		_, err := request(`{"model":"m",` + tt.fields + `}`)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != tt.field {
			t.Errorf("%.60s: %v, want a 400 naming %s", tt.fields, err, tt.field)
		}
	}
}

// TestContinue: a conversation kept by a WebSocket connection is laid before the input, which then holds it whole.
func TestContinue(t *testing.T) {
	t.Parallel()
	b, err := Decode([]byte(`{"model":"m","input":"And?","previous_response_id":"resp_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Continue([]json.RawMessage{json.RawMessage(`{"role":"user","content":"Hi"}`),
		json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}`)}); err != nil {
		t.Fatal(err)
	}
	r, err := b.Request()
	if err != nil || len(r.Messages) != 3 || r.Messages[1].Joined() != "Hello" || r.Messages[2].Joined() != "And?" || r.Continues != "" {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestCheckConfig: a preset saved from a Responses body is refused when no call could use it.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	if err := CheckConfig(map[string]any{"max_output_tokens": 100.0, "temperature": 0.5}); err != nil {
		t.Fatal(err)
	}
	var de *domain.Error
	if err := CheckConfig(map[string]any{"max_output_tokens": "x"}); !errors.As(err, &de) || de.Meta["field"] != "max_output_tokens" {
		t.Fatalf("%v", err)
	}
}
