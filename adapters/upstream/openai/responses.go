package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.FormatSpeaker = (*Client)(nil)

// Speaks reports the wire formats the client passes on as they came: chat completions always, the Responses API
// when the provider serves it (upstream.Config.Responses).
func (c *Client) Speaks(f chat.Format) bool {
	return f == chat.ChatCompletions || f == chat.Responses && c.cfg.Responses
}

// respond calls POST /responses with a Responses request, always streaming: the caller's fields as they came, then
// the options they do not name, then the gateway's own (the model, the stream, the instructions, a completion
// limit when the call sets none). A request a guardrail redacted is sent as chat (Chat), its messages being what
// the upstream may read; one that continues a stored response cannot be, and is refused.
func (c *Client) respond(ctx context.Context, req ports.ChatRequest) (ports.ChatReply, error) {
	r := req.Request
	if r.Redacted {
		if r.Continues != "" {
			return ports.ChatReply{}, &ports.UpstreamError{Status: http.StatusBadRequest, Kind: domain.KindInvalid,
				Reason: "previous_response_id: a guardrail redacted the input, which goes upstream as chat, without the stored response; send the whole conversation in input"}
		}
		if r.Untranslatable != "" {
			return ports.ChatReply{}, &ports.UpstreamError{Status: http.StatusBadRequest, Kind: domain.KindInvalid,
				Reason: r.Untranslatable + ": a guardrail redacted the input, which goes upstream as chat, without it"}
		}
		r.Format = chat.ChatCompletions // the caller's fields of another format are not sent
		r.Extra = nil
		req.Request = r
		return c.Chat(ctx, req)
	}
	body, err := responsesBody(req)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	return c.stream(ctx, c.responses, body, func(r io.Reader, status int) ports.ChatStream { return NewResponsesStream(r, status) })
}

// responsesFields are the fields the gateway writes itself, last.
type responsesFields struct {
	MaxOutputTokens int64  `json:"max_output_tokens,omitempty"`
	Instructions    string `json:"instructions,omitempty"`
	Stream          bool   `json:"stream"`
	Model           string `json:"model"`
}

// responsesBody is the request's body: the caller's fields (each as it came, in the order of their names), the
// options the caller's do not name, then the gateway's. The instructions are the system messages the gateway laid
// before the input (the caller's instructions, or a preset's prompt).
func responsesBody(req ports.ChatRequest) ([]byte, error) {
	r := req.Request
	defaulted := r.MaxTokens == nil && !chat.OptionCapped(req.Options, "max_output_tokens")
	sent := func(k string) bool {
		switch k {
		case "model", "stream", "instructions":
			return true
		case "max_output_tokens":
			return defaulted
		}
		return inbound.NamesField(k, "max_output_tokens")
	}
	extra := make(map[string]json.RawMessage, len(r.Extra))
	for k, v := range r.Extra {
		if !sent(k) {
			extra[k] = json.RawMessage(v)
		}
	}
	own := responsesFields{Stream: true, Model: req.UpstreamModel}
	if defaulted {
		own.MaxOutputTokens = chat.DefaultMaxTokens
	}
	var instructions []string
	for _, m := range r.Messages[:r.Prepended] {
		instructions = append(instructions, m.Joined())
	}
	own.Instructions = strings.Join(instructions, "\n\n")
	o := newObject(512 + promptBytes(r.Messages))
	o.add(extra)
	o.add(options(req.Options, func(k string) bool {
		_, ok := r.Extra[k]
		return ok || sent(k)
	}))
	o.add(own)
	return o.bytes()
}

// ResponsesStream reads the Responses API's stream of response.* events: every event is a chunk, its bytes
// Native, and what the gateway reads of it (text, reasoning, function calls, the finish and the usage) its other
// fields. The stream ends with the response's completion (or incompletion); a failure event breaks it.
type ResponsesStream struct {
	sseAnswer
	// calls says the answer has a function call: it finishes with tool_calls. tools numbers the output items
	// that are calls 0, 1, ...
	calls bool
	tools chat.ToolIndexes
}

func NewResponsesStream(body io.Reader, status int) *ResponsesStream {
	s := &ResponsesStream{}
	s.init(body, status)
	return s
}

// responsesEvent is what the gateway reads of an event.
type responsesEvent struct {
	Type        string `json:"type"`
	Delta       string `json:"delta"`
	OutputIndex int    `json:"output_index"`
	Message     string `json:"message"`
	Item        *struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
	} `json:"item"`
	Response *struct {
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Usage *ResponsesUsage `json:"usage"`
	} `json:"response"`
}

// ResponsesUsage is a response's usage as the Responses API counts it.
type ResponsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func (s *ResponsesStream) Next() (chat.Chunk, error) {
	name, data, err := s.sse.Next()
	if err != nil {
		return chat.Chunk{}, s.broke(err)
	}
	var ev responsesEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return chat.Chunk{}, upstream.BadEvent(data, s.status, err)
	}
	if name == "" {
		name = ev.Type
	}
	out := chat.Chunk{Native: nativeEvent(name, data)}
	switch ev.Type {
	case "response.output_text.delta":
		out.Content = ev.Delta
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		out.Reasoning = ev.Delta
	case "response.output_item.added":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			i, _ := s.tools.Of(ev.OutputIndex)
			out.ToolCalls = []chat.ToolCallDelta{{Index: i, ID: ev.Item.CallID, Name: ev.Item.Name}}
			s.calls = true
		}
	case "response.function_call_arguments.delta":
		i, _ := s.tools.Of(ev.OutputIndex)
		out.ToolCalls = []chat.ToolCallDelta{{Index: i, Arguments: ev.Delta}}
	case "response.completed", "response.incomplete":
		out.FinishReason, out.NativeFinishReason = "stop", "completed"
		if s.calls {
			out.FinishReason = "tool_calls"
		}
		if ev.Response != nil {
			if d := ev.Response.IncompleteDetails; d != nil && d.Reason != "" {
				out.NativeFinishReason = d.Reason
				out.FinishReason = "length"
				if d.Reason == "content_filter" {
					out.FinishReason = "content_filter"
				}
			}
			if u := ev.Response.Usage; u != nil {
				out.Usage = &chat.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens,
					CachedTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
			}
		}
		s.finished = true
	case "response.failed", "error":
		msg := ev.Message
		if ev.Response != nil && ev.Response.Error != nil {
			msg = ev.Response.Error.Message
		}
		return chat.Chunk{}, &ports.UpstreamError{Status: s.status, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider's stream failed: " + upstream.Scrub(msg), Raw: generation.TruncateRaw([]byte(upstream.Scrub(string(data))))}
	}
	return out, nil
}

// nativeEvent is one server-sent event as the Responses API writes it.
func nativeEvent(name string, data []byte) domain.Opaque {
	b := make([]byte, 0, len(name)+len(data)+16)
	b = append(append(append(b, "event: "...), name...), "\ndata: "...)
	return append(append(b, data...), "\n\n"...)
}
