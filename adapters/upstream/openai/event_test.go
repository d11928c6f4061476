package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc/jsonenctest"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// chunk is one event of OpenAI's stream as encoding/json reads it: what decoder must agree with.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			Reasoning        string `json:"reasoning"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// reference decodes an event with encoding/json into chunk, and returns it as decoder would.
func reference(data []byte) (event, error) {
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return event{}, err
	}
	ev := event{failed: ch.Error != nil}
	if len(ch.Choices) > 0 {
		c := ch.Choices[0]
		ev.Content, ev.reasoning, ev.reasoningContent = c.Delta.Content, c.Delta.Reasoning, c.Delta.ReasoningContent
		ev.Reasoning = c.Delta.Reasoning + c.Delta.ReasoningContent
		for _, tc := range c.Delta.ToolCalls {
			ev.ToolCalls = append(ev.ToolCalls, chat.ToolCallDelta{Index: tc.Index, ID: tc.ID, Name: tc.Function.Name,
				Arguments: tc.Function.Arguments})
		}
		if c.FinishReason != nil {
			ev.finish = *c.FinishReason
		}
	}
	if u := ch.Usage; u != nil {
		ev.Usage = &chat.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			ev.Usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
		if u.CompletionTokensDetails != nil {
			ev.Usage.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
		}
	}
	return ev, nil
}

var eventSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"w0 "},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"delta":{"content":"a\nb\"c\\d\/e\u00e9\ud83d\ude00\ud800x\b\f\r\t"}}]}`,
	`{"choices":[{"delta":{"reasoning":"r","reasoning_content":"rc"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}},{"index":1,"function":{"arguments":"1}"}}]}}]}`,
	`{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":6,"completion_tokens":200,"total_tokens":206,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":3,"x":[1,2.5e-3,true,false,null,{}]}}}`,
	`{"error":{"message":"overloaded","code":529}}`,
	`{"error":null,"choices":null}`,
	`{"CHOICES":[{"Delta":{"Content":"case"}}]}`,
	`null`, ``, `[]`, `{"choices":{}}`, `{"choices":[{"delta":{"content":5}}]}`, `{"usage":{"prompt_tokens":1.5}}`,
	`{"usage":{"prompt_tokens":99999999999999999999}}`, `{"choices":[{"delta":{"content":"\x"}}]}`, `{"a":01}`, `{"a":1.}`,
	`{"a":-}`, `{"a":"\u12"}`, `{"a":tru}`, `{"a":1}x`, `{"a":1,}`, `{,}`, `{"a" 1}`, "{\"a\":\"\x01\"}", "{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}",
	`{"choices":[{"delta":null,"finish_reason":null},{"delta":{"content":"second"}}]}`, `{"choices":[null]}`,
	`{"choices":[{"delta":{"tool_calls":[null,{"index":null,"function":null}]}}]}`, `{"usage":{"prompt_tokens_details":null}}`,
	// an error object's message that is not a string: the wrong type
	`{"error":{"message":5}}`, `{"error":{"code":1,"message":{"text":"x"}}}`, `{"error":{"message":null,"code":[1]}}`,
	// a key given twice: null clears a list or a pointer and leaves a string or a number, a list's items read into
	// the items already there
	`{"choices":[{"delta":{"content":"x"}}],"choices":null}`, `{"choices":[{"delta":{"content":"x"}}],"choices":[]}`,
	`{"choices":[{"delta":{"content":"x"}}],"choices":[{"delta":{"reasoning":"r","content":null}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"id":"a"}],"tool_calls":[{"index":1}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"id":"a"}],"tool_calls":null}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"id":"a"},{"id":"b"}],"tool_calls":[{"index":2}],"tool_calls":[null,{"index":null}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"id":"a"}],"tool_calls":[]}}]}`,
	`{"choices":[{"finish_reason":"stop","finish_reason":null}]}`, `{"error":{},"error":null}`,
	`{"usage":{"prompt_tokens":1},"usage":null}`, `{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2,"prompt_tokens":null}}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":2},"prompt_tokens_details":null}}`,
	`{"usage":{"completion_tokens_details":{"reasoning_tokens":2},"completion_tokens_details":{}}}`,
}

func TestDecodeEvent(t *testing.T) {
	for _, s := range eventSeeds {
		checkEvent(t, []byte(s))
	}
	// encoding/json's bound on nesting, the event's own object counted: 9999 arrays in it are taken, 10000 are not
	for _, n := range []int{9999, 10000} {
		checkEvent(t, []byte(`{"a":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}`))
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	if _, err := new(decoder).decode([]byte(`{"a":` + deep + `}`)); err == nil {
		t.Error("an event nested 20000 deep was taken")
	}
}

// TestDecoderHead: an event read after another, whose head it may begin with, reads as it would alone.
func TestDecoderHead(t *testing.T) {
	head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",`
	events := append([]string{
		head + `"choices":[{"delta":{"content":"a"}}]}`, head + `"choices":[],"usage":{"prompt_tokens":6}}`,
		head + `"usage":null}`, head + `"x":1,"choices":[{"delta":{"content":"b"}}]}`, head + `}`, head + `"x"}`,
		head + `"error":{"message":"m"}}`, head + `"choices":[{"delta":{"content":"c"}}],"id":5}`, head[:len(head)-1] + `}`,
		` ` + head + `"choices":null}`, `{"id" : "c" , "choices":[{"delta":{"content":"d"}}]}`, `{"id" : "c" , }`,
		`{"id" : "c" , "Choices":[]}`,
	}, eventSeeds...)
	for _, prev := range events {
		for _, ev := range events {
			checkAfter(t, []byte(prev), []byte(ev))
		}
	}
}

// FuzzDecodeEvent holds decoder to encoding/json: the same event from what it accepts, an error for what it
// refuses, read alone and read again after itself (from its head, when it has one).
func FuzzDecodeEvent(f *testing.F) { jsonenctest.Seeds(f, eventSeeds, checkEvent) }

// FuzzDecoderHead holds decoder to encoding/json for an event read after another.
func FuzzDecoderHead(f *testing.F) {
	for i, s := range eventSeeds {
		f.Add([]byte(eventSeeds[(i+1)%len(eventSeeds)]), []byte(s))
		f.Add([]byte(s), []byte(s))
	}
	f.Fuzz(func(t *testing.T, prev, data []byte) { checkAfter(t, prev, data) })
}

func checkEvent(t *testing.T, data []byte) {
	t.Helper()
	checkAfter(t, nil, data)
	checkAfter(t, data, data)
}

// checkAfter decodes data with a decoder that read prev (when there is one) before.
func checkAfter(t *testing.T, prev, data []byte) {
	t.Helper()
	var d decoder
	if prev != nil {
		_, _ = d.decode(prev)
	}
	got, err := d.decode(data)
	want, werr := reference(data)
	jsonenctest.Same(t, fmt.Sprintf("%q after %q", data, prev), got, err, want, werr)
}

// BenchmarkDecodeEvent times one event of a token, as OpenAI streams it, read by decoder and by encoding/json into
// chunk: what keeps the decoder written by hand, on the way of every token of every answer.
func BenchmarkDecodeEvent(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,` +
		`"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_4691090a87",` +
		`"choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("decoder", func(b *testing.B) {
		var d decoder
		b.ReportAllocs()
		for b.Loop() {
			if ev, err := d.decode(data); err != nil || ev.Content != " world" {
				b.Fatal(ev, err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ev, err := reference(data); err != nil || ev.Content != " world" {
				b.Fatal(ev, err)
			}
		}
	})
}
