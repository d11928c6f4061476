package preset

import (
	"fmt"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
)

// Source is the kind of inference request a preset version is made from.
type Source string

const (
	ChatCompletions Source = "chat/completions"
	Messages        Source = "messages"
	Responses       Source = "responses"
)

// requestOnly are keys that describe one request rather than a configuration: never kept in a preset.
var requestOnly = map[Source][]string{
	ChatCompletions: {"messages", "prompt", "stream", "stream_options", "user", "session_id", "trace"},
	Messages:        {"messages", "system", "stream", "metadata", "user", "session_id", "trace"},
	Responses: {"input", "instructions", "prompt", "stream", "store", "background", "previous_response_id",
		"conversation", "user", "session_id", "trace"},
}

// ConfigFrom keeps the configuration of an inference request body: model, sampling parameters, token limits,
// tools, provider preferences and any other key that is not request-only. The system prompt comes from the first
// system message (chat), "system" (messages) or "instructions" (responses). model must be a string and
// temperature a number from 0 to 2 when present.
func ConfigFrom(src Source, body map[string]any) (map[string]any, *string, error) {
	drop, ok := requestOnly[src]
	if !ok {
		return nil, nil, domain.Invalid("source", "unknown request kind")
	}
	config := make(map[string]any, len(body))
	for k, v := range body {
		config[k] = v
	}
	for _, k := range drop {
		delete(config, k)
	}
	if m, ok := config["model"]; ok {
		if _, ok := m.(string); !ok {
			return nil, nil, domain.Invalid("model", "must be a string")
		}
	}
	if t, ok := config["temperature"]; ok {
		f, ok := number(t)
		if !ok || f < 0 || f > 2 {
			return nil, nil, domain.Invalid("temperature", "must be a number from 0 to 2")
		}
	}
	prompt, err := systemPrompt(src, body)
	return config, prompt, err
}

// number reads a decoded JSON number, whichever way the decoder represents it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func systemPrompt(src Source, body map[string]any) (*string, error) {
	switch src {
	case ChatCompletions:
		msgs, ok := body["messages"].([]any)
		if body["messages"] != nil && !ok {
			return nil, domain.Invalid("messages", "must be an array")
		}
		for i, m := range msgs {
			if mm, ok := m.(map[string]any); ok && (mm["role"] == "system" || mm["role"] == "developer") {
				return text(fmt.Sprintf("messages[%d].content", i), mm["content"])
			}
		}
	case Messages:
		return text("system", body["system"])
	case Responses:
		return text("instructions", body["instructions"])
	}
	return nil, nil
}

// text reads a prompt given as a string or as an array of {type: "text", text} parts.
func text(field string, v any) (*string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &t, nil
	case []any:
		var parts []string
		for _, p := range t {
			pm, ok := p.(map[string]any)
			s, isText := pm["text"].(string)
			if !ok || !isText {
				return nil, domain.Invalid(field, "must be a string or an array of text parts")
			}
			parts = append(parts, s)
		}
		s := strings.Join(parts, "\n")
		return &s, nil
	}
	return nil, domain.Invalid(field, "must be a string or an array of text parts")
}
