package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/responses"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// ResponsesHandler serves OpenAI's Responses API: POST /responses, and GET /responses upgraded to its WebSocket
// mode (websocket.go). Its calls are chat calls of the Responses format (ports.ChatService).
type ResponsesHandler struct {
	chat ports.ChatService
	ws   WebSocketConfig
	// conns are the open WebSocket connections, closed when the server shuts down; admit holds each of their calls
	// to the key's request and token limits (the server's, which a call over HTTP passes in its middleware).
	conns *connections
	admit func(ctx context.Context, p account.Principal) error
}

func NewResponsesHandler(s ports.ChatService, cfg Config) *ResponsesHandler {
	return &ResponsesHandler{chat: s, ws: cfg.WebSocket.withDefaults(), conns: newConnections()}
}

func (h *ResponsesHandler) create(c *gin.Context) {
	body, err := readInferenceBody(c.Request.Body, c.Request.ContentLength, responses.Decode)
	if err != nil {
		writeError(c, err)
		return
	}
	out := &sseOut{flushWriter: newFlushWriter(c)}
	complete(c, h.chat, body, &responsesSink{out: out}, &out.flushWriter)
}

// responsesSink writes an answer in the Responses API's shape: a stream of response.* events (through out: as
// server-sent events, or WebSocket messages), or one response object. An upstream that speaks the Responses API
// sends its own events (chat.Chunk.Native), which go on as they came; the answer of any other is written from its
// chunks into the same events, each with its sequence number.
type responsesSink struct {
	out  eventOut
	head ports.ChatHead
	seq  int64
	// native means the upstream's own events go on; completed is the response object of its last
	// response.completed (or incomplete) event, which an answer not streamed is, and whose output a WebSocket
	// connection keeps.
	native    bool
	completed json.RawMessage
	// nativeID is the id of the upstream's response (its response.created), which a failure it did not end with
	// its own event names, numbered after its last event.
	nativeID string
	// begun says the response's first events went; items are its output, open the index of the item that is
	// still taking deltas (-1: none). tools are the tool calls (toolStream), live the index of the first call's
	// item once added (-1: none), and after the reasoning and text that came after a call began, held for the end.
	begun bool
	items []*outputItem
	open  int
	tools toolStream
	live  int
	after struct{ reasoning, text strings.Builder }
	// buf is the delta event being written.
	buf []byte
}

// eventOut is where an answer goes: server-sent events or one object on an HTTP response, or WebSocket messages.
type eventOut interface {
	ports.Flusher
	// begin readies the transport for the answer (an HTTP response's headers).
	begin(h ports.ChatHead)
	// event sends one event (its type and its JSON); native a run of the upstream's server-sent events.
	event(typ string, data []byte) error
	native(events []byte) error
	// whole sends an answer that was not streamed: the response object.
	whole(b []byte) error
}

// sseOut writes an answer on an HTTP response: events as server-sent events.
type sseOut struct {
	flushWriter
	buf []byte
}

func (o *sseOut) begin(h ports.ChatHead) {
	o.header("X-Generation-Id", h.GenerationID)
	if h.Stream {
		hdr := o.c.Writer.Header()
		hdr["Content-Type"], hdr["X-Accel-Buffering"] = eventStream, noBuffering
		o.start(http.StatusOK)
	}
}

func (o *sseOut) event(typ string, data []byte) error {
	b := append(append(append(o.buf[:0], "event: "...), typ...), "\ndata: "...)
	o.buf = append(append(b, data...), "\n\n"...)
	return o.Write(o.buf)
}

func (o *sseOut) native(events []byte) error { return o.Write(events) }

func (o *sseOut) whole(b []byte) error {
	o.header("Content-Type", "application/json; charset=utf-8")
	o.start(http.StatusOK)
	if err := o.Write(b); err != nil {
		return err
	}
	return o.Flush()
}

// outputItem is an item of the response's output as the sink builds it: a message, a reasoning or a function call.
type outputItem struct {
	kind, id     string
	callID, name string
	text         strings.Builder
	done         bool
}

func (s *responsesSink) Start(h ports.ChatHead) {
	s.head, s.open, s.live = h, -1, -1
	s.out.begin(h)
}

// Flush sends what the sink wrote since the last.
func (s *responsesSink) Flush() error { return s.out.Flush() }

