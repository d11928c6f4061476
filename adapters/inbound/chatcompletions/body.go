// Package chatcompletions is OpenAI's chat completions request body (POST /chat/completions), as the gateway reads
// it: counted on its bytes, decoded by encoding/json into its fields and then into the domain's chat.Request, laid
// over a preset, and, for a preset saved from one, checked as a call would read it.
package chatcompletions

import (
	"encoding/json"
	"slices"

	"github.com/switchboard-ai/switchboard/adapters/inbound"
	"github.com/switchboard-ai/switchboard/domain"
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
	"messages": {Items: chat.MaxMessages, Refuse: func(string, bool) error { return chat.TooManyMessages("messages") }},
	"messages[].content": {Items: chat.MaxParts, Total: chat.MaxTotalParts, Refuse: func(path string, total bool) error {
		if total {
			return chat.TooManyParts(path)
		}
		return chat.BadContent(path)
	}},
	"messages[].tool_calls": {Items: chat.MaxToolCalls, Refuse: func(path string, _ bool) error { return chat.TooManyToolCalls(path) }},
	"tools":                 {Items: chat.MaxTools, Refuse: func(string, bool) error { return chat.TooManyTools("tools") }},
	"stop":                  {Items: chat.MaxStops, Refuse: func(string, bool) error { return chat.TooManyStops("stop") }},
	"models":                {Items: chat.MaxModels, Refuse: func(string, bool) error { return chat.TooManyModels("models") }},
	"provider":              {Free: true},
})

// Decode reads body, a chat completions request body: its lists counted first (a 400 naming the first past its
// bound), then its fields decoded (a 400 saying where it is not a JSON object).
func Decode(body []byte) (*Body, error) {
	if err := limits.Check(body); err != nil {
		return nil, err
	}
	f, err := inbound.DecodeFields(body)
	if err != nil {
		return nil, err
	}
	return &Body{fields: f}, nil
}

// Preset is the preset the body names (chat.PresetOf: its model and preset fields), nil when none; the reference
// leaves the body.
func (b *Body) Preset() (*chat.PresetRef, error) {
	var model, named string
	if err := inbound.Field(b.fields, "model", &model); err != nil {
		return nil, err
	}
	if err := inbound.Field(b.fields, "preset", &named); err != nil {
		return nil, err
	}
	own, ref, err := chat.PresetOf(model, named)
	if err != nil || ref == nil {
		return nil, err
	}
	if own != model { // the model named it: the model it names with it, if any, stays
		b.fields.Set("model", own)
	}
	delete(b.fields, "preset")
	return ref, nil
}

// UnderPreset lays the body over a preset version's configuration: each field the body sets wins, the others come
// from the configuration. model and models are one setting, the models a call may use in order: when the body
// names any, the configuration's are left out. The body so made is held to chat.MaxFields fields and maxBytes of
// fields' names and values (inbound.Fields.Under).
func (b *Body) UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error) {
	_, model := b.fields.Present("model")
	_, models := b.fields.Present("models")
	own := model || models
	return b.fields.Under(config, func(k string) bool { return own && (k == "model" || k == "models") }, ref, chat.MaxFields, maxBytes)
}

// Request decodes the body into a request held to the domain's rules (chat.Request.Validate).
func (b *Body) Request() (chat.Request, error) { return decode(b.fields) }

// CheckConfig refuses a chat preset's configuration that no call could use (max_tokens "x", a models list of
// four), naming the field, when it is saved rather than at every call made with it: the configuration is read as a
// request's fields would be, beside a stand-in message and, when it names none, a stand-in model.
func CheckConfig(config map[string]any) error {
	f := inbound.Fields{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"m"}]`)}
	for k, v := range config {
		raw, err := inbound.Marshal(v)
		if err != nil {
			return domain.Invalid(k, "must be JSON")
		}
		f[k] = raw
	}
	_, err := decode(f)
	return err
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

// extra are the fields sent on as they came (chat.Request.Extra): all but gatewayFields. A field that names one the
// gateway reads in another case ("MODEL", "Stream", "ſtream", whose ſ folds to s) or before a NUL is refused,
// naming it as sent: the gateway reads its fields by their names only, but an upstream that decodes as
// encoding/json does (Ollama, many proxies) matches keys without regard to case, and takes the last. Sent on, such
// a field would have the upstream serve another model than the one routed and priced, stream under a call that
// does not, forward the end-user id the gateway keeps, or take a limit or a choice count the call's budget was not
// reserved for.
func extra(f inbound.Fields) (map[string]domain.Opaque, error) {
	if err := f.FirstSpelled(gatewayFields, checkedFields); err != nil {
		return nil, err
	}
	var out map[string]domain.Opaque
	for k, v := range f {
		if slices.Contains(gatewayFields, k) {
			continue
		}
		if out == nil {
			out = make(map[string]domain.Opaque, len(f))
		}
		out[k] = domain.Opaque(v)
	}
	return out, nil
}

// checkExtra holds the fields sent on as they came to being UTF-8 (domain.CheckOpaque): a string the gateway
// decodes itself is mended by encoding/json, but these go as their bytes.
func checkExtra(extra map[string]domain.Opaque) error {
	for k, v := range extra {
		if err := domain.CheckOpaque(k, v); err != nil {
			return err
		}
	}
	return nil
}
