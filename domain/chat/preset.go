package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/preset"
)

// PresetRef names a preset a request is made from: its slug, and a version number, or 0 for the designated one.
type PresetRef struct {
	Slug    string
	Version int
	// Field is the request field that named it (model or preset), for errors.
	Field string
}

// presetPrefix marks a preset in a model id: "@preset/<slug>" alone, or "<model>@preset/<slug>".
const presetPrefix = "@preset/"

// Preset finds the preset a request names, if any, and returns the body without the reference: "model":
// "@preset/<slug>" (the model comes from the preset), "model": "<model>@preset/<slug>" (the request's model
// wins), or "preset": "<slug>". A slug may end in "@<n>" to name version n instead of the designated one.
func Preset(b Body) (Body, *PresetRef, error) {
	var model, named string
	if err := field(b, "model", &model); err != nil {
		return b, nil, err
	}
	if err := field(b, "preset", &named); err != nil {
		return b, nil, err
	}
	var ref *PresetRef
	if i := strings.Index(model, presetPrefix); i >= 0 {
		r, err := parseRef("model", model[i+len(presetPrefix):])
		if err != nil {
			return b, nil, err
		}
		ref = &r
		b = b.with("model", model[:i])
	}
	if named != "" {
		r, err := parseRef("preset", strings.TrimPrefix(named, presetPrefix))
		if err != nil {
			return b, nil, err
		}
		if ref != nil && (ref.Slug != r.Slug || ref.Version != r.Version) {
			return b, nil, domain.Invalid("preset", "names another preset than the model does")
		}
		ref = &r
	}
	if ref != nil {
		b = b.with("preset", "")
	}
	return b, ref, nil
}

func parseRef(field, s string) (PresetRef, error) {
	slug, version, versioned := strings.Cut(s, "@")
	r := PresetRef{Slug: slug, Field: field}
	if err := domain.ValidateSlug(field, slug); err != nil {
		return r, domain.Invalid(field, "names a preset as @preset/<slug> or @preset/<slug>@<version>: the slug must be 1 to 64 lowercase letters, digits and hyphens")
	}
	if versioned {
		n, err := strconv.Atoi(version)
		if err != nil || n < 1 || strconv.Itoa(n) != version {
			return r, domain.Invalid(field, fmt.Sprintf("preset version %q must be a positive integer", version))
		}
		r.Version = n
	}
	return r, nil
}

// with returns a copy of b with key set to the string value, or removed when value is empty.
func (b Body) with(key, value string) Body {
	out := make(Body, len(b)+1)
	for k, v := range b {
		out[k] = v
	}
	if value == "" {
		delete(out, key)
	} else {
		out[key], _ = marshal(value)
	}
	return out
}

// marshal is json.Marshal without its escaping of <, > and & (\u003c, six bytes for one): a value the gateway lays
// into a body is sent on as these bytes, the same value to a JSON reader, and the body is held to a bound on its
// bytes, which should count what is sent rather than six times a preset's stored size.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Refusals of a preset the request may not use.
var (
	ErrPresetDisabled = domain.E(domain.KindForbidden, "preset_disabled", "the preset is disabled")
	ErrPresetArchived = domain.E(domain.KindForbidden, "preset_archived", "the preset is archived")
	ErrNoVersion      = domain.E(domain.KindInvalid, "preset_has_no_version", "the preset has no designated version")
)