func (s *responsesSink) Chunk(c chat.Chunk) error {
	if c.Native != nil {
		s.native = true
		s.followNative(c.Native)
		if !s.head.Stream {
			return nil
		}
		return s.out.native(c.Native)
	}
	if !s.begun && s.head.Stream {
		s.begun = true
		r, err := json.Marshal(s.response("in_progress", nil, nil))
		if err != nil {
			return err
		}
		for _, typ := range []string{"response.created", "response.in_progress"} {
			if err := s.emit(typ, member{"response", json.RawMessage(r)}); err != nil {
				return err
			}
		}
	}
	began := s.tools.began()
	for _, t := range []struct {
		kind, text string
		held       *strings.Builder
	}{{"reasoning", c.Reasoning, &s.after.reasoning}, {"message", c.Content, &s.after.text}} {
		switch {
		case t.text == "":
		case began:
			t.held.WriteString(t.text)
		default:
			if err := s.delta(t.kind, "", "", t.text); err != nil {
				return err
			}
		}
	}
	for _, d := range c.ToolCalls {
		switch begin, more := s.tools.add(d); {
		case begin != nil:
			if err := s.delta("function_call", begin.ID, begin.Name, begin.Arguments); err != nil {
				return err
			}
			s.live = s.open
		case more != "" && s.open == s.live:
			if err := s.write(s.live, more); err != nil {
				return err
			}
		}
	}
	return nil
}

// followNative reads what the sink needs of an upstream's native events: the response object of the completion
// (a JSON object: a completion without one is no answer), the id of the response and the number of the last event.
func (s *responsesSink) followNative(events []byte) {
	if n, ok := lastSequenceNumber(events); ok {
		s.seq = n + 1
	}
	for ev := range bytes.SplitSeq(events, []byte("\n\n")) {
		_, data, ok := bytes.Cut(ev, []byte("data: "))
		if !ok {
			continue
		}
		if s.nativeID == "" && bytes.Contains(data, []byte(`"response.created"`)) ||
			bytes.Contains(data, []byte("response.completed")) || bytes.Contains(data, []byte("response.incomplete")) {
			var e struct {
				Type     string          `json:"type"`
				Response json.RawMessage `json:"response"`
			}
			if json.Unmarshal(data, &e) != nil || !bytes.HasPrefix(bytes.TrimSpace(e.Response), []byte("{")) {
				continue
			}
			var r struct {
				ID string `json:"id"`
			}
			if s.nativeID == "" && json.Unmarshal(e.Response, &r) == nil {
				s.nativeID = r.ID
			}
			if e.Type == "response.completed" || e.Type == "response.incomplete" {
				s.completed = e.Response
			}
		}
	}
}

// lastSequenceNumber is the "sequence_number" of the last of a run of events, found by its key: each event has it
// once, among its top-level members, and a string cannot hold the key unescaped. The events are per token, and
// decoding each whole for one number would be the sink's main cost.
func lastSequenceNumber(events []byte) (int64, bool) {
	key := []byte(`"sequence_number":`)
	at := bytes.LastIndex(events, key)
	if at < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(events[at+len(key):], " ")
	end := 0
	for end < len(rest) && end < 19 && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}

// delta adds text to the item it belongs to (the open one of its kind; a call is a new item), opening the item
// (and closing the one open before) as it must.
func (s *responsesSink) delta(kind string, callID, name, text string) error {
	i := -1
	if kind != "function_call" && s.open >= 0 && s.items[s.open].kind == kind {
		i = s.open
	}
	if i < 0 {
		var err error
		if i, err = s.add(kind, callID, name); err != nil {
			return err
		}
	}
	return s.write(i, text)
}

// write adds text to item i, sending it as a delta event.
func (s *responsesSink) write(i int, text string) error {
	it := s.items[i]
	kind := it.kind
	it.text.WriteString(text)
	if text == "" || !s.head.Stream {
		return nil
	}
	// One event a token, appended by hand as chat's are (chatSink.Chunk): no member is boxed on every token.
	typ := deltaEvent[kind]
	b := s.eventHead(typ)
	b = jsonenc.AppendString(append(b, `,"item_id":`...), it.id)
	b = strconv.AppendInt(append(b, `,"output_index":`...), int64(i), 10)
	if kind != "function_call" {
		b = append(append(append(b, `,"`...), partIndex(kind)...), `":0`...)
	}
	if kind == "message" {
		b = append(b, `,"logprobs":[]`...)
	}
	return s.send(typ, jsonenc.AppendString(append(b, `,"delta":`...), text))
}

// add opens an item of kind (closing the one open before), and returns its index in the output.
func (s *responsesSink) add(kind string, callID, name string) (int, error) {
	if err := s.closeOpen(); err != nil {
		return 0, err
	}
	it := &outputItem{kind: kind, callID: callID, name: name,
		id: itemPrefix[kind] + s.head.GenerationID + "_" + strconv.Itoa(len(s.items))}
	s.items = append(s.items, it)
	i := len(s.items) - 1
	s.open = i
	if err := s.emit("response.output_item.added", member{"output_index", i}, member{"item", it.object(false)}); err != nil {
		return i, err
	}
	if part := it.part(false); part != nil {
		return i, s.emit(it.partEvent(".added"), member{"item_id", it.id}, member{"output_index", i}, member{partIndex(kind), 0},
			member{"part", part})
	}
	return i, nil
}

