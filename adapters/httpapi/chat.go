package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// ChatHandler serves POST /chat/completions.
type ChatHandler struct{ chat ports.ChatService }

func NewChatHandler(s ports.ChatService) *ChatHandler { return &ChatHandler{chat: s} }

func (h *ChatHandler) create(c *gin.Context) {
	body, err := readInferenceBody(c.Request.Body, c.Request.ContentLength, chatcompletions.Decode)
	if err != nil {
		writeError(c, err)
		return
	}
	sink := &chatSink{flushWriter: newFlushWriter(c)}
	complete(c, h.chat, body, sink, &sink.flushWriter)
}

// complete runs a chat call of any wire format, its answer going to sink (which writes through w): a call that
// failed before its answer began is answered with the error, in the gateway's envelope; one that broke after has
// ended with its format's error event.
func complete(c *gin.Context, s ports.ChatService, body ports.ChatBody, sink ports.ChatSink, w *flushWriter) {
	id, err := s.Complete(c.Request.Context(), principal(c), body, caller(c), sink)
	switch {
	case err == nil || w.started:
		// a stream that broke has ended with its error event
	default:
		if id != "" {
			c.Header("X-Generation-Id", id)
		}
		writeError(c, err)
	}
}

// readInferenceBody reads an inference request's body whole (readSized), and decodes it in its wire format
// (decode).
func readInferenceBody[B any](r io.Reader, length int64, decode func([]byte) (B, error)) (B, error) {
	raw, err := readSized(r, length)
	if err != nil {
		var none B
		return none, err
	}
	return decode(raw)
}

// readSized reads an inference request's body whole. length is the body's Content-Length (-1 when unknown): the
// body is read into one buffer of its size, where io.ReadAll grew one from 512 bytes, but for one past
// preallocated, which is read into as it comes, so that a Content-Length the body does not live up to holds no more
// memory than its bytes. A read that fails is the caller's error: a body past the server's bound is a 413.
func readSized(r io.Reader, length int64) ([]byte, error) {
	raw, err := readBody(r, make([]byte, 0, min(max(length, 0), preallocated)+1)) // +1: room for the read of its end
	if err != nil {
		return nil, jsonError(err, raw, nil)
	}
	return raw, nil
}

// preallocated bounds the buffer a body's Content-Length sizes before its bytes come.
const preallocated = 64 << 10

// chatSink writes a chat answer in OpenAI's shape: a stream of chat.completion.chunk server-sent events ending
// in data: [DONE], or one chat.completion object.
type chatSink struct {
	flushWriter
	head ports.ChatHead
	// buf is the event being written: the start of every chunk event of the stream, up to its choices (its
	// first prefixLen bytes, appended once: eventPrefix), then the rest of the event. It begins in scratch, which
	// the events of most streams fit.
	buf       []byte
	prefixLen int
	scratch   [512]byte
}

func (s *chatSink) Start(h ports.ChatHead) {
	s.head = h
	s.startAnswer(h)
}

// eventStream and noBuffering are a stream's Content-Type and X-Accel-Buffering: one slice each for every
// stream (which no one writes to), where Header.Set allocated one a call, on its way to the first token.
var eventStream, noBuffering = []string{"text/event-stream"}, []string{"no"}

type chunkOut struct {
	ID       string       `json:"id"`
	Object   string       `json:"object"`
	Created  int64        `json:"created"`
	Model    string       `json:"model"`
	Provider string       `json:"provider,omitempty"`
	Choices  []choiceOut  `json:"choices"`
	Usage    *usageOut    `json:"usage,omitempty"`
	Error    *streamError `json:"error,omitempty"`
}

// streamError is the error of a stream that broke: the clients read code and message.
type streamError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type choiceOut struct {
	Index              int         `json:"index"`
	Delta              *messageOut `json:"delta,omitempty"`
	Message            *messageOut `json:"message,omitempty"`
	FinishReason       *string     `json:"finish_reason"`
	NativeFinishReason *string     `json:"native_finish_reason"`
	Logprobs           any         `json:"logprobs"`
}

