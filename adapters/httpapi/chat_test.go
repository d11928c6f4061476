package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// reflectChoice is the choice of a chunk event as a reflective encoder writes it, for appendChoice to match.
func reflectChoice(t *testing.T, c chat.Chunk) string {
	t.Helper()
	type toolCall struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type delta struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content,omitempty"`
		Reasoning *string    `json:"reasoning,omitempty"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	d := delta{Role: "assistant"}
	if c.Content != "" || c.Reasoning == "" && len(c.ToolCalls) == 0 {
		d.Content = &c.Content
	}
	if c.Reasoning != "" {
		d.Reasoning = &c.Reasoning
	}
	for _, tc := range c.ToolCalls {
		out := toolCall{Index: tc.Index, ID: tc.ID}
		if tc.ID != "" {
			out.Type = "function"
		}
		out.Function.Name, out.Function.Arguments = tc.Name, tc.Arguments
		d.ToolCalls = append(d.ToolCalls, out)
	}
	ch := struct {
		Index              int     `json:"index"`
		Delta              delta   `json:"delta"`
		FinishReason       *string `json:"finish_reason"`
		NativeFinishReason *string `json:"native_finish_reason"`
		Logprobs           any     `json:"logprobs"`
	}{Delta: d}
	if c.FinishReason != "" {
		ch.FinishReason, ch.NativeFinishReason = &c.FinishReason, &c.NativeFinishReason
	}
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendChoice(t *testing.T) {
	for _, c := range []chat.Chunk{
		{Content: "w0 "},
		{},
		{Content: `say "<b>" & \ then` + "\n\t\x00\x1f\u2028\u2029é😀\xff"},
		{Reasoning: "thinking"},
		{Content: "a", Reasoning: "b"},
		{FinishReason: "stop", NativeFinishReason: "end_turn"},
		{Content: "last", FinishReason: "length", NativeFinishReason: ""},
		{ToolCalls: []chat.ToolCallDelta{{Index: 0, ID: "call_1", Name: "get_weather", Arguments: `{"city":`}}},
		{ToolCalls: []chat.ToolCallDelta{{Index: 1, Arguments: `"Paris"}`}, {Index: 2, Name: "x"}}},
		{Content: "both", ToolCalls: []chat.ToolCallDelta{{Index: 0, ID: "c"}}, FinishReason: "tool_calls", NativeFinishReason: "tool_calls"},
	} {
		if got, want := string(appendChoice(nil, c)), reflectChoice(t, c); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", c, got, want)
		}
	}
}

// TestStreamEventHeads holds the head appended once per stream, and the usage event, to encoding/json's encoding
// of the same chunkOut.
func TestStreamEventHeads(t *testing.T) {
	for _, h := range []ports.ChatHead{
		{GenerationID: "gen-1795455938-afdefd769e434e8c", Model: "bench/chat", Provider: "fake", Created: 1795455938},
		{GenerationID: "gen-2", Model: `m<"\>&` + "\u2028", Created: -1},
	} {
		s := &chatSink{head: h}
		whole, err := json.Marshal(s.chunk(nil))
		if err != nil {
			t.Fatal(err)
		}
		head, _ := bytes.CutSuffix(whole, []byte(`"choices":null}`))
		if got, want := string(s.eventPrefix()), "data: "+string(head)+`"choices":[`; got != want {
			t.Errorf("prefix:\n got %s\nwant %s", got, want)
		}
		for _, u := range []chat.Usage{
			{PromptTokens: 6, CompletionTokens: 200, CachedTokens: 2, ReasoningTokens: 3},
			{},
			{PromptTokens: chat.MaxTokenCount, CompletionTokens: chat.MaxTokenCount, CachedTokens: chat.MaxTokenCount, ReasoningTokens: chat.MaxTokenCount},
		} {
			for _, cost := range []domain.Micros{406, 0, 1_000_000, 12_345_678, -1_500_000, math.MaxInt64, math.MinInt64} {
				out := s.chunk([]choiceOut{})
				out.Usage = usage(&u, cost)
				want, err := json.Marshal(out)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.usageEvent(&u, cost); string(got) != "data: "+string(want)+"\n\n" {
					t.Errorf("usage event:\n got %s\nwant data: %s", got, want)
				}
			}
		}
	}
}

// TestReadChatBody: a chat body is read whole and decoded as chat completions; a read that fails is the caller's
// error as before (a body past the limit is a 413), and a body that is no JSON object a 400 that says where.
func TestReadChatBody(t *testing.T) {
	t.Parallel()
	const ordinary = `{"model":"bench/chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`
	body, err := readInferenceBody(strings.NewReader(ordinary), int64(len(ordinary)), chatcompletions.Decode)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := body.Request(); err != nil || r.Model != "bench/chat" || !r.Stream || !r.IncludeUsage || len(r.Messages) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	_, err = readInferenceBody(http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(ordinary)), 10), -1, chatcompletions.Decode)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindTooLarge {
		t.Errorf("a body past the limit: %v", err)
	}
	for body, want := range map[string]string{
		``:         "request body: must be a JSON object",
		`null`:     "request body: must be a JSON object",
		`[]`:       "request body: must be a JSON object",
		`{"a":1`:   "malformed JSON: unexpected end of the body",
		`{"a" 1}`:  "malformed JSON at byte 6: unexpected '1'",
		`{"a":1}x`: "malformed JSON at byte 8: unexpected 'x'",
	} {
		_, err := readInferenceBody(strings.NewReader(body), int64(len(body)), chatcompletions.Decode)
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Msg != want {
			t.Errorf("%q: %v, want a 400: %s", body, err, want)
		}
	}
}

// BenchmarkChunkEvent times one token's event to the caller, appended by hand (a head once a stream, then the
// choice) and as encoding/json encodes the same chunkOut: what keeps the events written by hand, one a token.
func BenchmarkChunkEvent(b *testing.B) {
	c := chat.Chunk{Content: " world"}
	head := ports.ChatHead{GenerationID: "gen-1795455938-afdefd769e434e8c", Model: "openai/gpt-4o-mini", Provider: "OpenAI",
		Created: 1795455938, Stream: true}
	b.Run("appended", func(b *testing.B) {
		s := &chatSink{head: head}
		b.ReportAllocs()
		for b.Loop() {
			s.buf = append(appendChoice(s.eventPrefix(), c), "]}\n\n"...)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		s := &chatSink{head: head}
		b.ReportAllocs()
		for b.Loop() {
			content := c.Content
			out := s.chunk([]choiceOut{{Delta: &messageOut{Role: "assistant", Content: &content}}})
			raw, err := json.Marshal(out)
			if err != nil {
				b.Fatal(err)
			}
			s.buf = append(append(append(s.buf[:0], "data: "...), raw...), "\n\n"...)
		}
	})
}