var itemPrefix = map[string]string{"message": "msg_", "reasoning": "rs_", "function_call": "fc_"}

var deltaEvent = map[string]string{"message": "response.output_text.delta", "reasoning": "response.reasoning_summary_text.delta",
	"function_call": "response.function_call_arguments.delta"}

func partIndex(kind string) string {
	if kind == "reasoning" {
		return "summary_index"
	}
	return "content_index"
}

// closeOpen ends the open item: its text's done event, its part's, the item's.
func (s *responsesSink) closeOpen() error {
	if s.open < 0 {
		return nil
	}
	i, it := s.open, s.items[s.open]
	s.open, it.done = -1, true
	ev := []member{{"item_id", it.id}, {"output_index", i}}
	switch it.kind {
	case "function_call":
		ev = append(ev, member{"name", it.name}, member{"arguments", it.text.String()})
	case "message":
		ev = append(ev, member{"content_index", 0}, member{"text", it.text.String()}, member{"logprobs", json.RawMessage("[]")})
	default:
		ev = append(ev, member{"summary_index", 0}, member{"text", it.text.String()})
	}
	if err := s.emit(itemDoneEvent[it.kind], ev...); err != nil {
		return err
	}
	if part := it.part(true); part != nil {
		if err := s.emit(it.partEvent(".done"), member{"item_id", it.id}, member{"output_index", i}, member{partIndex(it.kind), 0},
			member{"part", part}); err != nil {
			return err
		}
	}
	return s.emit("response.output_item.done", member{"output_index", i}, member{"item", it.object(true)})
}

var itemDoneEvent = map[string]string{"message": "response.output_text.done", "reasoning": "response.reasoning_summary_text.done",
	"function_call": "response.function_call_arguments.done"}

// part is the item's one content part (a message's output text, a reasoning's summary text), nil for a call.
func (it *outputItem) part(done bool) *partOut {
	p := &partOut{}
	if done {
		p.Text = it.text.String()
	}
	switch it.kind {
	case "message":
		p.Type, p.Annotations, p.Logprobs = "output_text", &[]any{}, &[]any{}
	case "reasoning":
		p.Type = "summary_text"
	default:
		return nil
	}
	return p
}

// partOut is a content part: a message's output text (with its annotations and logprobs, empty) or a reasoning's
// summary text.
type partOut struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
	Logprobs    *[]any `json:"logprobs,omitempty"`
}

func (it *outputItem) partEvent(suffix string) string {
	if it.kind == "reasoning" {
		return "response.reasoning_summary_part" + suffix
	}
	return "response.content_part" + suffix
}

