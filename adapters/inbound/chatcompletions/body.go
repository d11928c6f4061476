// Package chatcompletions is OpenAI's chat completions request body (POST /chat/completions), as the gateway reads
// it: counted on its bytes, decoded by encoding/json into its fields and then into the domain's chat.Request, laid
// over a preset, and, for a preset saved from one, checked as a call would read it.
package chatcompletions

import (
	"encoding/json"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// Body is a chat completions request body: its fields as the caller sent them, until Request decodes them. It is
// the ports.ChatBody the HTTP adapter hands the chat use case.
type Body struct{ fields inbound.Fields }

var _ ports.ChatBody = (*Body)(nil)

// limits are the bounds counted on a body's bytes before it is decoded: its fields, the lists of the request that
// are decoded item by item (each message, part and tool call a struct of its own), and provider, which holds
// free-form options decoded whole. Other values are kept as their bytes (fields passed on, a tool's schema, a
// part of a kind the gateway does not read) or are single values.
var limits = inbound.NewLimits(chat.MaxFields, map[string]inbound.Limit{
	"messages":              inbound.MessagesLimit,
	"messages[].content":    inbound.ContentLimit,
	"messages[].tool_calls": {Items: chat.MaxToolCalls, Refuse: func(path string, _ bool) error { return chat.TooManyToolCalls(path) }},
	"tools":                 inbound.ToolsLimit,
	"stop":                  inbound.StopsLimit("stop"),
	"models":                inbound.ModelsLimit,
	"provider":              inbound.ProviderLimit,
})

// Decode reads body, a chat completions request body: its lists counted first (a 400 naming the first past its
// bound), then its fields decoded (a 400 saying where it is not a JSON object).
func Decode(body []byte) (*Body, error) {
	f, err := limits.Decode(body)
	if err != nil {
		return nil, err
	}
	return &Body{fields: f}, nil
}

// Preset is the preset the body names (inbound.Fields.Preset), nil when none; the reference leaves the body.
func (b *Body) Preset() (*chat.PresetRef, error) { return b.fields.Preset() }

// UnderPreset lays the body over a preset version's configuration: each field the body sets wins, the others come
// from the configuration (inbound.Fields.UnderPreset).
func (b *Body) UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error) {
	return b.fields.UnderPreset(config, ref, maxBytes)
}

// Request decodes the body into a request held to the domain's rules (chat.Request.Validate).
func (b *Body) Request() (chat.Request, error) { return decode(b.fields) }

// CheckConfig refuses a chat preset's configuration that no call could use (max_tokens "x", a models list of
// four), naming the field, when it is saved rather than at every call made with it: the configuration is read as a
// request's fields would be, beside a stand-in message and, when it names none, a stand-in model.
func CheckConfig(config map[string]any) error {
	base := inbound.Fields{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"m"}]`)}
	return inbound.CheckConfig(config, base, func(f inbound.Fields) error {
		_, err := decode(f)
		return err
	})
}

// gatewayFields are the fields the gateway answers to itself (model, models, preset, provider, session_id...)
// or rewrites (messages, stream, stream_options): never sent upstream as they came. user, the caller's end-user
// id, is kept on the generation record and, as in the reference, not forwarded to the provider.
var gatewayFields = []string{"model", "models", "preset", "provider", "route", "transforms", "session_id", "user",
	"usage", "plugins", "trace", "stream", "stream_options", "messages"}

// checkedFields are the other fields the gateway reads: checked (and translated for upstreams of another format),
// then passed on as they came to those of this one.
var checkedFields = []string{"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "n", "tools",
	"tool_choice", "response_format"}
