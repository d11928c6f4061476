package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc/jsonenctest"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// wire is an event as encoding/json decodes it: the shape goccy/go-json decoded the events into before.
type wire struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message *struct {
		Usage wireUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

func (w wireUsage) usage() usage {
	u := usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, CacheCreationInputTokens: w.CacheCreationInputTokens,
		CacheReadInputTokens: w.CacheReadInputTokens}
	if c := w.CacheCreation; c != nil {
		u.split, u.Cache5m, u.Cache1h = true, c.Ephemeral5m, c.Ephemeral1h
	}
	return u
}

// reference decodes an event with encoding/json, and returns it as decodeEvent would.
func reference(data []byte) (event, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return event{}, err
	}
	ev := event{typ: w.Type, index: w.Index}
	if m := w.Message; m != nil {
		ev.hasMessage, ev.message = true, m.Usage.usage()
	}
	if b := w.ContentBlock; b != nil {
		ev.hasBlock, ev.block = true, block{typ: b.Type, id: b.ID, name: b.Name, text: b.Text}
	}
	if d := w.Delta; d != nil {
		ev.hasDelta, ev.delta = true, delta{typ: d.Type, text: d.Text, partialJSON: d.PartialJSON, thinking: d.Thinking, stopReason: d.StopReason}
	}
	if u := w.Usage; u != nil {
		ev.hasUsage, ev.usage = true, u.usage()
	}
	if e := w.Error; e != nil {
		ev.hasErr, ev.err = true, eventError{typ: e.Type, message: e.Message}
	}
	return ev, nil
}

