package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/jsonenc"
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

// chatBodySeeds are chat bodies as callers send them, and the edges of encoding/json's decoding of an object into
// a chat.Body: keys twice, escaped and not UTF-8, white space, nesting, what is not an object or not JSON.
var chatBodySeeds = []string{
	`{"model":"bench/chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write two hundred words."}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a\n\u00e9"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}],"provider":{"options":{"openai":{"seed":1e3}}}}`,
	` { "model" : "m" , "model" : "n" } `, `{}`, `{"a":null,"b":[],"c":{},"d":-0.5e-3,"e":false}`, `{"\u006dodel":"m","mo\"del":1}`,
	"{\"k\xff\":1}", `{"\ud800":1}`, "{\"\\ud83d\\ude00\":1}", `{"Model":"m","model":"n"}`, `null`, `[]`, `"x"`, ``, ` `,
	`{"a":1} {}`, `{"a":1}x`, `{"a":1`, `{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":[1,}`, `{"a" 1}`, `{,}`,
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`, `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	`{"a":` + strings.Repeat(`{"b":`, 9999) + `1` + strings.Repeat("}", 9999) + `}`, `{"a":` + strings.Repeat(`{"b":`, 9999) + `{}` + strings.Repeat("}", 9999) + `}`,
	`{` + strings.Repeat(`"a":1,`, 999) + `"a":1}`, `{` + strings.Repeat(`"a":1,`, 1000) + `"a":1}`, `{` + strings.Repeat(`"a":1,`, 1000) + `"a":}`,
	"{\"\xff\":1," + strings.Repeat(`"a":1,`, 1000) + `"a":1}`, "{\"\xff\":1," + strings.Repeat(`"a":1,`, 998) + `"a":1}`,
}

func TestReadChatBody(t *testing.T) {
	t.Parallel()
	for _, s := range chatBodySeeds {
		checkChatBody(t, []byte(s))
	}
	// An ordinary body takes the scanner's path, not decodeJSON's.
	if _, err := splitObject([]byte(chatBodySeeds[0])); err != nil {
		t.Error("benche2e's chat body went through decodeJSON")
	}
	// A read that fails is the caller's error as before: a body past the limit is a 413.
	_, err := readChatBody(http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(chatBodySeeds[0])), 10), -1)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindTooLarge {
		t.Errorf("a body past the limit: %v", err)
	}
}

// FuzzReadChatBody holds readChatBody to decodeJSON, which decoded every chat body before: the same members, or
// the same error, but for a body past chat.MaxFields members, refused at the one past.
func FuzzReadChatBody(f *testing.F) {
	for _, s := range chatBodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkChatBody)
}

func checkChatBody(t *testing.T, data []byte) {
	t.Helper()
	got, err := readChatBody(bytes.NewReader(data), int64(len(data)))
	var want chat.Body
	werr := decodeJSON(data, nil, &want)
	s, n := jsonenc.NewScanner(data), 0
	_ = s.Object(func([]byte) error {
		if n++; n > chat.MaxFields {
			return errTooManyFields
		}
		return s.Skip()
	})
	if n > chat.MaxFields {
		want, werr = nil, domain.Invalid("body", "must have at most 1000 fields")
	}
	if fmt.Sprint(err) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %v, %v\nwant %v, %v", data, got, err, want, werr)
	}
}

// TestReadChatBodyAllocations guards what reading a plain chat body costs, on every call's way to its first
// token: the body in one buffer of its Content-Length, and the map of its members, whose keys are the fields'
// own strings (8 allocations when io.ReadAll grew the buffer and each key was a string of its own: 4).
func TestReadChatBodyAllocations(t *testing.T) {
	b := []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi there"}]}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := readChatBody(bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}); n > 4 {
		t.Fatalf("%v allocations, want at most 4", n)
	}
}
