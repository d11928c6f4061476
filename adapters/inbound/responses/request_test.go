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

// TestInputItemTypes: an item of a type the Responses API has but a chat conversation has no place for (reasoning,
// hosted and built-in tools' calls, custom tools' calls and outputs, item references, explicit or by id alone) is
// left out of the messages, whatever its other members hold, and kept aside with the texts in it; the items a chat
// model reads are kept, in order, around it.
func TestInputItemTypes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ item, texts string }{
		{`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"x"}`, ""},
		{`{"type":"compaction","encrypted_content":"x"}`, ""},
		{`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`, "type|search|query|q"},
		{`{"type":"file_search_call","id":"fs_1","queries":["q"],"status":"completed"}`, "q"},
		{`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://x/s.png"}}`, "type|computer_screenshot|image_url|https://x/s.png"},
		{`{"type":"tool_search_call","arguments":{"query":"q"},"status":"completed"}`, "query|q"},
		{`{"type":"shell_call_output","call_id":"c","output":[{"stdout":"ok"}]}`, "stdout|ok"},
		{`{"type":"mcp_call","id":"mcp_1","server_label":"s","name":"f","arguments":"{}","output":"x"}`, "s|f|{}|x"},
		{`{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin Patch"}`, "apply_patch|*** Begin Patch"},
		{`{"type":"custom_tool_call_output","call_id":"c","output":"Done"}`, "Done"},
		{`{"type":"configuration_update","reasoning":{"effort":"high"}}`, "effort|high"},
		{`{"type":"ghost_snapshot","ghost_commit":{"id":"c1"}}`, "id|c1"},
		{`{"type":"function_call_outptu","call_id":"c","output":{"x":1e400}}`, "x"},
		{`{"type":"item_reference","id":"msg_1"}`, ""},
		{`{"id":"msg_1"}`, ""},
	} {
		item := tt.item
		r, err := request(`{"model":"m","input":[{"role":"user","content":"a"},` + item + `,{"role":"user","content":"b"}]}`)
		if err != nil || len(r.Messages) != 2 || r.Messages[0].Joined() != "a" || r.Messages[1].Joined() != "b" {
			t.Errorf("%.50s: %+v %v, want it left out", item, r.Messages, err)
		}
		if reference := strings.Contains(item, `"msg_1"`); (r.Untranslatable != "") != reference {
			t.Errorf("%.50s: untranslatable %q, want a chat upstream refused only for an item reference", item, r.Untranslatable)
		}
		// Left out of the messages, the item is kept aside as it came: its text scanned, its bytes reserved for.
		want := strings.ReplaceAll(tt.texts, "|", "\n")
		if len(r.Aside) != 1 || string(r.Aside[0].Raw) != item || r.Aside[0].Text != want {
			t.Errorf("%.50s: aside %+v, want the item with text %q", item, r.Aside, want)
		}
		if want != "" {
			want = "\x00" + want
		}
		if got := strings.Join(r.Texts(), "\x00"); got != "a\x00b"+want {
			t.Errorf("%.50s: texts %q, want the messages' then the item's", item, got)
		}
	}
}