// itemOut is an output item as the response holds it: a message (role, content), a reasoning (summary) or a
// function call (call_id, name, arguments).
type itemOut struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	Status    string  `json:"status"`
	Role      string  `json:"role,omitempty"`
	Content   *[]any  `json:"content,omitempty"`
	Summary   *[]any  `json:"summary,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// object is the item as the response's output holds it: whole once done, empty while it is being added.
func (it *outputItem) object(done bool) itemOut {
	o := itemOut{Type: it.kind, ID: it.id, Status: "in_progress"}
	parts := []any{}
	if done {
		o.Status = "completed"
		if p := it.part(true); p != nil {
			parts = []any{p}
		}
	}
	switch it.kind {
	case "message":
		o.Role, o.Content = "assistant", &parts
	case "reasoning":
		o.Summary = &parts
	case "function_call":
		args := ""
		if done {
			args = it.text.String()
		}
		o.CallID, o.Name, o.Arguments = it.callID, it.name, &args
	}
	return o
}

// member is one member of an event after its type and sequence number: an int, a string or raw JSON written as
// they are, any other value encoded by encoding/json.
type member struct {
	key   string
	value any
}

// emit sends one event of the stream, numbered, its members in order; an answer not streamed sends none. The
// members are appended, not a map encoded: encoding/json sorted a map's keys, boxed each value and checked the
// response object again where it was raw, four times before the first token.
func (s *responsesSink) emit(typ string, members ...member) error {
	if !s.head.Stream {
		return nil
	}
	b := s.eventHead(typ)
	for _, m := range members {
		b = append(jsonenc.AppendString(append(b, ','), m.key), ':')
		switch v := m.value.(type) {
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case string:
			b = jsonenc.AppendString(b, v)
		case json.RawMessage:
			b = append(b, v...)
		default:
			enc, err := json.Marshal(v)
			if err != nil {
				return err
			}
			b = append(b, enc...)
		}
	}
	return s.send(typ, b)
}

// eventHead begins an event in the sink's buffer: its type and its sequence number.
func (s *responsesSink) eventHead(typ string) []byte {
	b := jsonenc.AppendString(append(s.buf[:0], `{"type":`...), typ)
	return strconv.AppendInt(append(b, `,"sequence_number":`...), s.seq, 10)
}

// send ends the event b and sends it, numbering the next.
func (s *responsesSink) send(typ string, b []byte) error {
	s.buf = append(b, '}')
	s.seq++
	return s.out.event(typ, s.buf)
}

// responseOut is the response object, its members in OpenAI's order; a struct, as encoding/json encodes one without
// sorting keys or allocating each value (a map did, twice on the way to the first token).
type responseOut struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	CreatedAt         int64          `json:"created_at"`
	Status            string         `json:"status"`
	CompletedAt       *int64         `json:"completed_at"`
	Error             map[string]any `json:"error"`
	IncompleteDetails map[string]any `json:"incomplete_details"`
	Instructions      *string        `json:"instructions"`
	Metadata          map[string]any `json:"metadata"`
	Model             string         `json:"model"`
	Provider          string         `json:"provider,omitempty"`
	Output            []any          `json:"output"`
	ParallelToolCalls bool           `json:"parallel_tool_calls"`
	Temperature       *float64       `json:"temperature"`
	TopP              *float64       `json:"top_p"`
	FrequencyPenalty  *float64       `json:"frequency_penalty"`
	PresencePenalty   *float64       `json:"presence_penalty"`
	ToolChoice        string         `json:"tool_choice"`
	Tools             []any          `json:"tools"`
	Usage             map[string]any `json:"usage"`
}

// response is the response object: its output the items built, its usage the call's once it is over.
func (s *responsesSink) response(status string, r *chat.Result, cost *domain.Micros) *responseOut {
	o := &responseOut{ID: s.head.GenerationID, Object: "response", CreatedAt: s.head.Created, Status: status, Model: s.head.Model,
		Provider: s.head.Provider, Output: make([]any, 0, len(s.items)), ParallelToolCalls: true, ToolChoice: "auto", Tools: []any{}}
	for _, it := range s.items {
		o.Output = append(o.Output, it.object(it.done))
	}
	if status == "incomplete" && r != nil {
		reason := "max_output_tokens"
		if r.FinishReason == "content_filter" {
			reason = "content_filter"
		}
		o.IncompleteDetails = map[string]any{"reason": reason}
	}
	if r != nil && r.Usage != nil && cost != nil {
		u := r.Usage
		o.Usage = map[string]any{"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
			"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			"total_tokens": u.PromptTokens + u.CompletionTokens, "cost": json.RawMessage(cost.Decimal())}
	}
	return o
}

func (s *responsesSink) Finish(r *chat.Result, cost domain.Micros) error {
	if s.native {
		if !s.head.Stream {
			return s.whole(s.completed)
		}
		return s.Flush()
	}
	if err := s.closeOpen(); err != nil {
		return err
	}
	for _, tc := range s.tools.held() {
		if err := s.delta("function_call", tc.ID, tc.Name, tc.Arguments); err != nil {
			return err
		}
		if err := s.closeOpen(); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		kind string
		held *strings.Builder
	}{{"reasoning", &s.after.reasoning}, {"message", &s.after.text}} {
		if t.held.Len() == 0 {
			continue
		}
		if err := s.delta(t.kind, "", "", t.held.String()); err != nil {
			return err
		}
		if err := s.closeOpen(); err != nil {
			return err
		}
	}
	status, event := "completed", "response.completed"
	if r.FinishReason == "length" || r.FinishReason == "content_filter" {
		status, event = "incomplete", "response.incomplete"
	}
	o := s.response(status, r, &cost)
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	s.completed = b
	if !s.head.Stream {
		return s.whole(b)
	}
	if err := s.emit(event, member{"response", json.RawMessage(b)}); err != nil {
		return err
	}
	return s.Flush()
}

// whole sends an answer that was not streamed.
func (s *responsesSink) whole(b []byte) error {
	if b == nil {
		return malformed("Responses", "it ended without its response")
	}
	return s.out.whole(b)
}

// Fail ends a broken stream with response.failed, its response's error saying why.
func (s *responsesSink) Fail(err error) {
	de := &domain.Error{Kind: domain.KindUpstream, Code: "upstream_failed", Msg: "the provider failed mid-stream"}
	errors.As(err, &de)
	r := s.response("failed", nil, nil)
	if s.nativeID != "" {
		r.ID = s.nativeID
	}
	r.Error = map[string]any{"code": de.Code, "message": de.Msg}
	if s.emit("response.failed", member{"response", r}) == nil {
		_ = s.Flush()
	}
}
