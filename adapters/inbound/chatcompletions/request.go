package chatcompletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// decode reads the fields into a request, each field decoded by encoding/json into the type it holds (a field of
// another type is a 400 naming it), and holds the request to the domain's rules.
func decode(f inbound.Fields) (chat.Request, error) {
	r := chat.Request{Format: chat.ChatCompletions}
	var err error
	if r.Extra, err = extra(f); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "model", &r.Model); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "models", &r.Models); err != nil {
		return r, err
	}
	raw, ok := f.Present("messages")
	if !ok {
		return r, domain.Invalid("messages", "is required")
	}
	if r.Messages, err = messages(raw); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "stream", &r.Stream); err != nil {
		return r, err
	}
	if r.IncludeUsage, err = includeUsage(f); err != nil {
		return r, err
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		var n *int64
		if err := inbound.Field(f, name, &n); err != nil {
			return r, err
		}
		if n != nil {
			if err := chat.CheckMaxTokens(name, *n); err != nil {
				return r, err
			}
			if r.MaxTokens == nil || *n > *r.MaxTokens { // both are passed on, and an upstream may obey either
				r.MaxTokens = n
			}
		}
	}
	if err := inbound.Field(f, "temperature", &r.Temperature); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "top_p", &r.TopP); err != nil {
		return r, err
	}
	if raw, ok := f.Present("stop"); ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			r.Stop = []string{one}
		} else if json.Unmarshal(raw, &r.Stop) != nil {
			return r, chat.TooManyStops("stop")
		}
	}
	if err := inbound.Field(f, "seed", &r.Seed); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "n", &r.Choices); err != nil {
		return r, err
	}
	if r.Tools, err = tools(f); err != nil {
		return r, err
	}
	for _, choice := range []struct {
		name string
		dst  *domain.Opaque
	}{{"tool_choice", &r.ToolChoice}, {"response_format", &r.ResponseFormat}} {
		if raw, ok := f.Present(choice.name); ok {
			// a string or an object, told by its first byte: the value is JSON, and passed on as it came (the
			// adapters that translate it read it), where decoding an object into an any (a map or a slice for
			// every {} and [] within) made a 10 MiB tool_choice cost 500 MB
			if c := bytes.TrimSpace(raw)[0]; c != '"' && c != '{' {
				return r, domain.Invalid(choice.name, "must be a string or an object")
			}
			*choice.dst = domain.Opaque(raw)
		}
	}
	if err := inbound.Field(f, "user", &r.User); err != nil {
		return r, err
	}
	if err := inbound.Field(f, "session_id", &r.SessionID); err != nil {
		return r, err
	}
	if r.Options, r.Route, err = provider(f); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, checkExtra(r.Extra)
}

// includeUsage reads stream_options, whose include_usage alone the gateway reads: null or absent is false.
func includeUsage(f inbound.Fields) (bool, error) {
	raw, ok := f.Present("stream_options")
	if !ok {
		return false, nil
	}
	var o struct {
		IncludeUsage *bool `json:"include_usage"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "include_usage" {
			return false, domain.Invalid("stream_options.include_usage", "must be a boolean")
		}
		return false, domain.Invalid("stream_options", "must be an object")
	}
	return o.IncludeUsage != nil && *o.IncludeUsage, nil
}

// tools reads the tools, each a function with a name; its schema is kept as it came.
func tools(f inbound.Fields) ([]chat.Tool, error) {
	raw, ok := f.Present("tools")
	if !ok {
		return nil, nil
	}
	var ws []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &ws) != nil {
		return nil, chat.TooManyTools("tools")
	}
	out := make([]chat.Tool, len(ws))
	for i, w := range ws {
		if w.Type != "function" || w.Function == nil || w.Function.Name == "" {
			return nil, domain.Invalid(fmt.Sprintf("tools[%d]", i), `must be {"type": "function", "function": {"name": ...}}`)
		}
		t := chat.Tool{Name: w.Function.Name, Description: w.Function.Description, Strict: w.Function.Strict}
		if !inbound.IsNull(w.Function.Parameters) {
			t.Parameters = domain.Opaque(w.Function.Parameters)
			if err := domain.CheckOpaque(fmt.Sprintf("tools[%d].function.parameters", i), t.Parameters); err != nil {
				return nil, err
			}
		}
		out[i] = t
	}
	return out, nil
}

// provider reads the provider object into the options and the routing preferences (inbound.Provider).
func provider(f inbound.Fields) (map[string]any, routing.Preferences, error) {
	raw, ok := f.Present("provider")
	if !ok {
		return nil, routing.Preferences{}, nil
	}
	return inbound.Provider(raw)
}
