package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
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
// a tool_use block with its input's pieces as they come, each block stopped before the next starts, the stop
// reason and usage last — and, not streamed, one message.
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
	if !strings.Contains(w.Body.String(), `"partial_json":"1}"`) { // the call's input streams as it comes
		t.Fatalf("before the end:\n%s", w.Body)
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

// TestMessagesSinkToolCalls: a translated stream's tool calls reach the caller as the same calls a whole answer
// holds, however the upstream sends their deltas: interleaved, with text between their pieces, or with the id and
// name repeated on each. The first call streams as it comes, and the others come whole after it; arguments that
// are not a JSON object are {} in a whole answer and in a call that comes whole, and as they came in one that
// streamed (as Anthropic's own stream cut by its token limit).
func TestMessagesSinkToolCalls(t *testing.T) {
	t.Parallel()
	delta := func(i int, id, name, args string) chat.Chunk {
		return chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: i, ID: id, Name: name, Arguments: args}}}
	}
	type call struct{ ID, Name, Input string }
	for _, tt := range []struct {
		name     string
		chunks   []chat.Chunk
		want     []call
		streamed string // the first call's input streamed, when it is not want's
	}{
		{"interleaved", []chat.Chunk{delta(0, "c1", "f", ""), delta(1, "c2", "g", ""), delta(0, "", "", `{"a":1}`), delta(1, "", "", `{"b":2}`)},
			[]call{{"c1", "f", `{"a":1}`}, {"c2", "g", `{"b":2}`}}, ""},
		{"text between the pieces", []chat.Chunk{delta(0, "c1", "f", `{"a":`), {Content: "hm"}, delta(0, "", "", `1}`)},
			[]call{{"c1", "f", `{"a":1}`}}, ""},
		{"id and name on every delta", []chat.Chunk{delta(0, "c1", "f", `{"a":`), delta(0, "c1", "f", `1}`)},
			[]call{{"c1", "f", `{"a":1}`}}, ""},
		{"a name in pieces", []chat.Chunk{delta(0, "c1", "get_", ""), delta(0, "", "weather", ""), delta(0, "", "", `{"a":1}`)},
			[]call{{"c1", "get_weather", `{"a":1}`}}, ""},
		{"the id after the name", []chat.Chunk{delta(0, "", "f", ""), delta(0, "c1", "", ""), delta(0, "", "", `{"a":1}`)},
			[]call{{"c1", "f", `{"a":1}`}}, ""},
		{"arguments after the finish", []chat.Chunk{delta(0, "c1", "f", `{"a":`), {FinishReason: "tool_calls"}, delta(0, "", "", `1}`), delta(1, "c2", "g", "{}")},
			[]call{{"c1", "f", `{"a":1}`}, {"c2", "g", "{}"}}, ""},
		{"every call at index 0", []chat.Chunk{delta(0, "c1", "f", "{}"), delta(0, "c2", "g", `{"b":2}`)},
			[]call{{"c1", "f", "{}"}, {"c2", "g", `{"b":2}`}}, ""},
		{"not an object", []chat.Chunk{delta(0, "c1", "f", `{not json`), delta(1, "c2", "g", `[1,2]`)},
			[]call{{"c1", "f", `{}`}, {"c2", "g", `{}`}}, `{not json`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, w := messagesTestSink(true)
			res := &chat.Result{}
			for _, c := range append(tt.chunks, chat.Chunk{FinishReason: "tool_calls"}) {
				res.Add(c)
				if err := s.Chunk(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Finish(res, 0); err != nil {
				t.Fatal(err)
			}
			var got []call
			var blocks []int // each call's block index
			inputs := map[int]*strings.Builder{}
			for _, ev := range strings.Split(strings.TrimSpace(w.Body.String()), "\n\n") {
				_, data, _ := strings.Cut(ev, "\ndata: ")
				var e struct {
					Type         string
					Index        int
					ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
					Delta        struct {
						Type        string
						PartialJSON string `json:"partial_json"`
					} `json:"delta"`
				}
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatalf("%q: %v", data, err)
				}
				switch {
				case e.Type == "content_block_start" && e.ContentBlock.Type == "tool_use":
					got, blocks = append(got, call{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}), append(blocks, e.Index)
					inputs[e.Index] = &strings.Builder{}
				case e.Type == "content_block_delta" && e.Delta.Type == "input_json_delta":
					inputs[e.Index].WriteString(e.Delta.PartialJSON)
				}
			}
			for i, b := range blocks {
				got[i].Input = inputs[b].String()
			}
			want := slices.Clone(tt.want)
			if tt.streamed != "" {
				want[0].Input = tt.streamed
			}
			if !slices.Equal(got, want) {
				t.Fatalf("calls %+v, want %+v\n%s", got, want, w.Body)
			}
			// Not streamed, the same calls.
			s, w = messagesTestSink(false)
			if err := s.Finish(res, 0); err != nil {
				t.Fatal(err)
			}
			var msg struct{ Content []map[string]any }
			if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
				t.Fatal(err)
			}
			var whole []call
			for _, b := range msg.Content {
				if b["type"] == "tool_use" {
					in, _ := json.Marshal(b["input"])
					whole = append(whole, call{b["id"].(string), b["name"].(string), string(in)})
				}
			}
			if len(whole) != len(tt.want) {
				t.Fatalf("whole answer's calls %+v, want %+v", whole, tt.want)
			}
			for i := range whole {
				if whole[i] != tt.want[i] {
					t.Fatalf("whole answer's calls %+v, want %+v", whole, tt.want)
				}
			}
		})
	}
}

