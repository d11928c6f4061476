// Package anthropic speaks Anthropic's Messages API (POST /v1/messages): chat completions translated both ways,
// always streamed upstream.
package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// Version is the anthropic-version header every call carries.
const Version = "2023-06-01"

// Client is one Anthropic account; its base URL ends in /v1 (https://api.anthropic.com/v1).
type Client struct {
	cfg  upstream.Config
	http *http.Client
}

var _ ports.ChatProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client { return &Client{cfg: cfg, http: client} }

var _ ports.FormatSpeaker = (*Client)(nil)

// Speaks reports the wire formats the client passes on as they came: Anthropic's Messages.
func (c *Client) Speaks(f chat.Format) bool { return speaks(f) }

func speaks(f chat.Format) bool { return f == chat.Messages }

// Chat translates the request into a Messages API call and its event stream into chunks. Anthropic requires
// max_tokens: a request without one asks for chat.DefaultMaxTokens (the completion length its budget is reserved
// for). OpenAI fields with no Anthropic counterpart (seed, response_format, logit_bias...) are not sent;
// provider.options (top_k, thinking, ...) go under the translated fields.
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest) (ports.ChatReply, error) {
	body := Body(req)
	if msgs, translated := body["messages"].([]message); translated && len(msgs) == 0 {
		// Anthropic refuses a request without messages: not sent, and another endpoint may take it.
		return ports.ChatReply{}, upstream.Unfit("messages: anthropic needs a message with content besides the system prompt")
	}
	hreq, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/messages", body)
	if err != nil {
		return ports.ChatReply{}, upstream.Internal(err)
	}
	hreq.Header.Set("Accept", "text/event-stream")
	c.headers(hreq, req.Request)
	native := speaks(req.Request.Format)
	resp, err := upstream.Do(ctx, c.http, hreq, c.cfg)
	if err != nil {
		return ports.ChatReply{}, err
	}
	if resp.StatusCode >= 300 {
		return ports.ChatReply{}, failure(resp)
	}
	return ports.ChatReply{Body: resp.Body, Decode: func(r io.Reader) ports.ChatStream {
		return upstream.ScrubChat(newStream(r, resp.StatusCode, native), hreq)
	},
		UpstreamID: resp.Header.Get("Request-Id")}, nil
}

var _ ports.TokenCounter = (*Client)(nil)

// countFields are the fields POST /v1/messages/count_tokens takes of a Messages request: it refuses the others
// (max_tokens, stream, metadata...).
var countFields = []string{"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"}

// CountTokens asks Anthropic's count_tokens for the request's input tokens: the request's fields that it takes, with
// the caller's version and betas when the request came in Messages.
func (c *Client) CountTokens(ctx context.Context, req ports.ChatRequest) (int64, error) {
	body := Body(req)
	for k := range body {
		if !slices.Contains(countFields, k) {
			delete(body, k)
		}
	}
	hreq, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/messages/count_tokens", body)
	if err != nil {
		return 0, upstream.Internal(err)
	}
	c.headers(hreq, req.Request)
	resp, err := upstream.Do(ctx, c.http, hreq, c.cfg)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 300 {
		return 0, failure(resp)
	}
	defer resp.Body.Close()
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil || out.InputTokens == nil ||
		*out.InputTokens < 0 || *out.InputTokens > chat.MaxTokenCount {
		return 0, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Reason: "the provider's token count is not one"}
	}
	return *out.InputTokens, nil
}

// headers sets a call's credential and version, and, for a request that came in Messages, the caller's version and
// betas, as Anthropic's gateway protocol asks.
func (c *Client) headers(hreq *http.Request, r chat.Request) {
	hreq.Header.Set("x-api-key", c.cfg.APIKey)
	hreq.Header.Set("anthropic-version", Version)
	if speaks(r.Format) {
		for k, v := range r.Headers {
			hreq.Header.Set(k, v)
		}
	}
}

// Body is the Messages API request for a chat request. A request that came in Messages is its caller's fields as
// they came (chat.Request.Extra: every content block, cache_control, thinking and its signature, metadata...) with
// the upstream's model and a stream; its messages and system prompt are written from the domain's only when the
// gateway changed them (chat.Request.Rewritten).
func Body(req ports.ChatRequest) map[string]any {
	r := req.Request
	if speaks(r.Format) {
		out := make(map[string]any, len(r.Extra)+2)
		for k, v := range r.Extra {
			out[k] = json.RawMessage(v)
		}
		if r.Rewritten {
			delete(out, "system")
			system, msgs := messages(r.Messages, nil)
			if system != nil {
				out["system"] = system
			}
			out["messages"] = msgs
		}
		out["model"], out["stream"] = req.UpstreamModel, true
		return upstream.Merge(req.Options, out)
	}
	system, msgs := messages(r.Messages, r.Translatable)
	out := map[string]any{"model": req.UpstreamModel, "messages": msgs, "stream": true, "max_tokens": int64(chat.DefaultMaxTokens)}
	if system != nil {
		out["system"] = system
	}
	if r.MaxTokens != nil {
		out["max_tokens"] = *r.MaxTokens
	}
	if r.Temperature != nil {
		out["temperature"] = *r.Temperature
	}
	if r.TopP != nil {
		out["top_p"] = *r.TopP
	}
	if len(r.Stop) > 0 {
		out["stop_sequences"] = r.Stop
	}
	if len(r.Tools) > 0 {
		tools := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			schema := json.RawMessage(t.Parameters)
			if schema == nil {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tool := map[string]any{"name": t.Name, "input_schema": schema}
			if t.Description != "" {
				tool["description"] = t.Description
			}
			tools[i] = tool
		}
		out["tools"] = tools
	}
	if choice, none := toolChoice(r.ToolChoice); none {
		delete(out, "tools") // Anthropic's "none" also exists, but older models refuse it: offering no tool is the same
	} else if choice != nil {
		out["tool_choice"] = choice
	}
	return upstream.Merge(req.Options, out)
}

