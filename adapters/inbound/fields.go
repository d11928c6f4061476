package inbound

import (
	"encoding/json"
	"slices"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// Field decodes f[name] into dst when it is present and not null, naming the field when it holds another type.
func Field[T any](f Fields, name string, dst *T) error {
	raw, ok := f.Present(name)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return domain.Invalid(name, "must be "+typeName(dst))
	}
	return nil
}

func typeName(dst any) string {
	switch dst.(type) {
	case *string:
		return "a string"
	case *bool, **bool:
		return "a boolean"
	case **int64:
		return "an integer"
	case **float64:
		return "a number"
	case *[]string:
		return "an array of strings"
	}
	return "an object"
}

// Extra are the body's fields but the gateway's own (gateway), each as it came: what goes on to an upstream of the
// body's format. A field that an upstream decoding as encoding/json does would read as one the gateway reads
// (gateway or checked) but spelled otherwise is refused (FirstSpelled).
func (f Fields) Extra(gateway, checked []string) (map[string]domain.Opaque, error) {
	if err := f.FirstSpelled(gateway, checked); err != nil {
		return nil, err
	}
	var out map[string]domain.Opaque
	for k, v := range f {
		if slices.Contains(gateway, k) {
			continue
		}
		if out == nil {
			out = make(map[string]domain.Opaque, len(f))
		}
		out[k] = domain.Opaque(v)
	}
	return out, nil
}

// CheckExtra holds each value of extra to what a database can store (domain.CheckOpaque), naming its field.
func CheckExtra(extra map[string]domain.Opaque) error {
	for k, v := range extra {
		if err := domain.CheckOpaque(k, v); err != nil {
			return err
		}
	}
	return nil
}

// ProviderField reads the provider object into the options and the routing preferences (Provider).
func (f Fields) ProviderField() (map[string]any, routing.Preferences, error) {
	raw, ok := f.Present("provider")
	if !ok {
		return nil, routing.Preferences{}, nil
	}
	return Provider(raw)
}

// Preset is the preset the body names (chat.PresetOf: its model and preset fields), nil when none; the reference
// leaves the body.
func (f Fields) Preset() (*chat.PresetRef, error) {
	var model, named string
	if err := Field(f, "model", &model); err != nil {
		return nil, err
	}
	if err := Field(f, "preset", &named); err != nil {
		return nil, err
	}
	own, ref, err := chat.PresetOf(model, named)
	if err != nil || ref == nil {
		return nil, err
	}
	if own != model { // the model named it: the model it names with it, if any, stays
		f.Set("model", own)
	}
	delete(f, "preset")
	return ref, nil
}

// UnderPreset lays the body over a preset version's configuration: each field the body sets wins, the others come
// from the configuration. model and models are one setting, the models a call may use in order: when the body
// names any, the configuration's are left out. The body so made is held to chat.MaxFields fields and maxBytes of
// fields' names and values (Under).
func (f *Fields) UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error) {
	_, model := f.Present("model")
	_, models := f.Present("models")
	own := model || models
	return f.Under(config, func(k string) bool { return own && (k == "model" || k == "models") }, ref, chat.MaxFields, maxBytes)
}

// Head starts the request of a body of format: the caller's fields passed on (Extra, but the gateway's own and
// those refused as spelled otherwise), its model and its models list.
func (f Fields) Head(format chat.Format, gateway, checked []string) (chat.Request, error) {
	r := chat.Request{Format: format}
	var err error
	if r.Extra, err = f.Extra(gateway, checked); err != nil {
		return r, err
	}
	if err := Field(f, "model", &r.Model); err != nil {
		return r, err
	}
	return r, Field(f, "models", &r.Models)
}

// WithConfig is standIn (a stand-in request's fields) with a preset configuration's fields laid over it: what a
// format's CheckConfig decodes as a request, to refuse a configuration no call could use when it is saved.
func WithConfig(standIn Fields, config map[string]any) (Fields, error) {
	for k, v := range config {
		raw, err := Marshal(v)
		if err != nil {
			return nil, domain.Invalid(k, "must be JSON")
		}
		standIn[k] = raw
	}
	return standIn, nil
}