type messageOut struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	Reasoning *string       `json:"reasoning,omitempty"`
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

type toolCallOut struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usageOut struct {
	PromptTokens        int64           `json:"prompt_tokens"`
	CompletionTokens    int64           `json:"completion_tokens"`
	TotalTokens         int64           `json:"total_tokens"`
	Cost                json.RawMessage `json:"cost"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (s *chatSink) chunk(choices []choiceOut) chunkOut {
	return chunkOut{ID: s.head.GenerationID, Object: "chat.completion.chunk", Created: s.head.Created, Model: s.head.Model,
		Provider: s.head.Provider, Choices: choices}
}

func (s *chatSink) Chunk(c chat.Chunk) error {
	if !s.head.Stream || c.Empty() {
		return nil // an answer not streamed goes whole at Finish; another format's events are not this one's
	}
	// One event a token, like the upstream's, appended by hand: the shape is fixed, and a reflective encoder
	// (goccy/go-json before) allocated the delta, the choice and the encoded bytes for every token.
	s.buf = append(appendChoice(s.eventPrefix(), c), "]}\n\n"...)
	return s.Write(s.buf)
}

// eventPrefix is buf cut to the start of every chunk event of the stream, up to its choices: its head (id,
// object, created, model, provider, as encoding/json encodes a chunkOut) is appended once per stream, and stays
// at the front of buf for every event after.
func (s *chatSink) eventPrefix() []byte {
	if s.prefixLen == 0 {
		h := s.head
		b := jsonenc.AppendString(append(s.scratch[:0], `data: {"id":`...), h.GenerationID)
		b = strconv.AppendInt(append(b, `,"object":"chat.completion.chunk","created":`...), h.Created, 10)
		b = jsonenc.AppendString(append(b, `,"model":`...), h.Model)
		if h.Provider != "" {
			b = jsonenc.AppendString(append(b, `,"provider":`...), h.Provider)
		}
		s.buf = append(b, `,"choices":[`...)
		s.prefixLen = len(s.buf)
	}
	return s.buf[:s.prefixLen]
}

// usageEvent is the stream's last chunk event: no choices, the usage, appended as encoding/json would encode
// usage(u, cost).
func (s *chatSink) usageEvent(u *chat.Usage, cost domain.Micros) []byte {
	b := strconv.AppendInt(append(s.eventPrefix(), `],"usage":{"prompt_tokens":`...), u.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), u.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"total_tokens":`...), u.PromptTokens+u.CompletionTokens, 10)
	b = append(append(b, `,"cost":`...), cost.Decimal()...)
	b = strconv.AppendInt(append(b, `,"prompt_tokens_details":{"cached_tokens":`...), u.CachedTokens, 10)
	b = strconv.AppendInt(append(b, `},"completion_tokens_details":{"reasoning_tokens":`...), u.ReasoningTokens, 10)
	s.buf = append(b, "}}}\n\n"...)
	return s.buf
}