// toolChoice translates OpenAI's tool_choice: auto, none, required (Anthropic's any), or a named function.
func toolChoice(raw domain.Opaque) (choice map[string]any, none bool) {
	if raw == nil {
		return nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none":
			return nil, true
		case "required":
			return map[string]any{"type": "any"}, false
		}
		return map[string]any{"type": "auto"}, false
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Function.Name != "" {
		return map[string]any{"type": "tool", "name": named.Function.Name}, false
	}
	return nil, false
}

// message is one message on Anthropic's wire: its content is always blocks.
type message struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// messages translates the conversation: system and developer messages become the system prompt (a string, or
// text blocks when one carries cache_control); a tool's result becomes a tool_result block of a user message;
// consecutive messages of one role are joined into one, as Anthropic wants the roles to alternate (and all
// results of one turn's tool calls in one message).
//
// keep, when not nil, is what of a message's content goes upstream: chat.Request.Translatable for a request in a
// format Anthropic does not speak, which leaves out the parts only that format has (a Responses input_file), as
// other upstreams do. A request in Messages keeps every block as it came.
func messages(msgs []chat.Message, keep func([]chat.Part) []chat.Part) (any, []message) {
	var system []any
	var texts []string
	cached := false
	var out []message
	for _, m := range msgs {
		role := m.Role
		var blocks []any
		switch m.Role {
		case "system", "developer":
			if t := m.Joined(); t != "" {
				texts = append(texts, t)
			}
			for _, p := range m.Content {
				if p.Type == "text" && p.Text != "" {
					system = append(system, textBlock(p))
					cached = cached || p.CacheControl != nil
				}
			}
			continue
		case "tool":
			role = "user"
			blocks = []any{map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Joined()}}
		default:
			content := m.Content
			if keep != nil {
				content = keep(content)
			}
			blocks = parts(content)
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(tc.Arguments)
				if strings.TrimSpace(tc.Arguments) == "" {
					input = json.RawMessage(`{}`)
				} else if !json.Valid(input) {
					input, _ = json.Marshal(map[string]string{"arguments": tc.Arguments})
				}
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": input})
			}
		}
		if len(blocks) == 0 {
			continue // Anthropic refuses empty content
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	switch {
	case cached:
		return system, out
	case len(texts) > 0:
		return strings.Join(texts, "\n\n"), out
	}
	return nil, out
}

// parts translates content parts: text as text blocks (empty ones dropped: Anthropic refuses them), images as
// image blocks from a URL or from a data: URL's base64; other kinds as they came.
func parts(content []chat.Part) []any {
	var out []any
	for _, p := range content {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, textBlock(p))
			}
		case "image_url":
			out = append(out, map[string]any{"type": "image", "source": imageSource(p.ImageURL)})
		default:
			out = append(out, json.RawMessage(p.Raw))
		}
	}
	return out
}

// textBlock is a text part as a text block, with its cache_control when it has one.
func textBlock(p chat.Part) map[string]any {
	b := map[string]any{"type": "text", "text": p.Text}
	if p.CacheControl != nil {
		b["cache_control"] = json.RawMessage(p.CacheControl)
	}
	return b
}

// imageSource is a data: URL's base64 and media type, or the URL for Anthropic to fetch.
func imageSource(u string) map[string]any {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			if mediaType, ok := strings.CutSuffix(meta, ";base64"); ok {
				return map[string]any{"type": "base64", "media_type": mediaType, "data": data}
			}
		}
	}
	return map[string]any{"type": "url", "url": u}
}

// apiError is Anthropic's error body, also the data of a stream's error event.
type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// failure classifies an error response by its status; a credit balance too low is out of quota, not the
// caller's bad input, whatever its status.
func failure(resp *http.Response) error {
	raw := upstream.ErrorBody(resp)
	var e apiError
	_ = json.Unmarshal(raw, &e)
	err := upstream.Failed(resp, raw, e.Error.Message)
	if e.Error.Type == "billing_error" || strings.Contains(strings.ToLower(e.Error.Message), "credit balance") {
		return upstream.Quota(err)
	}
	return err
}
