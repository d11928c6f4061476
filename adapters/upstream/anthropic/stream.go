package anthropic

import (
	"io"
	"net/http"

	gojson "github.com/goccy/go-json"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain/chat"
)

// event is one event of the Messages API's stream: message_start, content_block_start / _delta / _stop,
// message_delta, message_stop, ping, error.
type event struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// usage is Anthropic's count: the prompt is its input plus what was written to and read from the cache.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// stream reads the Messages API's events and yields OpenAI-shaped chunks: text and thinking deltas as content
// and reasoning, tool_use blocks as tool calls (numbered among the tool calls, not among all blocks), the stop
// reason when message_delta brings it, and the usage at message_stop.
type stream struct {
	sse    *upstream.SSE
	status int
	// tools maps a tool_use block's index to its tool call's.
	tools   map[int]int
	usage   chat.Usage
	stopped bool
}

func newStream(body io.Reader, status int) *stream {
	return &stream{sse: upstream.NewSSE(body), status: status, tools: map[int]int{}}
}

func (s *stream) Next() (chat.Chunk, error) {
	if s.stopped {
		return chat.Chunk{}, io.EOF
	}
	for {
		_, data, err := s.sse.Next()
		if err != nil {
			return chat.Chunk{}, upstream.Broke(err, s.status)
		}
		var ev event
		if err := gojson.Unmarshal(data, &ev); err != nil {
			return chat.Chunk{}, upstream.BadEvent(data, s.status, err)
		}
		var out chat.Chunk
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				s.count(ev.Message.Usage)
			}
		case "content_block_start":
			if b := ev.ContentBlock; b != nil {
				switch b.Type {
				case "tool_use":
					i := len(s.tools)
					s.tools[ev.Index] = i
					out.ToolCalls = []chat.ToolCallDelta{{Index: i, ID: b.ID, Name: b.Name}}
				case "text":
					out.Content = b.Text
				}
			}
		case "content_block_delta":
			if d := ev.Delta; d != nil {
				switch d.Type {
				case "text_delta":
					out.Content = d.Text
				case "thinking_delta":
					out.Reasoning = d.Thinking
				case "input_json_delta":
					if i, ok := s.tools[ev.Index]; ok && d.PartialJSON != "" {
						out.ToolCalls = []chat.ToolCallDelta{{Index: i, Arguments: d.PartialJSON}}
					}
				}
			}
		case "message_delta":
			if ev.Usage != nil {
				s.count(*ev.Usage)
			}
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				out.FinishReason, out.NativeFinishReason = chat.Finish(ev.Delta.StopReason), ev.Delta.StopReason
			}
		case "message_stop":
			s.stopped = true
			s.sse.Close()
			u := s.usage
			return chat.Chunk{Usage: &u}, nil
		case "error":
			return chat.Chunk{}, s.failed(ev, data)
		}
		if !out.Empty() {
			return out, nil
		}
		// ping, content_block_stop, and event types added later (Anthropic says to ignore them)
	}
}

// count takes the usage an event reports: message_start has the input, message_delta the output so far (and,
// from some models, the input again).
func (s *stream) count(u usage) {
	if u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens > 0 {
		s.usage.PromptTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		s.usage.CachedTokens = u.CacheReadInputTokens
	}
	if u.OutputTokens > 0 {
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
	if ev.Error != nil {
		if st, ok := errorStatus[ev.Error.Type]; ok {
			status = st
		}
		msg = ev.Error.Message
	}
	return upstream.EventFailed(status, msg, data)
}