// appendChoice appends the choice of a chunk event, as encoding/json would encode a choiceOut holding its delta:
// the role, the content (also when empty, unless the chunk carries reasoning or tool calls), the reasoning, the
// tool calls, and the finish reasons (null until the last).
func appendChoice(b []byte, c chat.Chunk) []byte {
	b = append(b, `{"index":0,"delta":{"role":"assistant"`...)
	if c.Content != "" || c.Reasoning == "" && len(c.ToolCalls) == 0 {
		b = jsonenc.AppendString(append(b, `,"content":`...), c.Content)
	}
	if c.Reasoning != "" {
		b = jsonenc.AppendString(append(b, `,"reasoning":`...), c.Reasoning)
	}
	if len(c.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range c.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(append(b, `{"index":`...), int64(tc.Index), 10)
			if tc.ID != "" {
				b = jsonenc.AppendString(append(b, `,"id":`...), tc.ID)
				b = append(b, `,"type":"function"`...)
			}
			b = append(b, `,"function":{`...)
			if tc.Name != "" {
				b = append(jsonenc.AppendString(append(b, `"name":`...), tc.Name), ',')
			}
			b = append(jsonenc.AppendString(append(b, `"arguments":`...), tc.Arguments), "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, "},"...)
	if c.FinishReason != "" {
		b = jsonenc.AppendString(append(b, `"finish_reason":`...), c.FinishReason)
		b = jsonenc.AppendString(append(b, `,"native_finish_reason":`...), c.NativeFinishReason)
	} else {
		b = append(b, `"finish_reason":null,"native_finish_reason":null`...)
	}
	return append(b, `,"logprobs":null}`...)
}

// event writes one server-sent event (in a buffer of its own: buf keeps the stream's prefix).
func (s *chatSink) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.Write(append(append(append(make([]byte, 0, len(b)+len("data: \n\n")), "data: "...), b...), "\n\n"...))
}

func usage(u *chat.Usage, cost domain.Micros) *usageOut {
	out := &usageOut{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, Cost: json.RawMessage(cost.Decimal())}
	out.PromptTokensDetails.CachedTokens, out.CompletionTokensDetails.ReasoningTokens = u.CachedTokens, u.ReasoningTokens
	return out
}

func (s *chatSink) Finish(r *chat.Result, cost domain.Micros) error {
	if s.head.Stream {
		if s.head.IncludeUsage {
			if err := s.Write(s.usageEvent(r.Usage, cost)); err != nil {
				return err
			}
		}
		if err := s.Write(doneEvent); err != nil {
			return err
		}
		return s.Flush()
	}
	content := r.Content.String()
	msg := &messageOut{Role: "assistant", Content: &content}
	if len(r.ToolCalls) > 0 && content == "" {
		msg.Content = nil
	}
	if reasoning := r.Reasoning.String(); reasoning != "" {
		msg.Reasoning = &reasoning
	}
	for _, tc := range r.ToolCalls {
		t := toolCallOut{ID: tc.ID, Type: "function"}
		t.Function.Name, t.Function.Arguments = tc.Name, tc.Arguments
		msg.ToolCalls = append(msg.ToolCalls, t)
	}
	finish, native := r.FinishReason, r.NativeFinishReason
	out := completionOut{ID: s.head.GenerationID, Object: "chat.completion", Created: s.head.Created, Model: s.head.Model,
		Provider: s.head.Provider, Choices: []choiceOut{{Message: msg, FinishReason: &finish, NativeFinishReason: &native}},
		Usage: usage(r.Usage, cost)}
	return s.whole(json.Marshal(out))
}

// doneEvent ends a stream: one slice for every stream (the response copies it), where the conversion of a
// constant allocated one a call.
var doneEvent = []byte("data: [DONE]\n\n")

// completionOut is a whole answer; system_fingerprint is a required key (null here).
type completionOut struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	Provider          string      `json:"provider,omitempty"`
	SystemFingerprint *string     `json:"system_fingerprint"`
	Choices           []choiceOut `json:"choices"`
	Usage             *usageOut   `json:"usage"`
}

// Fail ends a broken stream the way the reference does: a chunk with an error object (which the OpenAI clients
// raise as an error) and finish_reason "error".
func (s *chatSink) Fail(err error) {
	de := &domain.Error{Kind: domain.KindUpstream, Code: "upstream_failed", Msg: "the provider failed mid-stream"}
	errors.As(err, &de)
	finish, empty := "error", ""
	out := s.chunk([]choiceOut{{Delta: &messageOut{Content: &empty}, FinishReason: &finish, NativeFinishReason: &finish}})
	out.Error = &streamError{Code: de.Kind.Status(), Message: de.Msg}
	if s.event(out) == nil {
		_ = s.Flush()
	}
}