// UnderPreset lays the request over a preset version's configuration: each field the request sets wins, the
// others come from the preset. model and models are one setting, the models a call may use in order: when the
// request names any, the preset's are left out. A preset that is not active is refused. The version's system
// prompt is returned to be laid once the request is parsed (Request.WithSystem), which alone knows whether it
// will be.
//
// The body so made is held to the bounds the caller's own is held to, as the preset's configuration, saved from
// a body of its own, could make it about twice as large: at most MaxFields fields, and at most maxBytes (the
// server's bound on a body) of fields' names and values (Body.size), the system prompt's counted with them when
// it is laid. Past them it is a 400 naming the field that named the preset (PresetRef.within).
func (b Body) UnderPreset(p preset.Preset, v *preset.Version, ref PresetRef, maxBytes int64) (Body, SystemPrompt, error) {
	switch {
	case p.Status == preset.Disabled:
		return b, SystemPrompt{}, ErrPresetDisabled.WithMsg(fmt.Sprintf("%s: preset %q is disabled", ref.Field, p.Slug)).With("field", ref.Field)
	case p.Status == preset.Archived:
		return b, SystemPrompt{}, ErrPresetArchived.WithMsg(fmt.Sprintf("%s: preset %q is archived", ref.Field, p.Slug)).With("field", ref.Field)
	case v == nil:
		return b, SystemPrompt{}, ErrNoVersion.WithMsg(fmt.Sprintf("%s: preset %q has no designated version", ref.Field, p.Slug)).With("field", ref.Field)
	}
	out := make(Body, len(b)+len(v.Config)+1)
	ownModels := !isNull(b["model"]) || !isNull(b["models"])
	for k, val := range v.Config {
		if ownModels && (k == "model" || k == "models") {
			continue
		}
		raw, err := marshal(val)
		if err != nil {
			return b, SystemPrompt{}, fmt.Errorf("preset %s version %d: %w", p.Slug, v.Number, err)
		}
		out[k] = raw
	}
	for k, val := range b {
		if !isNull(val) {
			out[k] = val
		}
	}
	if err := ref.within("fields", int64(len(out)), MaxFields); err != nil {
		return b, SystemPrompt{}, err
	}
	size := out.size()
	if err := ref.within("bytes", size, maxBytes); err != nil {
		return b, SystemPrompt{}, err
	}
	system := SystemPrompt{Preset: ref, Size: size, MaxBytes: maxBytes}
	if v.SystemPrompt != nil {
		system.Text = *v.SystemPrompt
	}
	return out, system, nil
}

// SystemPrompt is a preset's system prompt as UnderPreset leaves it, to be laid once the request is parsed
// (Request.WithSystem), with what holding the request so made to the bounds then takes.
type SystemPrompt struct {
	Text string
	// Preset is the preset it comes from, which the errors name as UnderPreset's do.
	Preset PresetRef
	// Size is the bytes of the fields' names and values of the body laid over the preset, and MaxBytes their
	// bound: the prompt, when laid, counts with them.
	Size, MaxBytes int64
}

// within is nil when n, a count of unit (fields, messages, bytes) of a request laid over the preset, is at most
// bound, the caller's own request's, and past it the 400 that every such bound gives: it names the field that
// named the preset, says that the preset and the request together go past, and gives the bound in metadata as
// max_<unit>.
func (ref PresetRef) within(unit string, n, bound int64) error {
	if n <= bound {
		return nil
	}
	return domain.Invalid(ref.Field, fmt.Sprintf("preset %q and the request have more than %d %s together", ref.Slug, bound,
		unit)).With("max_"+unit, bound)
}

// size is the bytes of b's fields' names and values: what a body holding them is at least, so that a caller's own
// body within a bound on its bytes is within it by this count too.
func (b Body) size() int64 {
	var n int64
	for k, v := range b {
		n += int64(len(k) + len(v))
	}
	return n
}

// CheckConfig refuses a chat preset's configuration that no call could use (max_tokens "x", a models list of
// four), naming the field, when it is saved rather than at every call made with it: the configuration is
// parsed as a request's fields would be, beside a stand-in message and, when it names none, a stand-in model.
func CheckConfig(config map[string]any) error {
	b := Body{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"m"}]`)}
	for k, v := range config {
		raw, err := marshal(v)
		if err != nil {
			return domain.Invalid(k, "must be JSON")
		}
		b[k] = raw
	}
	_, err := Parse(b)
	return err
}
