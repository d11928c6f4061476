package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
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
	if req.Request.Format == chat.Responses && c.cfg.Responses {
		return c.respond(ctx, req)
	}
	body, err := chatBody(req)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	return c.stream(ctx, c.chat, body, func(r io.Reader, status int) ports.ChatStream { return NewChatStream(r, status) })
}

// stream posts body to the endpoint, asking for server-sent events, and reads the answer's chunks with decode,
// scrubbed of the credentials the call carried.
func (c *Client) stream(ctx context.Context, e upstream.Endpoint, body []byte, decode func(r io.Reader, status int) ports.ChatStream) (ports.ChatReply, error) {
	hreq, err := e.Post(body, http.Header{"Accept": eventStream})
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	resp, err := c.do(ctx, hreq)
	if err != nil {
		return ports.ChatReply{}, err
	}
	return ports.ChatReply{Body: resp.Body, Decode: func(r io.Reader) ports.ChatStream { return upstream.ScrubChat(decode(r, resp.StatusCode), hreq) },
		UpstreamID: resp.Header.Get("X-Request-Id")}, nil
}

// eventStream is the Accept header's value: one slice for every request, which no one writes to.
var eventStream = []string{"text/event-stream"}

// chatBody is the request's body: the caller's fields the gateway does not rewrite first (each as it came, in the
// order of their names), then the options the caller's do not name, then the gateway's own, last (object).
func chatBody(req ports.ChatRequest) ([]byte, error) {
	r := req.Request
	// defaulted: neither the request nor its options set a limit; the default goes as max_completion_tokens,
	// and what the two fields held (a null, an option that is no positive number) does not.
	defaulted := r.MaxTokens == nil && !chat.OptionCapped(req.Options, "max_tokens", "max_completion_tokens")
	// sent reports a field the gateway writes, or leaves out: none of the caller's nor of the options. An option's
	// limit or n spelled otherwise (MAX_TOKENS, max_tokenſ, N, n followed by a NUL: inbound.NamesField) is left
	// out: the gateway reads them by their names only, and an upstream that decodes as encoding/json does would read
	// it as a limit, or a number of choices, that the call's budget was not reserved for.
	sent := func(k string) bool {
		switch k {
		case "model", "messages", "stream", "stream_options":
			return true
		case "max_tokens", "max_completion_tokens":
			return defaulted
		}
		return k != "n" && inbound.NamesField(k, "n") || inbound.NamesField(k, "max_tokens") ||
			inbound.NamesField(k, "max_completion_tokens")
	}
	extra := make(map[string]json.RawMessage, len(r.Extra))
	for k, v := range r.Extra {
		if r.Format == chat.ChatCompletions && !sent(k) { // another format's fields are not this upstream's
			extra[k] = json.RawMessage(v)
		}
	}
	own := chatFields{Stream: true, StreamOptions: streamOptions{IncludeUsage: true}, Model: req.UpstreamModel,
		Messages: messagesOut(r)}
	if defaulted {
		own.MaxCompletionTokens = chat.DefaultMaxTokens
	}
	o := newObject(512 + promptBytes(r.Messages))
	o.add(extra)
	var translated *translatedFields
	if r.Format != chat.ChatCompletions {
		translated = translate(r)
	}
	o.add(options(req.Options, func(k string) bool {
		_, ok := r.Extra[k]
		return ok && translated == nil || sent(k) || translated.names(k)
	}))
	if translated != nil {
		o.add(translated)
	}
	o.add(own)
	return o.bytes()
}

// translatedFields are the fields of a request of another wire format (Messages, the Responses API) that chat
// completions has, written from the domain's request: its completion limit, sampling, stop sequences, seed, tools
// and response format. What that format has beyond them (Messages' cache_control, thinking, metadata and headers)
// is dropped on purpose: an OpenAI-compatible upstream refuses it.
type translatedFields struct {
	MaxCompletionTokens *int64          `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Tools               []toolOut       `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ResponseFormat      json.RawMessage `json:"response_format,omitempty"`
}

type toolOut struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

func translate(r chat.Request) *translatedFields {
	t := &translatedFields{MaxCompletionTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, Stop: r.Stop, Seed: r.Seed,
		ToolChoice: json.RawMessage(r.ToolChoice), ResponseFormat: json.RawMessage(r.ResponseFormat)}
	for _, tool := range r.Tools {
		t.Tools = append(t.Tools, toolOut{Type: "function", Function: toolFunction{Name: tool.Name, Description: tool.Description,
			Parameters: json.RawMessage(tool.Parameters), Strict: tool.Strict}})
	}
	return t
}