// TestContentParts: text parts of every kind are text (a refusal's text is its refusal), an image an image, a file
// or an audio part kept as it came.
func TestContentParts(t *testing.T) {
	t.Parallel()
	r, err := request(`{"model":"m","input":[{"role":"assistant","content":[{"type":"output_text","text":"a"},
		{"type":"refusal","refusal":"b"}]},{"role":"user","content":[{"type":"input_text","text":"c"},
		{"type":"input_file","file_id":"file-1"},{"type":"input_image","image_url":"https://x/a.png"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Messages[0].Joined(); got != "ab" {
		t.Errorf("assistant text %q", got)
	}
	if p := r.Messages[1].Content; len(p) != 3 || p[1].Type != "input_file" || string(p[1].Raw) != `{"type":"input_file","file_id":"file-1"}` || p[2].Type != "image_url" {
		t.Errorf("user parts %+v", p)
	}
}

// TestRefusedItems: an item without a type, a member of the wrong type and a member named in another case are 400s
// saying so, naming the field as the caller sent it.
func TestRefusedItems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ fields, msg string }{
		{`"input":[{"content":"a"}]`, `input[0].type: is required (a message may give its role instead)`},
		{`"input":[{"id":"msg_1","type":5}]`, `input[0].type: must be a string, not a number`},
		{`"input":[{"id":"msg_1","role":5}]`, `input[0].role: must be a string, not a number`},
		{`"input":[{"role":"user","content":[{"text":"a"}]}]`, `input[0].content[0]: must be a content part object with a type`},
		// encoding/json would read TYPE as type, and an upstream only type: the gateway would scan another item.
		{`"input":[{"type":"custom_tool_call_output","TYPE":"message","role":"user","content":"hi","call_id":"c","output":"x"}]`,
			`input[0].TYPE: is "type" spelled otherwise`},
		{`"input":[{"role":"user","content":[{"type":"input_text","text":"hi","TEXT":"x"}]}]`,
			`input[0].content[0].TEXT: is "text" spelled otherwise`},
	} {
		_, err := request(`{"model":"m",` + tt.fields + `}`)
		var de *domain.Error
		field, _, _ := strings.Cut(tt.msg, ":")
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Meta["field"] != field || !strings.HasPrefix(de.Msg, tt.msg) {
			t.Errorf("%.70s: %v, want a 400 %q", tt.fields, err, tt.msg)
		}
	}
}

// TestUntranslatable: a message of a misspelt type (one with a role), a content part of a type the gateway does not
// know, an item reference, and an input with no item a chat model reads (with instructions or without) are decoded,
// kept for an upstream that speaks the Responses API, and named (the first of them) as what a chat upstream cannot
// be sent; an item of another type is left out of the chat conversation, as reasoning is.
func TestUntranslatable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ fields, why string }{
		{`"input":[{"role":"user","content":"a"}]`, ``},
		{`"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]},{"type":"reasoning","summary":[]}]`, ``},
		{`"input":[{"role":"user","content":"a"},{"type":"reasoning","summary":[]},{"type":"mesage","role":"user","content":"c"},{"type":"x"}]`,
			`input[2].type: unknown input item type "mesage"`},
		{`"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_txt","text":"b"}]}]`,
			`input[0].content[1].type: unknown content part type "input_txt"`},
		{`"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"text_input","text":"b"}]}]`,
			`input[0].output[0].type: unknown content part type "text_input"`},
		{`"input":[{"role":"user","content":"a"},{"type":"item_reference","id":"msg_1"}]`, `input[1]: an item_reference`},
		{`"input":[{"role":"user","content":"a"},{"id":"msg_1"}]`, `input[1]: an item_reference`},
		{`"instructions":"Be brief.","input":[{"type":"custom_tool_call_output","call_id":"c","output":"x"}]`,
			`input: holds no message, function_call or function_call_output item`},
		{`"input":[{"type":"computer_call_output","call_id":"c","output":{}}],"previous_response_id":"resp_1"`,
			`input: holds no message, function_call or function_call_output item`},
		{`"input":[{"type":"reasoning","summary":[]},{"type":"item_reference","id":"msg_1"}]`, `input[1]: an item_reference`},
	} {
		r, err := request(`{"model":"m",` + tt.fields + `}`)
		if err != nil || !strings.HasPrefix(r.Untranslatable, tt.why) || (tt.why == "") != (r.Untranslatable == "") {
			t.Errorf("%.70s: %q %v, want %q", tt.fields, r.Untranslatable, err, tt.why)
		}
	}
}

// TestContinue: a conversation kept by a WebSocket connection is laid before the input, which then holds it whole,
// unless that conversation itself continued a response the upstream stored: the request then names that one.
func TestContinue(t *testing.T) {
	t.Parallel()
	before := []json.RawMessage{json.RawMessage(`{"role":"user","content":"Hi"}`),
		json.RawMessage(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}`)}
	for _, tt := range []struct {
		stored    json.RawMessage
		continues string
	}{{nil, ""}, {json.RawMessage(`"resp_0"`), "resp_0"}} {
		b, err := Decode([]byte(`{"model":"m","input":"And?","previous_response_id":"resp_1"}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Continue(before, tt.stored); err != nil {
			t.Fatal(err)
		}
		r, err := b.Request()
		if err != nil || len(r.Messages) != 3 || r.Messages[1].Joined() != "Hello" || r.Messages[2].Joined() != "And?" || r.Continues != tt.continues {
			t.Fatalf("stored %s: %+v %v", tt.stored, r, err)
		}
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
