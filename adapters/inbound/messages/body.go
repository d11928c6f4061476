// Package messages is Anthropic's Messages request body (POST /messages), as the gateway reads it: counted on its
// bytes, decoded by encoding/json into its fields and then into the domain's chat.Request, laid over a preset, and,
// for a preset saved from one, checked as a call would read it. An upstream that speaks Messages (anthropic) is sent
// the caller's fields as they came (chat.Request.Extra); the others get the domain's request, translated.
package messages

import (
	"encoding/json"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// Body is a Messages request body: its fields as the caller sent them, until Request decodes them, and the
// caller's headers of the format that go on with them. It is the ports.ChatBody the HTTP adapter hands the chat
// use case.
type Body struct {
	fields  inbound.Fields
	headers map[string]string
}

var _ ports.ChatBody = (*Body)(nil)

// limits are the bounds counted on a body's bytes before it is decoded: its fields, the lists decoded item by item
// (each message, block and tool a struct of its own, the system prompt's blocks), and provider, decoded whole.
var limits = inbound.NewLimits(chat.MaxFields, map[string]inbound.Limit{
	"messages":                     inbound.MessagesLimit,
	"messages[].content":           inbound.ContentLimit,
	"messages[].content[].content": {Items: chat.MaxParts, Refuse: func(path string, _ bool) error { return chat.BadContent(path) }},
	"system":                       {Items: chat.MaxParts, Refuse: func(path string, _ bool) error { return chat.BadContent(path) }},
	"tools":                        inbound.ToolsLimit,
	"stop_sequences":               inbound.StopsLimit("stop_sequences"),
	"models":                       inbound.ModelsLimit,
	"provider":                     inbound.ProviderLimit,
})

// Headers are the request headers of the format that go on to an upstream that speaks it, as Anthropic's gateway
// protocol asks: the API version and the betas the caller turned on.
var Headers = []string{"anthropic-version", "anthropic-beta"}

// Decode reads body, a Messages request body, with header, the caller's request headers (Headers are kept): its
// lists counted first (a 400 naming the first past its bound), then its fields decoded.
func Decode(body []byte, header func(name string) string) (*Body, error) {
	if err := limits.Check(body); err != nil {
		return nil, err
	}
	f, err := inbound.DecodeFields(body)
	if err != nil {
		return nil, err
	}
	b := &Body{fields: f}
	for _, h := range Headers {
		if v := strings.TrimSpace(header(h)); v != "" {
			if b.headers == nil {
				b.headers = map[string]string{}
			}
			b.headers[h] = v
		}
	}
	return b, nil
}

// ForCount readies the body of a count_tokens request, which sets no completion limit: it counts as one of 1.
func (b *Body) ForCount() {
	if _, ok := b.fields.Present("max_tokens"); !ok {
		b.fields["max_tokens"] = json.RawMessage(`1`)
	}
}

// Preset is the preset the body names (inbound.Fields.Preset), nil when none.
func (b *Body) Preset() (*chat.PresetRef, error) { return b.fields.Preset() }

// UnderPreset lays the body over a preset version's configuration (inbound.Fields.UnderPreset).
func (b *Body) UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error) {
	return b.fields.UnderPreset(config, ref, maxBytes)
}

// Request decodes the body into a request held to the domain's rules (chat.Request.Validate).
func (b *Body) Request() (chat.Request, error) {
	r, err := decode(b.fields)
	r.Headers = b.headers
	return r, err
}

// CheckConfig refuses a Messages preset's configuration that no call could use (max_tokens "x"), naming the
// field, when it is saved: it is read as a request's fields would be, beside a stand-in message, model and
// completion limit where it names none.
func CheckConfig(config map[string]any) error {
	base := inbound.Fields{"model": json.RawMessage(`"m"`), "max_tokens": json.RawMessage(`1`),
		"messages": json.RawMessage(`[{"role":"user","content":"m"}]`)}
	return inbound.CheckConfig(config, base, func(f inbound.Fields) error {
		_, err := decode(f)
		return err
	})
}

// gatewayFields are the fields the gateway answers to itself (model, models, preset, provider, session_id...) or
// rewrites (stream: every upstream call streams): never sent upstream as they came.
var gatewayFields = []string{"model", "models", "preset", "provider", "route", "transforms", "session_id", "user",
	"usage", "plugins", "trace", "stream"}

// checkedFields are the other fields the gateway reads: checked (and translated for upstreams of another format),
// then passed on as they came to those that speak Messages.
var checkedFields = []string{"messages", "system", "max_tokens", "temperature", "top_p", "stop_sequences", "tools",
	"tool_choice", "metadata"}
