package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// FakeSentence is what the chat fakes answer when the request sets no max_tokens: one token a word.
var FakeSentence = []string{"Hello", " from", " the", " fake", " upstream", "."}

// FakeWordLimit is the most words a chat fake writes: a larger max_tokens (Anthropic's, which is always set)
// is a ceiling its answer never reaches.
const FakeWordLimit = 1000

// ChatReply is what a chat fake answers a request, in any protocol: the words of its text, one token and one
// stream event each, or a call of the request's first tool; with the finish reason and the usage.
type ChatReply struct {
	Words            []string
	ToolID, ToolName string
	ToolArgs         string
	// Finish is OpenAI's word: stop, length or tool_calls.
	Finish                         string
	PromptTokens, CompletionTokens int64
}

// Text is the whole answer.
func (c ChatReply) Text() string { return strings.Join(c.Words, "") }

// chatMessage is what the fakes read of a message, whatever the protocol.
type chatMessage struct {
	Role, Text string
}

// replyTo decides the answer: with max tokens set up to FakeWordLimit, that many words ("length"); with tools offered and no tool
// result yet, a call of the first one ("tool_calls"); after a tool result, the result read back; otherwise
// FakeSentence. Prompt tokens are the text's bytes / 4, rounded up.
func replyTo(msgs []chatMessage, maxTokens int, tool string) ChatReply {
	var prompt int64
	var toolResult *string
	for _, m := range msgs {
		prompt += (int64(len(m.Text)) + 3) / 4
		if m.Role == "tool" {
			t := m.Text
			toolResult = &t
		}
	}
	r := ChatReply{PromptTokens: prompt, Finish: "stop"}
	switch {
	case maxTokens > 0 && maxTokens <= FakeWordLimit:
		for i := range maxTokens {
			r.Words = append(r.Words, fmt.Sprintf(" w%d", i))
		}
		r.Finish = "length"
	case tool != "" && toolResult == nil:
		r.ToolID, r.ToolName, r.ToolArgs, r.Finish = "call_fake_1", tool, `{"location":"Paris"}`, "tool_calls"
		r.CompletionTokens = 12
		return r
	case toolResult != nil:
		r.Words = []string{"The", " tool", " said:", " " + *toolResult}
	default:
		r.Words = FakeSentence
	}
	r.CompletionTokens = int64(len(r.Words))
	return r
}

// sse writes server-sent events one by one, flushed, honouring the step's abort and stall points (counted in
// bytes of the body) and its gap between events.
func sse(w http.ResponseWriter, r *http.Request, events []string, step Step) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	sent := 0
	for _, ev := range events {
		b := []byte(ev)
		if step.Abort > 0 && sent+len(b) >= step.Abort {
			w.Write(b[:step.Abort-sent])
			fl.Flush()
			panic(http.ErrAbortHandler)
		}
		if step.HoldAfter > 0 && sent+len(b) >= step.HoldAfter {
			w.Write(b[:step.HoldAfter-sent])
			fl.Flush()
			<-r.Context().Done()
			return
		}
		if _, err := w.Write(b); err != nil {
			return
		}
		fl.Flush()
		sent += len(b)
		if step.Gap > 0 {
			select {
			case <-time.After(step.Gap):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func dataEvent(v any) string {
	b, _ := json.Marshal(v)
	return "data: " + string(b) + "\n\n"
}

// openAIChatRequest is what the OpenAI fake reads of a chat request.
type openAIChatRequest struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	Tools               []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// chat serves POST /v1/chat/completions as OpenAI does: a chat.completion, or with stream a
// chat.completion.chunk event per token, a usage chunk when stream_options.include_usage, and data: [DONE].
func (o *OpenAI) chat(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	w.Header().Set("x-request-id", "req_fake_chat")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	var req openAIChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		jsonError(w, 400, `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	if req.Model == "" || len(req.Messages) == 0 {
		jsonError(w, 400, `{"error":{"message":"Missing required parameter: 'messages'.","type":"invalid_request_error","param":"messages","code":"missing_required_parameter"}}`)
		return
	}
	if step.Events != nil {
		sse(w, r, step.Events, step)
		return
	}
	var msgs []chatMessage
	for _, raw := range req.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		msgs = append(msgs, chatMessage{Role: m.Role, Text: contentText(m.Content)})
	}
	tool := ""
	if len(req.Tools) > 0 {
		tool = req.Tools[0].Function.Name
	}
	limit := max(req.MaxTokens, req.MaxCompletionTokens)
	reply := replyTo(msgs, limit, tool)
	if step.Ramble > 0 {
		reply.CompletionTokens, reply.Finish = int64(step.Ramble), "stop"
		if limit > 0 && limit < step.Ramble {
			reply.CompletionTokens, reply.Finish = int64(limit), "length"
		}
	}
	const id = "chatcmpl-fake"
	usage := map[string]any{"prompt_tokens": reply.PromptTokens, "completion_tokens": reply.CompletionTokens,
		"total_tokens":          reply.PromptTokens + reply.CompletionTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}, "completion_tokens_details": map[string]any{"reasoning_tokens": 0}}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text(), "refusal": nil}
		if reply.ToolName != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": reply.ToolID, "type": "function",
				"function": map[string]any{"name": reply.ToolName, "arguments": reply.ToolArgs}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": 1700000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": reply.Finish}},
			"usage":   usage, "system_fingerprint": "fp_fake"})
		return
	}
	// Chunks are written from a template (the benchmarks stream hundreds of them): only the delta varies.
	prefix := `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1700000000,"model":` + jsonString(req.Model) +
		`,"system_fingerprint":"fp_fake","choices":[{"index":0,"delta":`
	chunk := func(delta any, finish string) string {
		d, ok := delta.(string)
		if !ok {
			d = jsonString(delta)
		}
		f := "null"
		if finish != "" {
			f = jsonString(finish)
		}
		return prefix + d + `,"logprobs":null,"finish_reason":` + f + "}]}\n\n"
	}
	events := []string{chunk(`{"role":"assistant","content":"","refusal":null}`, "")}
	for _, word := range reply.Words {
		events = append(events, chunk(`{"content":`+jsonString(word)+`}`, ""))
	}
	if reply.ToolName != "" {
		events = append(events,
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": reply.ToolID, "type": "function",
				"function": map[string]any{"name": reply.ToolName, "arguments": ""}}}}, ""),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": reply.ToolArgs}}}}, ""))
	}
	events = append(events, chunk(`{}`, reply.Finish))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		events = append(events, dataEvent(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000,
			"model": req.Model, "choices": []any{}, "usage": usage}))
	}
	sse(w, r, append(events, "data: [DONE]\n\n"), step)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// contentText is a message content's text (or Anthropic's system prompt or tool result): the string, or its text
// parts joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
