// Package responses reads OpenAI's Responses API request bodies (POST /responses, and the response.create messages
// of its WebSocket mode) into chat requests: the input items become messages, the instructions a system message
// the gateway laid before them, function tools (and the functions of namespace tools) the request's tools. Every
// field the gateway does not answer to itself is also kept as it came (Extra), for an upstream that speaks the
// Responses API; upstreams that speak only chat get the translation.
package responses

import (
	"encoding/json"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// Body is a Responses request body, decoded into its fields: it names its preset and lays itself over one as
// every format's body does (inbound.Fields.Preset, UnderPreset).
type Body struct{ inbound.Fields }

var _ ports.ChatBody = (*Body)(nil)

// limits bound the body's lists before it is decoded, with the bounds of a chat request's: input items as
// messages, their content parts as parts.
var limits = inbound.NewLimits(chat.MaxFields, map[string]inbound.Limit{
	"input":           {Items: chat.MaxMessages, Refuse: func(string, bool) error { return chat.TooManyMessages("input") }},
	"input[].content": inbound.ContentLimit,
	"tools":           inbound.ToolsLimit,
	"tools[].tools":   {Items: chat.MaxTools, Refuse: func(path string, _ bool) error { return chat.TooManyTools(path) }},
	"models":          inbound.ModelsLimit,
	"provider":        inbound.ProviderLimit,
})

// Decode reads body, a Responses request body: its lists counted first (a 400 naming the first past its bound),
// then its fields decoded (a 400 saying where it is not a JSON object).
func Decode(body []byte) (*Body, error) {
	f, err := limits.Decode(body)
	if err != nil {
		return nil, err
	}
	return &Body{Fields: f}, nil
}

// Request decodes the body into a request held to the domain's rules (chat.Request.Validate).
func (b *Body) Request() (chat.Request, error) { return decode(b.Fields) }

// Take removes field name from the body and returns it, null when absent: the WebSocket mode's envelope (type,
// generate), which is no field of the request.
func (b *Body) Take(name string) json.RawMessage {
	raw := b.Fields[name]
	delete(b.Fields, name)
	return raw
}

// Has reports a field the body sets (not null).
func (b *Body) Has(name string) bool {
	_, ok := b.Fields.Present(name)
	return ok
}

// CheckConfig refuses a Responses preset's configuration that no call could use (max_output_tokens "x"), naming
// the field, when it is saved: the configuration is read as a request's fields would be, beside a stand-in input
// and, when it names none, a stand-in model.
func CheckConfig(config map[string]any) error {
	base := inbound.Fields{"model": json.RawMessage(`"m"`), "input": json.RawMessage(`"m"`)}
	return inbound.CheckConfig(config, base, func(f inbound.Fields) error {
		_, err := decode(f)
		return err
	})
}

// gatewayFields are the fields the gateway answers to itself (model, models, preset, provider, session_id...) or
// rewrites (stream; instructions, written from the system messages the gateway laid before the input, which a
// preset's prompt may be): never sent upstream as they came. user is kept on the record, as chat's is.
var gatewayFields = []string{"model", "models", "preset", "provider", "route", "transforms", "session_id", "user",
	"usage", "plugins", "trace", "stream", "stream_options", "instructions"}

// checkedFields are the other fields the gateway reads: checked and translated for chat upstreams, passed on as
// they came to Responses ones.
var checkedFields = []string{"input", "max_output_tokens", "temperature", "top_p", "tools", "tool_choice", "text",
	"previous_response_id"}

// Set sets field name to raw, a JSON value.
func (b *Body) Set(name string, raw json.RawMessage) { b.Fields[name] = raw }

// Field is field name as it came, nil when absent.
func (b *Body) Field(name string) json.RawMessage { return b.Fields[name] }

// InputItems are the input as a list of items: a string input is one user message.
func (b *Body) InputItems() ([]json.RawMessage, error) {
	raw, ok := b.Fields.Present("input")
	if !ok {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		item, err := inbound.Marshal(map[string]any{"type": "message", "role": "user", "content": text})
		return []json.RawMessage{item}, err
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, domain.Invalid("input", "must be a string or an array of input items")
	}
	return items, nil
}

// Continue lays the items of the conversation before (a response's input and output) ahead of the input, and
// names as previous_response_id what that conversation itself continued (stored: the id its request named, which
// the upstream keeps; nil for none). Without one the request then holds the whole conversation, which every
// upstream can continue; with one, only an upstream that keeps responses can, as a request naming it over HTTP.
func (b *Body) Continue(before []json.RawMessage, stored json.RawMessage) error {
	items, err := b.InputItems()
	if err != nil {
		return err
	}
	all, err := inbound.Marshal(append(before[:len(before):len(before)], items...))
	if err != nil {
		return err
	}
	b.Fields["input"] = all
	if stored == nil {
		delete(b.Fields, "previous_response_id")
	} else {
		b.Fields["previous_response_id"] = stored
	}
	return nil
}