// eventSeeds are the Messages API's events as it sends them, and the edges of encoding/json's decoding: case,
// nulls, keys given twice, values of the wrong type, escapes, what is not JSON.
var eventSeeds = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}}}`,
	`{"type":"message_start","message":{"usage":{"input_tokens":2,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"cache_read_input_tokens":4}}}`,
	`{"type":"message_delta","usage":{"cache_creation":null,"Cache_Creation":{"ephemeral_1h_input_tokens":7}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm \u00e9\ud83d\ude00"}}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
	`{"type":"message_stop"}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	`null`, `{}`, ` {"type" : "ping" } `, `[]`, `5`, `"x"`, `{"type":5}`, `{"type":null}`, `{"index":1.5}`, `{"index":"1"}`,
	`{"index":9223372036854775808}`, `{"index":-3,"index":null}`, `{"TYPE":"ping","Index":2}`, `{"ſtop_reason":1}`,
	`{"message":null}`, `{"message":{"usage":null}}`, `{"message":{"usage":{"input_tokens":1}},"message":{"usage":{"output_tokens":2}}}`,
	`{"message":{"usage":{"input_tokens":1}},"message":null}`, `{"message":5}`, `{"message":{"usage":5}}`,
	`{"delta":{"type":"text_delta","text":"a"},"delta":{"text":null}}`, `{"delta":{"text":"a"},"delta":null,"delta":{}}`,
	`{"delta":{"text":1}}`, `{"delta":[]}`, `{"content_block":{"type":"text","text":"a\nb"},"content_block":null}`,
	`{"usage":{"output_tokens":1},"usage":null}`, `{"usage":{"output_tokens":1},"usage":{"input_tokens":2,"output_tokens":null}}`,
	`{"usage":{"output_tokens":1e3}}`, `{"error":{},"error":null}`, `{"error":{"message":5}}`, `{"error":"x"}`,
	`{"type":"ping"} x`, `{"type":"ping"`, `{"type":"pi\ng"}`, `{"type":"\x"}`, `{"a":[1,{"b":null}],"type":"ping"}`,
	`{"type":"a\u0000b"}`, "{\"type\":\"\xff\"}", `{"type":"\ud800"}`, `{"a":01}`, `{"a":tru}`, `nul`,
}

// FuzzDecodeEvent holds decodeEvent to encoding/json: the same event from what it accepts, an error for what it
// refuses. Its seeds run in every go test.
func FuzzDecodeEvent(f *testing.F) {
	jsonenctest.Seeds(f, eventSeeds, func(t *testing.T, data []byte) {
		got, err := decodeEvent(data)
		want, werr := reference(data)
		jsonenctest.Same(t, fmt.Sprintf("%q", data), got, err, want, werr)
	})
}

// TestStreamUsageBounds: Anthropic's prompt is the sum of three counts, and a usage with a count out of bounds is
// not taken (chat.MaxTokenCount): the call is then priced as one whose upstream sent no usage. A sum that wraps
// around, or a negative count that cancels a positive one, must not make a plausible prompt of counts that are not.
func TestStreamUsageBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		start, finish string // message_start's usage, message_delta's
		want          *chat.Usage
	}{
		{"counts", `{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}`,
			`{"output_tokens":15}`, &chat.Usage{PromptTokens: 32, CompletionTokens: 15, CachedTokens: 4, CacheWriteTokens: 3}},
		{"cache writes split by duration", `{"input_tokens":2,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"cache_read_input_tokens":4,"output_tokens":1}`,
			`{"output_tokens":15}`, &chat.Usage{PromptTokens: 36, CompletionTokens: 15, CachedTokens: 4, CacheWriteTokens: 10, CacheWrite1hTokens: 20}},
		{"a sum that wraps around", `{"input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807,"cache_read_input_tokens":3,"output_tokens":1}`,
			`{"output_tokens":15}`, nil},
		{"a negative count cancelled", `{"input_tokens":-1000,"cache_creation_input_tokens":1001,"output_tokens":1}`,
			`{"output_tokens":15}`, nil},
		{"a negative output", `{"input_tokens":25,"output_tokens":1}`, `{"output_tokens":-15}`, nil},
		{"past the bound", `{"input_tokens":10000001,"output_tokens":1}`, `{"output_tokens":15}`, nil},
		{"a prompt past the bound", `{"input_tokens":4000000,"cache_creation_input_tokens":3000000,"cache_read_input_tokens":3000001,"output_tokens":1}`,
			`{"output_tokens":15}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := []string{
				`{"type":"message_start","message":{"id":"msg_1","usage":` + tc.start + `}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + tc.finish + `}`,
				`{"type":"message_stop"}`,
			}
			var body strings.Builder
			for _, ev := range events {
				body.WriteString("event: x\ndata: " + ev + "\n\n")
			}
			res, err := fakes.Gather(newStream(strings.NewReader(body.String()), 200, false))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content.String() != "Hello" || fmt.Sprint(res.Usage) != fmt.Sprint(tc.want) {
				t.Fatalf("content %q usage %+v, want %+v", res.Content.String(), res.Usage, tc.want)
			}
		})
	}
}

// TestStreamEndsWithoutMessageStop: a body that ends after message_delta brought the stop reason ends the answer,
// whole, with its usage, as OpenAI's stream ends without its [DONE]; one that ends before the stop reason broke off.
func TestStreamEndsWithoutMessageStop(t *testing.T) {
	t.Parallel()
	start := `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":25,"output_tokens":1}}}`
	text := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`
	stop := `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`
	for _, tc := range []struct {
		name   string
		events []string
		broke  bool
	}{
		{"after the stop reason", []string{start, text, stop}, false},
		{"before the stop reason", []string{start, text}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body strings.Builder
			for _, ev := range tc.events {
				body.WriteString("event: x\ndata: " + ev + "\n\n")
			}
			res, err := fakes.Gather(newStream(strings.NewReader(body.String()), 200, false))
			if tc.broke {
				if err == nil {
					t.Fatalf("a stream cut before its stop reason read as whole: %q", res.Content.String())
				}
				return
			}
			want := chat.Usage{PromptTokens: 25, CompletionTokens: 15}
			if err != nil || res.Content.String() != "Hello" || res.FinishReason != "stop" || res.Usage == nil || *res.Usage != want {
				t.Fatalf("err %v, content %q, finish %q, usage %+v", err, res.Content.String(), res.FinishReason, res.Usage)
			}
		})
	}
}