// TestMessagesSinkGatherMalformed: events an upstream of the format sends that make no message (for a caller who
// asked for no stream) are the upstream's fault, a *ports.UpstreamError, and nothing is written; a tool's input cut
// by the token limit is {} in a message that is answered.
func TestMessagesSinkGatherMalformed(t *testing.T) {
	t.Parallel()
	ev := func(data string) string {
		var v struct{ Type string }
		_ = json.Unmarshal([]byte(data), &v)
		return "event: " + v.Type + "\ndata: " + data + "\n\n"
	}
	start := ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
	tool := ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"get","input":{}}}`)
	partial := ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Par"}}`)
	stop := ev(`{"type":"content_block_stop","index":0}`) + ev(`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":8}}`) +
		ev(`{"type":"message_stop"}`)
	for _, tt := range []struct {
		name, events string
		want         string // the message, or "" for an upstream error
	}{
		{"no message_start", tool + stop, ""},
		{"a null message", ev(`{"type":"message_start","message":null}`) + stop, ""},
		{"message_delta first", ev(`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`) + stop, ""},
		{"an index out of bounds", start + ev(`{"type":"content_block_start","index":999999999,"content_block":{"type":"text","text":""}}`), ""},
		{"a negative index", start + ev(`{"type":"content_block_start","index":-1,"content_block":{"type":"text","text":""}}`), ""},
		{"a block restarted without its block", start + tool + partial + ev(`{"type":"content_block_start","index":0,"content_block":null}`) + stop, ""},
		{"an event that is not JSON", start + "event: content_block_delta\ndata: {not json\n\n", ""},
		{"the token limit in a tool's input", start + tool + partial + stop,
			`{"content":[{"id":"t1","input":{},"name":"get","type":"tool_use"}],"id":"msg_1","model":"claude","role":"assistant",` +
				`"stop_reason":"max_tokens","type":"message","usage":{"input_tokens":5,"output_tokens":8}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, w := messagesTestSink(false)
			err := s.Chunk(chat.Chunk{Native: domain.Opaque(tt.events)})
			if err == nil {
				err = s.Finish(&chat.Result{}, 0)
			}
			var ue *ports.UpstreamError
			switch {
			case tt.want == "" && !errors.As(err, &ue):
				t.Fatalf("err %v, want an upstream error", err)
			case tt.want == "" && w.Body.Len() > 0:
				t.Fatalf("wrote %s", w.Body)
			case tt.want != "" && (err != nil || w.Body.String() != tt.want):
				t.Fatalf("err %v, message\n%s\nwant\n%s", err, w.Body, tt.want)
			}
		})
	}
}
