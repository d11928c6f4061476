package fakes

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Anthropic errors, byte for byte in Anthropic's shape.
const (
	AnthropicRateLimited = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	AnthropicOverloaded  = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	AnthropicServerError = `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	AnthropicBadInput    = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`
	AnthropicCredit      = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`
	anthropicBadKey      = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
)

// Anthropic fakes api.anthropic.com/v1: POST /v1/messages, streamed (event: lines, ping, message_start ...
// message_stop) or not. Overloaded, when set, sends an overloaded_error event right after message_start, as
// Anthropic does when it sheds load mid-stream.
type Anthropic struct {
	*Fake
	Key        string
	Overloaded bool
	// tool, when set (CallTool), is the only tool the fake calls, with toolArgs, when a request offers it and holds
	// no tool result yet (an agent offers many: the first offered is called otherwise).
	tool, toolArgs string
}

// CallTool makes the fake call only the tool name, with args (JSON), when a request offers it; "none" calls none.
func (a *Anthropic) CallTool(name, args string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tool, a.toolArgs = name, args
}

func NewAnthropic(t testing.TB, key string) *Anthropic {
	a := &Anthropic{Key: key}
	a.Fake = newFake(t, a.serve)
	return a
}

func (a *Anthropic) BaseURL() string { return a.URL + "/v1" }

// anthropicRequest is what the fake reads of a Messages API request.
type anthropicRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// anthropicBlock is a content block of a message.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // a tool_result's
}

func anthropicInvalid(w http.ResponseWriter, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
	jsonError(w, 400, string(b))
}

func (a *Anthropic) serve(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	w.Header().Set("request-id", "req_fake_anthropic")
	if r.Header.Get("x-api-key") != a.Key {
		jsonError(w, 401, anthropicBadKey)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens" {
		a.countTokens(w, body)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		jsonError(w, 404, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`)
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		anthropicInvalid(w, "anthropic-version: header is required")
		return
	}
	if step.Status != 0 {
		fail(w, step)
		return
	}
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		anthropicInvalid(w, "There was an error parsing the body: "+err.Error())
		return
	}
	switch {
	case req.Model == "":
		anthropicInvalid(w, "model: Field required")
		return
	case req.MaxTokens <= 0:
		anthropicInvalid(w, "max_tokens: Field required")
		return
	case len(req.Messages) == 0:
		anthropicInvalid(w, "messages: Field required")
		return
	}
	var msgs []chatMessage
	if len(req.System) > 0 {
		msgs = append(msgs, chatMessage{Role: "system", Text: contentText(req.System)})
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			anthropicInvalid(w, "messages: Unexpected role \""+m.Role+"\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.")
			return
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			msgs = append(msgs, chatMessage{Role: m.Role, Text: s})
			continue
		}
		var blocks []anthropicBlock
		if err := json.Unmarshal(m.Content, &blocks); err != nil || len(blocks) == 0 {
			anthropicInvalid(w, "messages."+itoa(i)+".content: Input should be a valid list")
			return
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text" && b.Text == "":
				anthropicInvalid(w, "messages: text content blocks must be non-empty")
				return
			case b.Type == "text":
				msgs = append(msgs, chatMessage{Role: m.Role, Text: b.Text})
			case b.Type == "tool_result":
				msgs = append(msgs, chatMessage{Role: "tool", Text: contentText(b.Content)})
			}
		}
	}
	if step.Events != nil {
		sse(w, r, step.Events, step)
		return
	}
	tool := ""
	if len(req.Tools) > 0 {
		tool = req.Tools[0].Name
	}
	f.mu.Lock()
	only, args := a.tool, a.toolArgs
	f.mu.Unlock()
	if only != "" {
		tool = ""
		for _, t := range req.Tools {
			if t.Name == only {
				tool = t.Name
			}
		}
	}
	reply := replyTo(msgs, req.MaxTokens, tool)
	if only != "" && reply.ToolName != "" {
		reply.ToolArgs = args
	}
	stop := map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}[reply.Finish]
	toolID := "toolu_fake_1"
	const id = "msg_fake"
	if !req.Stream {
		content := []any{}
		if reply.ToolName != "" {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID, "name": reply.ToolName, "input": json.RawMessage(reply.ToolArgs)})
		} else {
			content = append(content, map[string]any{"type": "text", "text": reply.Text()})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": reply.PromptTokens, "output_tokens": reply.CompletionTokens}})
		return
	}
	ev := func(name string, v any) string {
		b, _ := json.Marshal(v)
		return "event: " + name + "\ndata: " + string(b) + "\n\n"
	}
	events := []string{
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
			"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": reply.PromptTokens, "cache_creation_input_tokens": 0,
				"cache_read_input_tokens": 0, "output_tokens": 1}}}),
		ev("ping", map[string]any{"type": "ping"}),
	}
	if a.Overloaded {
		events = append(events, ev("error", json.RawMessage(AnthropicOverloaded)))
		sse(w, r, events, step)
		return
	}
	block := func(start map[string]any, deltas ...map[string]any) { // the answer's one block: index 0
		events = append(events, ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start}))
		for _, d := range deltas {
			events = append(events, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": d}))
		}
		events = append(events, ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
	}
	if reply.ToolName != "" {
		half := len(reply.ToolArgs) / 2
		block(map[string]any{"type": "tool_use", "id": toolID, "name": reply.ToolName, "input": map[string]any{}},
			map[string]any{"type": "input_json_delta", "partial_json": ""},
			map[string]any{"type": "input_json_delta", "partial_json": reply.ToolArgs[:half]},
			map[string]any{"type": "input_json_delta", "partial_json": reply.ToolArgs[half:]})
	} else {
		var deltas []map[string]any
		for _, word := range reply.Words {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": word})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas...)
	}
	events = append(events,
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": reply.CompletionTokens}}),
		ev("message_stop", map[string]any{"type": "message_stop"}))
	sse(w, r, events, step)
}

// countTokens answers count_tokens as Anthropic does, refusing the fields it does not take: its count is the body's
// bytes / 4, rounded up, so that a caller can tell it from the gateway's estimate.
func (a *Anthropic) countTokens(w http.ResponseWriter, body []byte) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		anthropicInvalid(w, "There was an error parsing the body: "+err.Error())
		return
	}
	for k := range fields {
		switch k {
		case "model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers":
		default:
			anthropicInvalid(w, k+": Extra inputs are not permitted")
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"input_tokens": (len(body) + 3) / 4})
}
