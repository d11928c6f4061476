package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/messages"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// messages serves POST /messages, Anthropic's Messages API: the chat use case with a body read as Messages
// (messages.Decode) and an answer written as Messages (messagesSink). Its errors are in Anthropic's shape
// (anthropicErrors, on the route).
func (h *ChatHandler) messages(c *gin.Context) {
	body, err := readMessagesBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	sink := &messagesSink{flushWriter: newFlushWriter(c)}
	complete(c, h.chat, body, sink, &sink.flushWriter)
}

// readMessagesBody reads the request's body whole and decodes it as Messages, with its headers.
func readMessagesBody(c *gin.Context) (*messages.Body, error) {
	return readInferenceBody(c.Request.Body, c.Request.ContentLength, func(raw []byte) (*messages.Body, error) {
		return messages.Decode(raw, c.GetHeader)
	})
}

// countTokens serves POST /messages/count_tokens: the input tokens of a Messages request, as its upstream counts
// them when it can (an anthropic one), else the gateway's estimate; X-Token-Count says which.
func (h *ChatHandler) countTokens(c *gin.Context) {
	body, err := readMessagesBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	body.ForCount()
	n, err := h.chat.CountTokens(c.Request.Context(), principal(c), body)
	if err != nil {
		writeError(c, err)
		return
	}
	how := "estimate"
	if n.Exact {
		how = "upstream"
	}
	c.Header("X-Token-Count", how)
	c.JSON(http.StatusOK, gin.H{"input_tokens": n.InputTokens})
}

// The routes of Anthropic's API, under the API base.
const (
	messagesPath    = "/messages"
	countTokensPath = "/messages/count_tokens"
)

// anthropicErrors marks the errors of a request to Anthropic's routes under base to be answered as Anthropic's
// clients read them ({"type": "error", "error": {"type", "message"}}, see respond). It runs before every other
// middleware that may refuse (the body's bound, the key), on the route the router matched.
func anthropicErrors(base string) gin.HandlerFunc {
	messages, count := base+messagesPath, base+countTokensPath
	return func(c *gin.Context) {
		if p := c.FullPath(); p == messages || p == count {
			requestOf(c).anthropic = true
		}
		c.Next()
	}
}

// anthropicTypes are the error types of Anthropic's API, by the status it answers them with.
var anthropicTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusPaymentRequired:       "billing_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	http.StatusServiceUnavailable:    "overloaded_error",
	529:                              "overloaded_error",
	http.StatusGatewayTimeout:        "timeout_error",
	524:                              "timeout_error",
}

// anthropicError is an error in Anthropic's shape, with the reference's code and metadata beside its type and
// message (Anthropic's clients read the two, the reference's the others).
type anthropicError struct {
	Type  string             `json:"type"`
	Error anthropicErrorBody `json:"error"`
}

