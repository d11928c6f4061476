package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/jsonenc"
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
		out[key], _ = json.Marshal(value)
	}
	return out
}

// Refusals of a preset the request may not use.
var (
	ErrPresetDisabled = domain.E(domain.KindForbidden, "preset_disabled", "the preset is disabled")
	ErrPresetArchived = domain.E(domain.KindForbidden, "preset_archived", "the preset is archived")
	ErrNoVersion      = domain.E(domain.KindInvalid, "preset_has_no_version", "the preset has no designated version")
)

// UnderPreset lays the request over a preset version's configuration: each field the request sets wins, the
// others come from the preset; the preset's system prompt goes first unless the request has a system (or
// developer) message of its own. model and models are one setting, the models a call may use in order: when the
// request names any, the preset's are left out. A preset that is not active is refused.
func (b Body) UnderPreset(p preset.Preset, v *preset.Version, ref PresetRef) (Body, error) {
	switch {
	case p.Status == preset.Disabled:
		return b, ErrPresetDisabled.WithMsg(fmt.Sprintf("%s: preset %q is disabled", ref.Field, p.Slug)).With("field", ref.Field)
	case p.Status == preset.Archived:
		return b, ErrPresetArchived.WithMsg(fmt.Sprintf("%s: preset %q is archived", ref.Field, p.Slug)).With("field", ref.Field)
	case v == nil:
		return b, ErrNoVersion.WithMsg(fmt.Sprintf("%s: preset %q has no designated version", ref.Field, p.Slug)).With("field", ref.Field)
	}
	out := make(Body, len(b)+len(v.Config)+1)
	ownModels := !isNull(b["model"]) || !isNull(b["models"])
	for k, val := range v.Config {
		if ownModels && (k == "model" || k == "models") {
			continue
		}
		raw, err := json.Marshal(val)
		if err != nil {
			return b, fmt.Errorf("preset %s version %d: %w", p.Slug, v.Number, err)
		}
		out[k] = raw
	}
	for k, val := range b {
		if !isNull(val) {
			out[k] = val
		}
	}
	if v.SystemPrompt == nil || *v.SystemPrompt == "" {
		return out, nil
	}
	msgs := bytes.TrimSpace(b["messages"])
	if own, ok := systemOf(msgs); own || !ok {
		return out, nil // a system of its own, or messages Parse names what is wrong with
	}
	system, _ := json.Marshal(map[string]string{"role": "system", "content": *v.SystemPrompt})
	merged := append([]byte{'['}, system...)
	if msgs[0] == '[' { // or null
		if inner := bytes.TrimSpace(msgs[1 : len(msgs)-1]); len(inner) > 0 {
			merged = append(append(merged, ','), inner...)
		}
	}
	out["messages"] = append(merged, ']')
	return out, nil
}

// systemOf reads the request's messages, an array of objects (or null), for a message whose role is system or
// developer, as Parse reads a role (a key given twice: the last), and says whether they are such an array at all.
// They are read over, not decoded: decoding every message into a map, each to be encoded again, made a 10 MiB
// array of {} cost 1.2 GB before Parse refused it for its length.
func systemOf(msgs []byte) (own, ok bool) {
	if len(msgs) == 0 {
		return false, false
	}
	s := jsonenc.NewScanner(msgs)
	err := s.Array(func(int) error {
		if own {
			return s.Skip()
		}
		if s.Null() {
			return nil
		}
		var role string
		err := s.Object(func(key []byte) error {
			if !jsonenc.Is(key, "role") {
				return s.Skip()
			}
			role = ""
			if s.Peek() == '"' {
				return s.Str(&role)
			}
			return s.Skip()
		})
		own = role == "system" || role == "developer"
		return err
	})
	return own, err == nil && s.End()
}

// CheckConfig refuses a chat preset's configuration that no call could use (max_tokens "x", a models list of
// four), naming the field, when it is saved rather than at every call made with it: the configuration is
// parsed as a request's fields would be, beside a stand-in message and, when it names none, a stand-in model.
func CheckConfig(config map[string]any) error {
	b := Body{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`[{"role":"user","content":"m"}]`)}
	for k, v := range config {
		raw, err := json.Marshal(v)
		if err != nil {
			return domain.Invalid(k, "must be JSON")
		}
		b[k] = raw
	}
	_, err := Parse(b)
	return err
}
