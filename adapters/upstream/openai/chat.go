package openai

import (
	"context"
	"io"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.ChatProvider = (*Client)(nil)

// Chat calls POST /chat/completions, always streaming with the usage chunk asked for. The caller's fields the
// gateway does not read go as they came; passthrough options go under them. A request that sets no completion
// limit (nor its options) is sent max_completion_tokens chat.DefaultMaxTokens, the limit its budget was reserved
// for (max_completion_tokens: OpenAI's current name, which its o-series models require).
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest) (ports.ChatReply, error) {
	body := make(map[string]any, len(req.Request.Extra)+4)
	for k, v := range req.Options {
		body[k] = v
	}
	for k, v := range req.Request.Extra {
		body[k] = v
	}
	if req.Request.MaxTokens == nil && !chat.OptionCapped(req.Options, "max_tokens", "max_completion_tokens") {
		delete(body, "max_tokens") // a null one
		body["max_completion_tokens"] = int64(chat.DefaultMaxTokens)
	}
	body["model"] = req.UpstreamModel
	body["messages"] = Messages(req.Request.Messages)
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	hreq, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/chat/completions", body)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := c.do(hreq)
	if err != nil {
		return ports.ChatReply{}, err
	}
	return ports.ChatReply{Body: resp.Body, Decode: func(r io.Reader) ports.ChatStream { return NewChatStream(r, resp.StatusCode) },
		UpstreamID: resp.Header.Get("x-request-id")}, nil
}

// message is a chat message on OpenAI's wire.
type message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Messages puts messages in OpenAI's shape: a string content stays a string, parts stay parts.
func Messages(msgs []chat.Message) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		w := message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		switch {
		case m.Null:
		case m.Text:
			w.Content = m.Joined()
		default:
			parts := make([]any, len(m.Content))
			for j, p := range m.Content {
				switch p.Type {
				case "text":
					parts[j] = map[string]any{"type": "text", "text": p.Text}
				case "image_url":
					img := map[string]any{"url": p.ImageURL}
					if p.Detail != "" {
						img["detail"] = p.Detail
					}
					parts[j] = map[string]any{"type": "image_url", "image_url": img}
				default:
					parts[j] = p.Raw
				}
			}
			w.Content = parts
		}
		for _, tc := range m.ToolCalls {
			t := toolCall{ID: tc.ID, Type: "function"}
			t.Function.Name, t.Function.Arguments = tc.Name, tc.Arguments
			w.ToolCalls = append(w.ToolCalls, t)
		}
		out[i] = w
	}
	return out
}

// ChatStream reads OpenAI's stream of chat.completion.chunk events, up to data: [DONE]. OpenAI-compatible
// upstreams that speak the same stream (OpenRouter among them) read it too.
type ChatStream struct {
	sse      *upstream.SSE
	events   decoder
	status   int
	finished bool
	// tools numbers the upstream's tool-call indexes 0, 1, ... as Result does: a client indexing an array by them
	// gets no hole nor a negative index.
	tools chat.ToolIndexes
}

func NewChatStream(body io.Reader, status int) *ChatStream {
	return &ChatStream{sse: upstream.NewSSE(body), status: status}
}

func (s *ChatStream) Next() (chat.Chunk, error) {
	for {
		_, data, err := s.sse.Next()
		if err != nil {
			return chat.Chunk{}, s.broke(err)
		}
		if string(data) == "[DONE]" {
			return chat.Chunk{}, io.EOF
		}
		ev, err := s.events.decode(data)
		if err != nil {
			return chat.Chunk{}, upstream.BadEvent(data, s.status, err)
		}
		if ev.failed {
			return chat.Chunk{}, &ports.UpstreamError{Status: s.status, Kind: domain.KindUpstream, Retryable: true,
				Reason: "the provider's stream failed", Raw: generation.TruncateRaw([]byte(upstream.Scrub(string(data))))}
		}
		out := ev.Chunk
		for i := range out.ToolCalls {
			out.ToolCalls[i].Index, _ = s.tools.Of(out.ToolCalls[i].Index)
		}
		if ev.finish != "" {
			out.FinishReason, out.NativeFinishReason = chat.Finish(ev.finish), ev.finish
			s.finished = true
		}
		if out.Empty() && out.Usage == nil {
			continue // a role-only first delta, a keep-alive
		}
		return out, nil
	}
}

// broke views the end of the body: after the answer finished that is its end, before it a break.
func (s *ChatStream) broke(err error) error {
	if err == io.EOF && s.finished {
		return io.EOF
	}
	return upstream.Broke(err, s.status)
}
