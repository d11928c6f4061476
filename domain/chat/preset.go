package chat

import (
	"fmt"
	"slices"
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

// PresetOf finds the preset a request names, if any, from its model and preset fields ("" when absent), and
// returns the model without the reference: "model": "@preset/<slug>" (the model comes from the preset, "" here),
// "model": "<model>@preset/<slug>" (the request's model wins), or "preset": "<slug>" (or "@preset/<slug>"). A
// slug may end in "@<n>" to name version n instead of the designated one; model and preset may both name one,
// the same.
func PresetOf(model, named string) (string, *PresetRef, error) {
	var ref *PresetRef
	if i := strings.Index(model, presetPrefix); i >= 0 {
		r, err := parseRef("model", model[i+len(presetPrefix):])
		if err != nil {
			return model, nil, err
		}
		ref, model = &r, model[:i]
	}
	if named != "" {
		r, err := parseRef("preset", strings.TrimPrefix(named, presetPrefix))
		if err != nil {
			return model, nil, err
		}
		if ref != nil && (ref.Slug != r.Slug || ref.Version != r.Version) {
			return model, nil, domain.Invalid("preset", "names another preset than the model does")
		}
		ref = &r
	}
	return model, ref, nil
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

// Refusals of a preset the request may not use.
var (
	ErrPresetDisabled = domain.E(domain.KindForbidden, "preset_disabled", "the preset is disabled")
	ErrPresetArchived = domain.E(domain.KindForbidden, "preset_archived", "the preset is archived")
	ErrNoVersion      = domain.E(domain.KindInvalid, "preset_has_no_version", "the preset has no designated version")
)

// Usable refuses a preset a request may not be made from: one that is not active, or has no designated version
// (v, the version the request names or the designated one, nil), naming the field that named it.
func (ref PresetRef) Usable(p preset.Preset, v *preset.Version) error {
	switch {
	case p.Status == preset.Disabled:
		return ErrPresetDisabled.WithMsg(fmt.Sprintf("%s: preset %q is disabled", ref.Field, p.Slug)).With("field", ref.Field)
	case p.Status == preset.Archived:
		return ErrPresetArchived.WithMsg(fmt.Sprintf("%s: preset %q is archived", ref.Field, p.Slug)).With("field", ref.Field)
	case v == nil:
		return ErrNoVersion.WithMsg(fmt.Sprintf("%s: preset %q has no designated version", ref.Field, p.Slug)).With("field", ref.Field)
	}
	return nil
}

// Within is nil when n, a count of unit (fields, messages, bytes) of a request laid over the preset, is at most
// bound, the caller's own request's, and past it the 400 that every such bound gives: it names the field that
// named the preset, says that the preset and the request together go past, and gives the bound in metadata as
// max_<unit>. A request laid over a preset is held to the bounds the caller's own is held to, as the preset's
// configuration, saved from a body of its own, could make it about twice as large.
func (ref PresetRef) Within(unit string, n, bound int64) error {
	if n <= bound {
		return nil
	}
	return domain.Invalid(ref.Field, fmt.Sprintf("preset %q and the request have more than %d %s together", ref.Slug, bound,
		unit)).With("max_"+unit, bound)
}

// SystemPrompt is a preset's system prompt, to be laid once the request is decoded (Request.WithSystem), with what
// holding the request so made to the bounds then takes.
type SystemPrompt struct {
	Text string
	// Preset is the preset it comes from, which the errors name.
	Preset PresetRef
	// Size is the bytes of the fields' names and values of the body laid over the preset, and MaxBytes their
	// bound: the prompt, when laid, counts with them.
	Size, MaxBytes int64
}

// WithSystem lays a preset's system prompt before the messages, unless it is empty or the request has a system
// (or developer) message of its own. It is laid after the request is decoded and validated, so that its errors
// hold the caller's messages as they came, each named at its index in the body the caller sent. When it is laid,
// and only then, the request is held with it to MaxMessages messages and to the bound on a body's bytes: past
// one, it is the 400 that Within gives, naming the field that named the preset.
func (r Request) WithSystem(s SystemPrompt) (Request, error) {
	if s.Text == "" || slices.ContainsFunc(r.Messages, func(m Message) bool { return m.Role == "system" || m.Role == "developer" }) {
		return r, nil
	}
	if err := s.Preset.Within("messages", int64(len(r.Messages))+1, MaxMessages); err != nil {
		return r, err
	}
	if err := s.Preset.Within("bytes", s.Size+int64(len(s.Text)), s.MaxBytes); err != nil {
		return r, err
	}
	system := Message{Role: "system", Content: []Part{{Type: "text", Text: s.Text}}, Text: true}
	r.Messages = append([]Message{system}, r.Messages...)
	r.Prepended++
	r.Rewritten = true
	return r, nil
}