// names reports an option the translated fields write (none when there are none).
func (t *translatedFields) names(k string) bool {
	if t == nil {
		return false
	}
	switch k {
	case "max_completion_tokens":
		return t.MaxCompletionTokens != nil
	case "temperature":
		return t.Temperature != nil
	case "top_p":
		return t.TopP != nil
	case "stop":
		return t.Stop != nil
	case "seed":
		return t.Seed != nil
	case "tools":
		return t.Tools != nil
	case "tool_choice":
		return t.ToolChoice != nil
	case "response_format":
		return t.ResponseFormat != nil
	}
	return false
}

// chatFields are the fields the gateway writes itself, last: a completion limit when the call sets none (the one
// its budget was reserved for), always a stream with its usage, the upstream's model and the messages.
type chatFields struct {
	MaxCompletionTokens int64         `json:"max_completion_tokens,omitempty"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	Model               string        `json:"model"`
	Messages            []messageOut  `json:"messages"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// promptBytes is about what the messages' text takes in a body: the room made for it at once.
func promptBytes(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Content {
			if p.Raw != nil { // as it came: what text it carries is in it
				n += len(p.Raw)
				continue
			}
			n += len(p.Text) + len(p.ImageURL)
		}
	}
	return n
}

// messageOut is a message in OpenAI's shape: a string content stays a string, parts stay parts (those the gateway
// does not read as they came), null stays null.
type messageOut struct {
	Role       string        `json:"role"`
	Content    any           `json:"content"`
	Name       string        `json:"name,omitempty"`
	ToolCalls  []toolCallOut `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type toolCallOut struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Function functionOut `json:"function"`
}

type functionOut struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imagePart struct {
	Type     string   `json:"type"`
	ImageURL imageURL `json:"image_url"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// messagesOut is the request's messages in OpenAI's shape; the parts of another format it cannot take are dropped
// (chat.Request.Translatable), and a message left with none but its tool calls has a null content.
func messagesOut(r chat.Request) []messageOut {
	out := make([]messageOut, len(r.Messages))
	for i, m := range r.Messages {
		o := messageOut{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		content := r.Translatable(m.Content)
		switch {
		case m.Null || len(content) == 0 && len(m.ToolCalls) > 0:
		case m.Text:
			o.Content = m.Joined()
		default:
			parts := make([]any, len(content))
			for j, p := range content {
				switch p.Type {
				case "text":
					parts[j] = textPart{Type: "text", Text: p.Text}
				case "image_url":
					parts[j] = imagePart{Type: "image_url", ImageURL: imageURL{URL: p.ImageURL, Detail: p.Detail}}
				default:
					parts[j] = json.RawMessage(p.Raw)
				}
			}
			o.Content = parts
		}
		for _, tc := range m.ToolCalls {
			o.ToolCalls = append(o.ToolCalls, toolCallOut{ID: tc.ID, Type: "function", Function: functionOut{Name: tc.Name, Arguments: tc.Arguments}})
		}
		out[i] = o
	}
	return out
}

// ChatStream reads OpenAI's stream of chat.completion.chunk events, up to data: [DONE]. OpenAI-compatible
// upstreams that speak the same stream (OpenRouter among them) read it too.
type ChatStream struct {
	sseAnswer
	events decoder
	// tools numbers the upstream's tool-call indexes 0, 1, ... as Result does: a client indexing an array by them
	// gets no hole nor a negative index.
	tools chat.ToolIndexes
}

func NewChatStream(body io.Reader, status int) *ChatStream {
	s := &ChatStream{}
	s.init(body, status)
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

// sseAnswer is what a stream of an answer's server-sent events keeps: their reader, the response's status, and
// whether the answer finished.
type sseAnswer struct {
	sse      upstream.SSE
	status   int
	finished bool
}

func (s *sseAnswer) init(body io.Reader, status int) {
	s.status = status
	s.sse.Init(body, upstream.MaxEvent)
}

// broke views the end of the body: after the answer finished that is its end, before it a break.
func (s *sseAnswer) broke(err error) error {
	if err == io.EOF && s.finished {
		return io.EOF
	}
	return upstream.Broke(err, s.status)
}
