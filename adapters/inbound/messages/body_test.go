package messages_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound/messages"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

func noHeader(string) string { return "" }

func decode(t testing.TB, body string) (chat.Request, error) {
	t.Helper()
	b, err := messages.Decode([]byte(body), noHeader)
	if err != nil {
		return chat.Request{}, err
	}
	return b.Request()
}

// TestDecode: a Messages body is read into the domain's request — the system prompt a system message, a user's
// tool results tool messages before the rest of its content, an assistant's tool_use blocks its tool calls, other
// blocks kept as they came — and every field but the gateway's own kept as it came for an upstream of the format.
func TestDecode(t *testing.T) {
	t.Parallel()
	body := `{"model":"claude/x","max_tokens":32000,"stream":true,"temperature":0.5,"stop_sequences":["END"],
	"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
	"thinking":{"type":"adaptive"},"metadata":{"user_id":"u1"},"tool_choice":{"type":"tool","name":"get"},
	"tools":[{"name":"get","description":"Gets","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],
	"messages":[
	 {"role":"user","content":"Hi"},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"tool_use","id":"t1","name":"get","input":{"q":1}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"42"}]},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}
	]}`
	r, err := decode(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != chat.Messages || r.Model != "claude/x" || !r.Stream || *r.MaxTokens != 32000 || *r.Temperature != 0.5 ||
		!slices.Equal(r.Stop, []string{"END"}) || r.Prepended != 1 {
		t.Fatalf("request %+v", r)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,user" {
		t.Fatalf("roles %s", got)
	}
	if sys := r.Messages[0].Content[0]; sys.Text != "Be brief." || string(sys.CacheControl) != `{"type":"ephemeral","ttl":"1h"}` {
		t.Errorf("system %+v", sys)
	}
	a := r.Messages[2]
	if len(a.ToolCalls) != 1 || a.ToolCalls[0] != (chat.ToolCall{ID: "t1", Name: "get", Arguments: `{"q":1}`}) ||
		a.Content[0].Type != "thinking" || !strings.Contains(string(a.Content[0].Raw), `"signature":"c2ln"`) {
		t.Errorf("assistant %+v", a)
	}
	if tool := r.Messages[3]; tool.ToolCallID != "t1" || tool.Joined() != "42" {
		t.Errorf("tool result %+v", tool)
	}
	if img := r.Messages[4].Content[0]; img.Type != "image_url" || img.ImageURL != "data:image/png;base64,AAAA" {
		t.Errorf("image %+v", img)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "get" || string(r.ToolChoice) != `{"function":{"name":"get"},"type":"function"}` {
		t.Errorf("tools %+v choice %s", r.Tools, r.ToolChoice)
	}
	var extra []string
	for k := range r.Extra {
		extra = append(extra, k)
	}
	slices.Sort(extra)
	if got := strings.Join(extra, ","); got != "max_tokens,messages,metadata,stop_sequences,system,temperature,thinking,tool_choice,tools" {
		t.Errorf("extra %s", got)
	}
	if !json.Valid(r.Extra["messages"]) || !strings.Contains(string(r.Extra["messages"]), `"signature":"c2ln"`) {
		t.Errorf("messages passed on: %s", r.Extra["messages"])
	}
}

// TestDecodeHeaders: anthropic-version and anthropic-beta go on with the request, nothing else.
func TestDecodeHeaders(t *testing.T) {
	t.Parallel()
	h := map[string]string{"anthropic-version": "2026-10-21", "anthropic-beta": "a,b", "x-api-key": "secret"}
	b, err := messages.Decode([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`), func(k string) string { return h[k] })
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Request()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r.Headers) != "map[anthropic-beta:a,b anthropic-version:2026-10-21]" {
		t.Fatalf("headers %v", r.Headers)
	}
}

// TestDecodeRefusals: what the gateway refuses, each a 400 naming the field as the caller sent it.
func TestDecodeRefusals(t *testing.T) {
	t.Parallel()
	msgs := func(m string) string { return `{"model":"m","max_tokens":5,"messages":[` + m + `]}` }
	for _, tt := range []struct {
		name, body, field string
	}{
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"max_tokens a string", `{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"no messages", `{"model":"m","max_tokens":5}`, "messages"},
		{"no message", msgs(``), "messages"},
		{"a tool role", msgs(`{"role":"tool","content":"x"}`), "messages[0].role"},
		{"a message that is no object", msgs(`"hi"`), "messages[0]"},
		{"no content", msgs(`{"role":"user"}`), "messages[0].content"},
		{"content a number", msgs(`{"role":"user","content":5}`), "messages[0].content"},
		{"empty content", msgs(`{"role":"user","content":[]}`), "messages[0].content"},
		{"a block without type", msgs(`{"role":"user","content":[{"text":"x"}]}`), "messages[0].content[0].type"},
		{"text spelled otherwise", msgs(`{"role":"user","content":[{"type":"text","text":"ok","Text":"bad"}]}`), "messages[0].content[0].Text"},
		{"role spelled otherwise", msgs(`{"role":"user","ROLE":"assistant","content":"x"}`), "messages[0].ROLE"},
		{"a NUL in a text", msgs(`{"role":"user","content":[{"type":"text","text":"a\u0000b"}]}`), "messages[0].content[0].text"},
		{"a NUL in a string content", msgs(`{"role":"user","content":"a\u0000b"}`), "messages[0].content"},
		{"invalid UTF-8 in a block passed on", msgs("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"\xff\"}]}"), "messages[0].content[0]"},
		{"a tool_use without id", msgs(`{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}`), "messages[0].content[0]"},
		{"a tool_result without id", msgs(`{"role":"user","content":[{"type":"tool_result","content":"x"}]}`), "messages[0].content[0].tool_use_id"},
		{"an image without source", msgs(`{"role":"user","content":[{"type":"image"}]}`), "messages[0].content[0].source"},
		{"an image source of another type", msgs(`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}`), "messages[0].content[0].source.type"},
		{"a system block of another type", `{"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"x"}]}`, "system[0].source"},
		{"system a number", `{"model":"m","max_tokens":5,"system":5,"messages":[{"role":"user","content":"x"}]}`, "system"},
		{"a tool without name", `{"model":"m","max_tokens":5,"tools":[{"input_schema":{}}],"messages":[{"role":"user","content":"x"}]}`, "tools[0].name"},
		{"tool_choice of another type", `{"model":"m","max_tokens":5,"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]}`, "tool_choice.type"},
		{"temperature past 1", `{"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature"},
		{"model spelled otherwise", `{"model":"m","MODEL":"n","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "MODEL"},
		{"stream spelled otherwise", `{"model":"m","ſtream":true,"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "ſtream"},
		{"too many messages", `{"model":"m","max_tokens":5,"messages":[` + strings.Repeat(`{},`, chat.MaxMessages) + `{}]}`, "messages"},
		{"too many tools", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[` + strings.Repeat(`{},`, chat.MaxTools) + `{}]}`, "tools"},
		{"no JSON", `{"model":`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode(t, tt.body)
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid {
				t.Fatalf("err %v, want a 400", err)
			}
			if tt.field != "" && fmt.Sprint(de.Meta["field"]) != tt.field {
				t.Fatalf("field %v (%s), want %s", de.Meta["field"], de.Msg, tt.field)
			}
		})
	}
}

// TestCheckConfig: a preset saved from a Messages body is refused when no call could use it, naming the field.
func TestCheckConfig(t *testing.T) {
	t.Parallel()
	if err := messages.CheckConfig(map[string]any{"temperature": 0.2, "max_tokens": 100}); err != nil {
		t.Fatal(err)
	}
	err := messages.CheckConfig(map[string]any{"max_tokens": "many"})
	var de *domain.Error
	if !errors.As(err, &de) || de.Meta["field"] != "max_tokens" {
		t.Fatalf("err %v", err)
	}
}

// typicalBody is chatcompletions' typical body as Messages: the same prompt, the system prompt its own field.
const typicalBody = `{"model":"anthropic/claude-sonnet-4.5","stream":true,"temperature":0.7,"max_tokens":256,` +
	`"system":"You are a helpful assistant. Answer briefly.",` +
	`"messages":[{"role":"user","content":"What is the capital of France, and what is it known for?"}]}`

// BenchmarkDecode times a body's way to its request (Decode, then Request), beside chatcompletions'
// BenchmarkDecode/typical: the typical body, and an agent's turn (system blocks with cache_control, a tool call and
// its result, thinking sent back, 20 turns).
func BenchmarkDecode(b *testing.B) {
	var turns strings.Builder
	for i := range 10 {
		if i > 0 {
			turns.WriteByte(',')
		}
		fmt.Fprintf(&turns, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"file contents %d"},{"type":"text","text":"go on","cache_control":{"type":"ephemeral"}}]},`+
			`{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"c2lnbmF0dXJl"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"/a/b%d.go"}}]}`, i, i, i+1, i)
	}
	agent := `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"thinking":{"type":"adaptive"},` +
		`"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Be careful.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],` +
		`"messages":[` + turns.String() + `,{"role":"user","content":"Now fix it."}]}`
	for _, bc := range []struct{ name, body string }{{"typical", typicalBody}, {"agent", agent}} {
		b.Run(bc.name, func(b *testing.B) {
			raw := []byte(bc.body)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(b, bc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestToolResultCarries: what a tool_result's blocks of other kinds carry (search results) is one part beside the
// tool message's text, for the guardrails, however many blocks there are; its text stays the text blocks'.
func TestToolResultCarries(t *testing.T) {
	t.Parallel()
	blocks := strings.Repeat(`{"type":"search_result","source":"https://x.example","title":"t","content":[{"type":"text","text":"Falcon"}]},`, 999)
	r, err := decode(t, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"search","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[`+blocks+`{"type":"text","text":"Found."}]}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	tool := r.Messages[2]
	if tool.Role != "tool" || tool.Joined() != "Found." || len(tool.Content) != 2 || strings.Count(tool.Content[1].Text, "Falcon") != 999 {
		t.Fatalf("tool message %q with %d parts", tool.Joined(), len(tool.Content))
	}
	if texts := r.Texts(); texts[len(texts)-1] != tool.Content[1].Text || r.Fixed() != 1 {
		t.Errorf("the carried text is not the last of Texts, fixed %d", r.Fixed())
	}
}
