package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

func messagesTestSink(stream bool) (*messagesSink, *httptest.ResponseRecorder) {
	gin.SetMode(gin.TestMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/messages", nil)
	s := &messagesSink{flushWriter: newFlushWriter(c)}
	s.Start(ports.ChatHead{GenerationID: "gen-1", Model: "m", Stream: stream})
	return s, w
}

// events are the types of a stream's events, in order.
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSpace(body), "\n\n") {
		name, data, _ := strings.Cut(ev, "\n")
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &v); err != nil || "event: "+v.Type != name {
			t.Fatalf("event %q: %v", ev, err)
		}
		out = append(out, v.Type)
	}
	return out
}

// TestMessagesSinkTranslates: an upstream of another format's chunks become Messages events — a text block, then
// a tool_use block with its input's pieces, each block stopped before the next starts, the stop reason and usage
// last — and, not streamed, one message.
func TestMessagesSinkTranslates(t *testing.T) {
	t.Parallel()
	chunks := []chat.Chunk{{Content: "Hel"}, {Content: "lo"}, {ToolCalls: []chat.ToolCallDelta{{Index: 0, ID: "c1", Name: "get"}}},
		{ToolCalls: []chat.ToolCallDelta{{Index: 0, Arguments: `{"q":`}}}, {ToolCalls: []chat.ToolCallDelta{{Index: 0, Arguments: `1}`}}},
		{FinishReason: "tool_calls"}}
	res := &chat.Result{FinishReason: "tool_calls", Usage: &chat.Usage{PromptTokens: 10, CachedTokens: 4, CompletionTokens: 3}}
	res.Content.WriteString("Hello")
	res.ToolCalls = []chat.ToolCall{{ID: "c1", Name: "get", Arguments: `{"q":1}`}}

	s, w := messagesTestSink(true)
	for _, c := range chunks {
		if err := s.Chunk(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(res, 0); err != nil {
		t.Fatal(err)
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop content_block_start " +
		"content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events(t, w.Body.String()), " "); got != want {
		t.Fatalf("events %s\n%s", got, w.Body)
	}
	for _, frag := range []string{`"index":1,"content_block":{"type":"tool_use","id":"c1","name":"get","input":{}}`,
		`"partial_json":"{\"q\":"`, `"stop_reason":"tool_use"`, `"input_tokens":6`, `"cache_read_input_tokens":4`} {
		if !strings.Contains(w.Body.String(), frag) {
			t.Errorf("no %s in\n%s", frag, w.Body)
		}
	}

	s, w = messagesTestSink(false)
	if err := s.Finish(res, 0); err != nil {
		t.Fatal(err)
	}
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []map[string]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil || msg.StopReason != "tool_use" || len(msg.Content) != 2 ||
		msg.Content[1]["type"] != "tool_use" || msg.Content[1]["input"].(map[string]any)["q"] != 1.0 {
		t.Fatalf("message %s: %v", w.Body, err)
	}
}

// TestMessagesSinkGathers: an answer not streamed from an upstream of the format is the message its events make,
// thinking and its signature, a tool's input and the final usage included.
func TestMessagesSinkGathers(t *testing.T) {
	t.Parallel()
	s, w := messagesTestSink(false)
	native := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"get\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"12345678901234567890}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	if err := s.Chunk(chat.Chunk{Native: domain.Opaque(native)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(&chat.Result{}, 0); err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"signature":"c2ln","thinking":"hm","type":"thinking"},{"id":"t1","input":{"q":12345678901234567890},"name":"get","type":"tool_use"}],` +
		`"id":"msg_1","model":"claude","role":"assistant","stop_reason":"tool_use","stop_sequence":null,"type":"message","usage":{"input_tokens":5,"output_tokens":9}}`
	if w.Body.String() != want {
		t.Fatalf("message\n%s\nwant\n%s", w.Body, want)
	}
}

// TestMessagesSinkFails: a stream that breaks ends with an error event in Anthropic's shape.
func TestMessagesSinkFails(t *testing.T) {
	t.Parallel()
	s, w := messagesTestSink(true)
	s.Fail(errors.Join(domain.E(domain.KindOverloaded, "upstream_overloaded", "the provider is overloaded")))
	if got, want := w.Body.String(), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"the provider is overloaded\",\"code\":529}}\n\n"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
