package anthropic

import (
	"bytes"
	"io"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// event is what the gateway reads of one event of the Messages API's stream: message_start, content_block_start /
// _delta / _stop, message_delta, message_stop, ping, error. Each object member is held by value with has*
// saying whether it was there (encoding/json's pointer: a null clears it, a second one reads into the first).
type event struct {
	typ                                              string
	index                                            int64
	message                                          usage // message_start's message.usage
	block                                            block
	delta                                            delta
	usage                                            usage
	err                                              eventError
	hasMessage, hasBlock, hasDelta, hasUsage, hasErr bool
}

// block is a content_block_start's block.
type block struct{ typ, id, name, text string }

// delta is a content_block_delta's delta, or message_delta's (its stop_reason).
type delta struct{ typ, text, partialJSON, thinking, stopReason string }

// eventError is an error event's error.
type eventError struct{ typ, message string }

// decodeEvent reads an event in one pass over its bytes (jsonenc.Scanner), as encoding/json would decode it into
// pointers to structs of those fields: keys matched without regard to case, unknown members skipped (and checked
// to be JSON), a value of the wrong type an error, a null leaving a string or a number as it was and clearing an
// object. goccy/go-json before decoded each event, one a token, by reflection, allocating every object in it.
func decodeEvent(data []byte) (ev event, err error) {
	s := jsonenc.NewScanner(data)
	err = s.Document(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "type"):
			return s.Str(&ev.typ)
		case jsonenc.Is(key, "index"):
			return s.Int(&ev.index)
		case jsonenc.Is(key, "message"):
			return jsonenc.Held(&s, &ev.hasMessage, &ev.message, func(key []byte) error {
				if jsonenc.Is(key, "usage") {
					if s.Null() { // a struct held by value: null leaves it
						return nil
					}
					return readUsage(&s, &ev.message)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "content_block"):
			b := &ev.block
			return jsonenc.Held(&s, &ev.hasBlock, b, func(key []byte) error {
				switch {
				case jsonenc.Is(key, "type"):
					return s.Str(&b.typ)
				case jsonenc.Is(key, "id"):
					return s.Str(&b.id)
				case jsonenc.Is(key, "name"):
					return s.Str(&b.name)
				case jsonenc.Is(key, "text"):
					return s.Str(&b.text)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "delta"):
			d := &ev.delta
			return jsonenc.Held(&s, &ev.hasDelta, d, func(key []byte) error {
				switch {
				case jsonenc.Is(key, "type"):
					return s.Str(&d.typ)
				case jsonenc.Is(key, "text"):
					return s.Str(&d.text)
				case jsonenc.Is(key, "partial_json"):
					return s.Str(&d.partialJSON)
				case jsonenc.Is(key, "thinking"):
					return s.Str(&d.thinking)
				case jsonenc.Is(key, "stop_reason"):
					return s.Str(&d.stopReason)
				}
				return s.Skip()
			})
		case jsonenc.Is(key, "usage"):
			if s.Null() {
				ev.hasUsage, ev.usage = false, usage{}
				return nil
			}
			ev.hasUsage = true
			return readUsage(&s, &ev.usage)
		case jsonenc.Is(key, "error"):
			e := &ev.err
			return jsonenc.Held(&s, &ev.hasErr, e, func(key []byte) error {
				switch {
				case jsonenc.Is(key, "type"):
					return s.Str(&e.typ)
				case jsonenc.Is(key, "message"):
					return s.Str(&e.message)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
	return ev, err
}

// readUsage reads a usage object into u.
func readUsage(s *jsonenc.Scanner, u *usage) error {
	return s.Object(func(key []byte) error {
		switch {
		case jsonenc.Is(key, "input_tokens"):
			return s.Int(&u.InputTokens)
		case jsonenc.Is(key, "output_tokens"):
			return s.Int(&u.OutputTokens)
		case jsonenc.Is(key, "cache_creation_input_tokens"):
			return s.Int(&u.CacheCreationInputTokens)
		case jsonenc.Is(key, "cache_read_input_tokens"):
			return s.Int(&u.CacheReadInputTokens)
		case jsonenc.Is(key, "cache_creation"):
			if s.Null() { // as encoding/json clears a pointer
				u.split, u.Cache5m, u.Cache1h = false, 0, 0
				return nil
			}
			u.split = true
			return s.Object(func(key []byte) error {
				switch {
				case jsonenc.Is(key, "ephemeral_5m_input_tokens"):
					return s.Int(&u.Cache5m)
				case jsonenc.Is(key, "ephemeral_1h_input_tokens"):
					return s.Int(&u.Cache1h)
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}

// usage is Anthropic's count: the prompt is its input plus what was written to and read from the cache. The
// writes are split by their duration in cache_creation (split), when it is there.
type usage struct {
	InputTokens, OutputTokens                      int64
	CacheCreationInputTokens, CacheReadInputTokens int64
	Cache5m, Cache1h                               int64
	split                                          bool
}

// stream reads the Messages API's events and yields OpenAI-shaped chunks: text and thinking deltas as content
// and reasoning, tool_use blocks as tool calls (numbered among the tool calls, not among all blocks), the stop
// reason when message_delta brings it, and the usage at message_stop.
type stream struct {
	sse    *upstream.SSE
	status int
	// tools maps a tool_use block's index to its tool call's.
	tools   map[int64]int
	usage   chat.Usage
	stopped bool
	// finished says message_delta brought the stop reason: the answer is whole, and a body that ends before
	// message_stop ends it, as OpenAI's stream ends without its [DONE] (openai.ChatStream).
	finished bool
	// native puts every event, as it came, in the chunk that reads it (chat.Chunk.Native): the caller speaks
	// Messages too, and gets the stream event for event.
	native bool
}

func newStream(body io.Reader, status int, native bool) *stream {
	return &stream{sse: upstream.NewSSE(body), status: status, tools: map[int64]int{}, native: native}
}

// nativeEvent is an event as it came: its name and its data, one data line each.
func nativeEvent(name string, data []byte) domain.Opaque {
	b := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b = append(append(append(b, "data: "...), line...), '\n')
	}
	return append(b, '\n')
}

func (s *stream) Next() (chat.Chunk, error) {
	if s.stopped {
		return chat.Chunk{}, io.EOF
	}
	for {
		name, data, err := s.sse.Next()
		if err == io.EOF && s.finished {
			return s.stop(), nil
		}
		if err != nil {
			return chat.Chunk{}, upstream.Broke(err, s.status)
		}
		ev, err := decodeEvent(data)
		if err != nil {
			return chat.Chunk{}, upstream.BadEvent(data, s.status, err)
		}
		var out chat.Chunk
		if s.native && ev.typ != "error" { // an error event is the sink's to write, in its words
			out.Native = nativeEvent(name, data)
		}
		switch ev.typ {
		case "message_start":
			if ev.hasMessage {
				s.count(ev.message)
			}
		case "content_block_start":
			if b := ev.block; ev.hasBlock {
				switch b.typ {
				case "tool_use":
					i := len(s.tools)
					s.tools[ev.index] = i
					out.ToolCalls = []chat.ToolCallDelta{{Index: i, ID: b.id, Name: b.name}}
				case "text":
					out.Content = b.text
				}
			}
		case "content_block_delta":
			if d := ev.delta; ev.hasDelta {
				switch d.typ {
				case "text_delta":
					out.Content = d.text
				case "thinking_delta":
					out.Reasoning = d.thinking
				case "input_json_delta":
					if i, ok := s.tools[ev.index]; ok && d.partialJSON != "" {
						out.ToolCalls = []chat.ToolCallDelta{{Index: i, Arguments: d.partialJSON}}
					}
				}
			}
		case "message_delta":
			if ev.hasUsage {
				s.count(ev.usage)
			}
			if ev.hasDelta && ev.delta.stopReason != "" {
				out.FinishReason, out.NativeFinishReason = chat.Finish(ev.delta.stopReason), ev.delta.stopReason
				s.finished = true
			}
		case "message_stop":
			c := s.stop()
			c.Native = out.Native
			return c, nil
		case "error":
			return chat.Chunk{}, s.failed(ev, data)
		}
		if !out.Empty() || out.Native != nil {
			return out, nil
		}
		// ping, content_block_stop, and event types added later (Anthropic says to ignore them)
	}
}

// stop ends the stream with the usage counted: at message_stop, or at the body's end after the stop reason.
func (s *stream) stop() chat.Chunk {
	s.stopped = true
	s.sse.Close()
	u := s.usage
	return chat.Chunk{Usage: &u}
}

// count takes the usage an event reports: message_start has the input, message_delta the output so far (and,
// from some models, the input again). A count that is not 0 is taken, a negative one too: the usage is then not
// taken at all (chat.Result), as the sum of counts one of which is out of bounds (chat.SumTokens).
func (s *stream) count(u usage) {
	if prompt := chat.SumTokens(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens); prompt != 0 {
		s.usage.PromptTokens, s.usage.CachedTokens = prompt, u.CacheReadInputTokens
		// writes of unknown duration are 5-minute ones, Anthropic's default
		s.usage.CacheWriteTokens, s.usage.CacheWrite1hTokens = u.CacheCreationInputTokens, 0
		if u.split {
			s.usage.CacheWriteTokens, s.usage.CacheWrite1hTokens = u.Cache5m, u.Cache1h
		}
	}
	if u.OutputTokens != 0 {
		s.usage.CompletionTokens = u.OutputTokens
	}
}

// errorStatus is the status Anthropic answers each error type with, so that an error event mid-stream is
// classified like the same error before it.
var errorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"overloaded_error":      529,
}

func (s *stream) failed(ev event, data []byte) error {
	status, msg := http.StatusInternalServerError, ""
	if ev.hasErr {
		if st, ok := errorStatus[ev.err.typ]; ok {
			status = st
		}
		msg = ev.err.message
	}
	return upstream.EventFailed(status, msg, data)
}