type anthropicErrorBody struct {
	Type     string         `json:"type"`
	Message  string         `json:"message"`
	Code     int            `json:"code"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

func toAnthropicError(status int, msg string, meta map[string]any) anthropicError {
	typ, ok := anthropicTypes[status]
	if !ok {
		typ = "api_error"
	}
	return anthropicError{Type: "error", Error: anthropicErrorBody{Type: typ, Message: msg, Code: status, Metadata: meta}}
}

// messagesSink writes a chat answer as a Messages answer: a stream of server-sent events (message_start,
// content_block_start / _delta / _stop, message_delta, message_stop; error when it breaks) or one message object.
// An upstream that speaks Messages sends its events (chat.Chunk.Native), which go on as they came, or, for an
// answer not streamed, are gathered into the message (nativeMessage); another's chunks are translated.
type messagesSink struct {
	flushWriter
	head ports.ChatHead
	// native means the upstream's own events came.
	native bool
	gather nativeMessage
	// Of a translated stream: whether message_start went, the index the next block takes, the open block's
	// kind ("" when none), the tool calls (toolStream), and the text that came after a call began, held for the
	// end.
	begun bool
	next  int
	open  string
	tools toolStream
	after strings.Builder
	buf   []byte
}

func (s *messagesSink) Start(h ports.ChatHead) {
	s.head = h
	s.startAnswer(h)
}

func (s *messagesSink) Chunk(c chat.Chunk) error {
	if c.Native != nil {
		s.native = true
		if s.head.Stream {
			return s.Write(c.Native)
		}
		return s.gather.add(c.Native)
	}
	if !s.head.Stream || c.Empty() {
		return nil
	}
	b := s.begin(s.buf[:0])
	switch {
	case c.Content == "":
	case s.tools.began():
		s.after.WriteString(c.Content)
	default:
		if s.open != "text" {
			b = s.openBlock(b, "text", textStart)
		}
		b = s.delta(b, `{"type":"text_delta","text":`, c.Content)
	}
	for _, d := range c.ToolCalls {
		switch begin, more := s.tools.add(d); {
		case begin != nil:
			b = s.openBlock(b, "tool_use", toolStart(*begin))
			b = s.delta(b, `{"type":"input_json_delta","partial_json":`, begin.Arguments)
		case more != "":
			b = s.delta(b, `{"type":"input_json_delta","partial_json":`, more)
		}
	}
	if c.FinishReason != "" && s.open == "text" { // a call's block stays open: its deltas may still come
		b = s.closeBlock(b)
	}
	s.buf = b
	return s.Write(b)
}

// toolStart is a tool_use block as content_block_start begins it.
func toolStart(tc chat.ToolCall) []byte {
	block := jsonenc.AppendString([]byte(`{"type":"tool_use","id":`), tc.ID)
	block = jsonenc.AppendString(append(block, `,"name":`...), tc.Name)
	return append(block, `,"input":{}}`...)
}

// begin appends message_start, before the stream's first block.
func (s *messagesSink) begin(b []byte) []byte {
	if s.begun {
		return b
	}
	s.begun = true
	b = jsonenc.AppendString(append(b, `event: message_start`+"\n"+`data: {"type":"message_start","message":{"id":`...), s.head.GenerationID)
	b = jsonenc.AppendString(append(b, `,"type":"message","role":"assistant","model":`...), s.head.Model)
	return append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`+"\n\n"...)
}

// textStart is a text block as content_block_start begins it.
var textStart = []byte(`{"type":"text","text":""}`)

// openBlock closes the open block and appends content_block_start of a block of kind, start its JSON.
func (s *messagesSink) openBlock(b []byte, kind string, start []byte) []byte {
	b = s.closeBlock(b)
	b = strconv.AppendInt(append(b, `event: content_block_start`+"\n"+`data: {"type":"content_block_start","index":`...), int64(s.next), 10)
	b = append(append(append(b, `,"content_block":`...), start...), "}\n\n"...)
	s.open = kind
	s.next++
	return b
}

// delta appends a content_block_delta of the open block: prefix, then text as a JSON string.
func (s *messagesSink) delta(b []byte, prefix, text string) []byte {
	b = strconv.AppendInt(append(b, `event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":`...), int64(s.next-1), 10)
	b = jsonenc.AppendString(append(append(b, `,"delta":`...), prefix...), text)
	return append(b, "}}\n\n"...)
}

// closeBlock appends content_block_stop of the open block, if any.
func (s *messagesSink) closeBlock(b []byte) []byte {
	if s.open == "" {
		return b
	}
	s.open = ""
	b = strconv.AppendInt(append(b, `event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":`...), int64(s.next-1), 10)
	return append(b, "}\n\n"...)
}

// stopReasons are Anthropic's stop reasons for the gateway's finish reasons.
var stopReasons = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
	"content_filter": "refusal"}

func stopReason(finish string) string {
	if r, ok := stopReasons[finish]; ok {
		return r
	}
	return "end_turn"
}

// anthropicUsage is a usage in Anthropic's shape: the input without what was read from and written to the cache,
// which it counts apart.
func anthropicUsage(u *chat.Usage) map[string]int64 {
	if u == nil {
		return map[string]int64{"input_tokens": 0, "output_tokens": 0}
	}
	writes := u.CacheWriteTokens + u.CacheWrite1hTokens
	return map[string]int64{"input_tokens": u.PromptTokens - u.CachedTokens - writes, "output_tokens": u.CompletionTokens,
		"cache_read_input_tokens": u.CachedTokens, "cache_creation_input_tokens": writes}
}

func (s *messagesSink) Finish(r *chat.Result, _ domain.Micros) error {
	if s.head.Stream {
		if !s.native {
			b := s.closeBlock(s.begin(s.buf[:0]))
			for _, tc := range s.tools.held() {
				b = s.openBlock(b, "tool_use", toolStart(tc))
				b = s.delta(b, `{"type":"input_json_delta","partial_json":`, string(toolInput(tc.Arguments)))
				b = s.closeBlock(b)
			}
			if s.after.Len() > 0 {
				b = s.openBlock(b, "text", textStart)
				b = s.closeBlock(s.delta(b, `{"type":"text_delta","text":`, s.after.String()))
			}
			delta, _ := json.Marshal(map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": stopReason(r.FinishReason), "stop_sequence": nil}, "usage": anthropicUsage(r.Usage)})
			b = append(append(append(b, "event: message_delta\ndata: "...), delta...), "\n\n"...)
			b = append(b, `event: message_stop`+"\n"+`data: {"type":"message_stop"}`+"\n\n"...)
			if err := s.Write(b); err != nil {
				return err
			}
		}
		return s.Flush()
	}
	if s.native {
		return s.whole(s.gather.message())
	}
	return s.whole(json.Marshal(s.translated(r)))
}

// translated is a whole answer of an upstream of another format as a message.
func (s *messagesSink) translated(r *chat.Result) map[string]any {
	content := []any{}
	if text := r.Content.String(); text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, tc := range r.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": toolInput(tc.Arguments)})
	}
	return map[string]any{"id": s.head.GenerationID, "type": "message", "role": "assistant", "model": s.head.Model,
		"content": content, "stop_reason": stopReason(r.FinishReason), "stop_sequence": nil, "usage": anthropicUsage(r.Usage)}
}

// toolInput is a tool call's arguments as a tool_use block's input, which is a JSON object: arguments that are not
// one (cut by the token limit, or malformed) are {}, streamed or not, as an answer of the upstream's own format
// gathered for a caller who asked for no stream is.
func toolInput(args string) json.RawMessage {
	input := json.RawMessage(args)
	if !json.Valid(input) || !bytes.HasPrefix(bytes.TrimSpace(input), []byte("{")) {
		return json.RawMessage(`{}`)
	}
	return input
}

// Fail ends a broken stream with an error event, which Anthropic's clients raise.
func (s *messagesSink) Fail(err error) {
	de := &domain.Error{Kind: domain.KindUpstream, Code: "upstream_failed", Msg: "the provider failed mid-stream"}
	errors.As(err, &de)
	b, _ := json.Marshal(toAnthropicError(de.Kind.Status(), de.Msg, nil))
	if s.Write(append(append([]byte("event: error\ndata: "), b...), "\n\n"...)) == nil {
		_ = s.Flush()
	}
}

// nativeMessage gathers a Messages stream's events into the message they make, for a caller who asked for no
// stream: message_start's message, each block as content_block_start began it with its deltas added (text,
// thinking, signature, a tool's input JSON, citations), and message_delta's stop reason and usage. Events it
// cannot make a message of (no message_start, a block's index out of bounds or its start without its block) are
// the upstream's fault (malformed): the caller gets a 502, and pays nothing.
type nativeMessage struct {
	msg    map[string]any
	blocks []map[string]any
	inputs []*bytes.Buffer
}

// add reads the events in b (whole server-sent events).
func (m *nativeMessage) add(b []byte) error {
	for len(b) > 0 {
		var ev []byte
		ev, b, _ = bytes.Cut(b, []byte("\n\n"))
		var data []byte
		for line := range bytes.SplitSeq(ev, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, v...)
			}
		}
		if len(data) == 0 {
			continue
		}
		if err := m.event(data); err != nil {
			return err
		}
	}
	return nil
}

// nativeEvent is what the gathering reads of an event.
type nativeEvent struct {
	Type         string         `json:"type"`
	Index        int            `json:"index"`
	Message      map[string]any `json:"message"`
	ContentBlock map[string]any `json:"content_block"`
	Delta        map[string]any `json:"delta"`
	Usage        map[string]any `json:"usage"`
}

func (m *nativeMessage) event(data []byte) error {
	var ev nativeEvent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		return malformed("Messages", "an event is not the JSON of one: "+err.Error())
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return malformed("Messages", "message_start without its message")
		}
		m.msg = ev.Message
	case "content_block_start":
		if ev.Index < 0 || ev.Index >= chat.MaxParts {
			return malformed("Messages", "a content block's index is out of bounds")
		}
		if ev.ContentBlock == nil {
			return malformed("Messages", "content_block_start without its content_block")
		}
		for len(m.blocks) <= ev.Index {
			m.blocks, m.inputs = append(m.blocks, nil), append(m.inputs, nil)
		}
		m.blocks[ev.Index], m.inputs[ev.Index] = ev.ContentBlock, nil
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= len(m.blocks) || m.blocks[ev.Index] == nil {
			return nil
		}
		b := m.blocks[ev.Index]
		appendTo := func(key string, v any) {
			s, _ := v.(string)
			prev, _ := b[key].(string)
			b[key] = prev + s
		}
		switch ev.Delta["type"] {
		case "text_delta":
			appendTo("text", ev.Delta["text"])
		case "thinking_delta":
			appendTo("thinking", ev.Delta["thinking"])
		case "signature_delta":
			appendTo("signature", ev.Delta["signature"])
		case "input_json_delta":
			if m.inputs[ev.Index] == nil {
				m.inputs[ev.Index] = &bytes.Buffer{}
			}
			s, _ := ev.Delta["partial_json"].(string)
			m.inputs[ev.Index].WriteString(s)
		case "citations_delta":
			list, _ := b["citations"].([]any)
			b["citations"] = append(list, ev.Delta["citation"])
		}
	case "message_delta":
		if m.msg == nil {
			return nil
		}
		for k, v := range ev.Delta {
			m.msg[k] = v
		}
		usage, _ := m.msg["usage"].(map[string]any)
		if usage == nil {
			usage = map[string]any{}
		}
		for k, v := range ev.Usage {
			if v != nil {
				usage[k] = v
			}
		}
		m.msg["usage"] = usage
	}
	return nil
}

// message is the gathered message, JSON: each tool's input its input_json_deltas together (toolInput).
func (m *nativeMessage) message() ([]byte, error) {
	if m.msg == nil {
		return nil, malformed("Messages", "no message_start")
	}
	content := make([]any, 0, len(m.blocks))
	for i, b := range m.blocks {
		if b == nil {
			continue
		}
		if in := m.inputs[i]; in != nil && in.Len() > 0 {
			b["input"] = toolInput(in.String())
		}
		content = append(content, b)
	}
	m.msg["content"] = content
	b, err := json.Marshal(m.msg)
	if err != nil {
		return nil, malformed("Messages", err.Error())
	}
	return b, nil
}

// malformed is an answer of the upstream's own format (Messages, Responses) that the gateway cannot put together:
// the upstream's fault.
func malformed(format, reason string) error {
	return &ports.UpstreamError{Kind: domain.KindUpstream, Reason: "the provider's " + format + " stream is malformed: " + reason}
}
