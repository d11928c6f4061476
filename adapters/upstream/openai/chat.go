package openai

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
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
	body, err := chatBody(req)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	hreq, err := c.chat.Post(body, http.Header{"Accept": eventStream})
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	resp, err := c.do(ctx, hreq)
	if err != nil {
		return ports.ChatReply{}, err
	}
	return ports.ChatReply{Body: resp.Body, Decode: func(r io.Reader) ports.ChatStream { return NewChatStream(r, resp.StatusCode) },
		UpstreamID: resp.Header.Get("X-Request-Id")}, nil
}

// eventStream is the Accept header's value: one slice for every request, which no one writes to.
var eventStream = []string{"text/event-stream"}

// chatBody is the request's body, appended by hand: the call's upstream request, and so its first token, waits
// for it, and encoding/json went through a map of the fields and the messages as maps and structs by reflection.
// The caller's fields come first (each as it came, in the order of their names), then the options the caller's
// do not name, then the gateway's own: an upstream that decodes as encoding/json does (Ollama) matches a key
// without regard to case and takes the last, so an option's "Model" or "ſtream" does not replace them (a field of
// the request itself that names one the gateway reads in another case is refused by its wire format).
func chatBody(req ports.ChatRequest) ([]byte, error) {
	r := req.Request
	// defaulted: neither the request nor its options set a limit; the default goes as max_completion_tokens,
	// and what the two fields held (a null, an option that is no positive number) does not.
	defaulted := r.MaxTokens == nil && !chat.OptionCapped(req.Options, "max_tokens", "max_completion_tokens")
	// sent reports a field the gateway writes, or leaves out: none of the caller's nor of the options. An option's
	// limit or n spelled otherwise (MAX_TOKENS, max_tokenſ, N, n followed by a NUL: inbound.NamesField) is left out:
	// the gateway reads them by their names only, and an upstream that decodes as encoding/json does would read it
	// as a limit, or a number of choices, that the call's budget was not reserved for.
	sent := func(k string) bool {
		switch k {
		case "model", "messages", "stream", "stream_options":
			return true
		case "max_tokens", "max_completion_tokens":
			return defaulted
		}
		return k != "n" && inbound.NamesField(k, "n") || inbound.NamesField(k, "max_tokens") || inbound.NamesField(k, "max_completion_tokens")
	}
	b := append(make([]byte, 0, 512), '{')
	for _, k := range sortedKeys(r.Extra) {
		if !sent(k) {
			b = append(append(append(jsonenc.AppendString(b, k), ':'), r.Extra[k]...), ',')
		}
	}
	b, err := appendOptions(b, req.Options, func(k string) bool {
		_, ok := r.Extra[k]
		return ok || sent(k)
	})
	if err != nil {
		return nil, err
	}
	if defaulted {
		b = append(strconv.AppendInt(append(b, `"max_completion_tokens":`...), chat.DefaultMaxTokens, 10), ',')
	}
	b = append(b, `"stream":true,"stream_options":{"include_usage":true},"model":`...)
	b = jsonenc.AppendString(b, req.UpstreamModel)
	b = appendMessages(append(b, `,"messages":`...), r.Messages)
	return append(b, '}'), nil
}

// sortedKeys are m's keys in order (none allocated for an empty m, as most calls have no passthrough).
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// appendMessages appends messages in OpenAI's shape: a string content stays a string, parts stay parts (those
// the gateway does not read as they came).
func appendMessages(b []byte, msgs []chat.Message) []byte {
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonenc.AppendString(append(b, `{"role":`...), m.Role), `,"content":`...)
		switch {
		case m.Null:
			b = append(b, "null"...)
		case m.Text:
			b = jsonenc.AppendString(b, m.Joined())
		default:
			b = appendParts(b, m.Content)
		}
		if m.Name != "" {
			b = jsonenc.AppendString(append(b, `,"name":`...), m.Name)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for j, tc := range m.ToolCalls {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonenc.AppendString(append(b, `{"id":`...), tc.ID)
				b = jsonenc.AppendString(append(b, `,"type":"function","function":{"name":`...), tc.Name)
				b = append(jsonenc.AppendString(append(b, `,"arguments":`...), tc.Arguments), "}}"...)
			}
			b = append(b, ']')
		}
		if m.ToolCallID != "" {
			b = jsonenc.AppendString(append(b, `,"tool_call_id":`...), m.ToolCallID)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendParts(b []byte, parts []chat.Part) []byte {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		switch p.Type {
		case "text":
			b = append(jsonenc.AppendString(append(b, `{"type":"text","text":`...), p.Text), '}')
		case "image_url":
			b = jsonenc.AppendString(append(b, `{"type":"image_url","image_url":{"url":`...), p.ImageURL)
			if p.Detail != "" {
				b = jsonenc.AppendString(append(b, `,"detail":`...), p.Detail)
			}
			b = append(b, "}}"...)
		default:
			b = append(b, p.Raw...)
		}
	}
	return append(b, ']')
}

// ChatStream reads OpenAI's stream of chat.completion.chunk events, up to data: [DONE]. OpenAI-compatible
// upstreams that speak the same stream (OpenRouter among them) read it too.
type ChatStream struct {
	sse      upstream.SSE
	events   decoder
	status   int
	finished bool
	// tools numbers the upstream's tool-call indexes 0, 1, ... as Result does: a client indexing an array by them
	// gets no hole nor a negative index.
	tools chat.ToolIndexes
}

func NewChatStream(body io.Reader, status int) *ChatStream {
	s := &ChatStream{status: status}
	s.sse.Init(body, upstream.MaxEvent)
	return s
}

func (s *ChatStream) Next() (chat.Chunk, error) {
	for {
		_, data, err := s.sse.Next()
		if err != nil {
			return chat.Chunk{}, s.broke(err)
		}
		if string(data) == "[DONE]" {
			s.sse.Close()
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
