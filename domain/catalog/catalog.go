// Package catalog is the set of models the gateway serves, each with its upstream endpoints in order of
// preference and their prices.
package catalog

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
)

type Modality string

const (
	TTS   Modality = "tts"
	Video Modality = "video"
	Chat  Modality = "chat"
	// Embeddings turns texts into vectors, priced per input token (Pricing.PerMillionPromptTokens).
	Embeddings Modality = "embeddings"
)

// CountsTokens reports a modality whose calls use tokens, counted against a key's token limits: chat and
// embeddings.
func (m Modality) CountsTokens() bool { return m == Chat || m == Embeddings }

// Modalities are every modality, in the order messages list them.
var Modalities = []Modality{TTS, Video, Chat, Embeddings}

// names are how messages call the modalities.
var names = map[Modality]string{TTS: "text-to-speech", Video: "video", Chat: "chat", Embeddings: "embeddings"}

// Pricing is what an endpoint costs; any price may be absent.
type Pricing struct {
	PerMillionChars *domain.Micros
	PerSecond       *domain.Micros
	// Chat is priced per million tokens of prompt and of completion.
	PerMillionPromptTokens     *domain.Micros
	PerMillionCompletionTokens *domain.Micros
	// Prompt caching prices the prompt's tokens read from the provider's cache, and those written to it for 5
	// minutes and for an hour, each apart; an absent one is the price of the prompt (a 1-hour write: of a 5-minute
	// one, when that is set).
	PerMillionCacheReadTokens, PerMillionCacheWriteTokens, PerMillionCacheWrite1hTokens *domain.Micros
	// Video is priced per second of video (PerSecond), at PerSecondWithAudio when the video has sound, and at
	// the rates of its resolution where Resolutions has them (over the two above).
	PerSecondWithAudio *domain.Micros
	Resolutions        *ResolutionRates // a pointer, so that an Endpoint stays comparable
}

// ResolutionRates price a second of video by resolution ("720p").
type ResolutionRates map[string]SecondRates

// Level is a price to compare endpoints of one model by (provider.sort "price", the :floor variant): the sum of
// its prices per unit that are set, which all the endpoints of a model share (tokens, characters, seconds).
func (p Pricing) Level() domain.Micros {
	var sum domain.Micros
	for _, v := range []*domain.Micros{p.PerMillionPromptTokens, p.PerMillionCompletionTokens, p.PerMillionChars, p.PerSecond,
		p.PerSecondWithAudio} {
		if v != nil {
			sum += *v
		}
	}
	return sum
}

// Rates returns the rates of a resolution, when set.
func (p Pricing) Rates(resolution string) (SecondRates, bool) {
	if p.Resolutions == nil {
		return SecondRates{}, false
	}
	r, ok := (*p.Resolutions)[resolution]
	return r, ok
}

// SecondRates are the prices of a second of video at one resolution: silent, and with sound.
type SecondRates struct {
	PerSecond, PerSecondWithAudio *domain.Micros
}

// VideoCaps is what a video model takes, as configured: a list left empty (a field left nil) says nothing, and
// the provider decides. The defaults are what the provider makes when a request does not say, which the job is
// priced at.
type VideoCaps struct {
	Durations    []int
	Resolutions  []string
	AspectRatios []string
	Sizes        []string
	FrameImages  []string // first_frame, last_frame
	// GenerateAudio and Seed say whether the model can make sound and takes a seed.
	GenerateAudio, Seed *bool
	DefaultDuration     int
	DefaultResolution   string
	DefaultAudio        bool
}

// Endpoint is one upstream that serves a model.
type Endpoint struct {
	Provider      string // slug of a configured provider
	UpstreamModel string
	Pricing       Pricing
	// Rank orders the model's endpoints when a call names no sort, lowest first (by default its place in the
	// list, from 1); endpoints of one rank share the calls by Weight (at least 1).
	Rank, Weight int
	// Parameters are the request parameters the endpoint declares it supports (provider.require_parameters keeps
	// the endpoints that support every one a request sets); nil declares none, and is taken to support them all.
	Parameters *[]string // a pointer, so that an Endpoint stays comparable
	// Account is which of the provider's accounts (API keys) a call goes through: "" for its first, as the
	// pipeline sets it when it balances a provider's accounts (Client).
	Account string
}

// Client is the key of the endpoint's client in the provider registry (ports.Providers): the provider's slug for
// its first account, its account's key for the others.
func (e Endpoint) Client() string {
	if e.Account != "" {
		return e.Account
	}
	return e.Provider
}

// Upstream is the endpoint's upstream, whatever the account: what the gateway measures the health of.
func (e Endpoint) Upstream() Upstream { return Upstream{Provider: e.Provider, Model: e.UpstreamModel} }

// Upstream names one provider's model: an endpoint, without a catalog model or an account.
type Upstream struct{ Provider, Model string }

// ID is how records name it: provider/upstream_model, or the provider alone for a local one.
func (u Upstream) ID() string {
	if u.Model == "" {
		return u.Provider
	}
	return u.Provider + "/" + u.Model
}

// Supports reports whether the endpoint declares every parameter (or declares none).
func (e Endpoint) Supports(params []string) bool {
	if e.Parameters == nil {
		return true
	}
	for _, p := range params {
		if !slices.Contains(*e.Parameters, p) {
			return false
		}
	}
	return true
}

type Model struct {
	ID string
	// Aliases are other names a request may call the model by (the names a client sends, such as Claude Code's
	// claude-sonnet-4-5-20250929), resolved to it before routing.
	Aliases   []string
	Modality  Modality
	Endpoints []Endpoint
	// Video is what a video model takes, when the configuration says.
	Video *VideoCaps
}

var (
	ErrUnknownModel = domain.E(domain.KindNotFound, "model_not_found", "model not found")
)

// Catalog looks models up by id.
type Catalog struct {
	byID  map[string]Model
	order []string
	// aliases are the models' aliases, each to its model's id.
	aliases map[string]string
}

// New indexes models; ids and aliases must be unique, together.
func New(models []Model) (*Catalog, error) {
	c := &Catalog{byID: make(map[string]Model, len(models)), aliases: map[string]string{}}
	for _, m := range models {
		if _, dup := c.byID[m.ID]; dup {
			return nil, fmt.Errorf("duplicate model id %q", m.ID)
		}
		c.byID[m.ID] = m
		c.order = append(c.order, m.ID)
	}
	for _, m := range models {
		for _, a := range m.Aliases {
			if _, dup := c.byID[a]; dup {
				return nil, fmt.Errorf("model %q: alias %q is a model id", m.ID, a)
			}
			if other, dup := c.aliases[a]; dup {
				return nil, fmt.Errorf("model %q: alias %q is also model %q's", m.ID, a, other)
			}
			c.aliases[a] = m.ID
		}
	}
	return c, nil
}

// Model returns the model with id, or with id as an alias, or ErrUnknownModel (naming the model: its first
// maxEchoed bytes, so that a megabyte of model name does not come back as a megabyte of error).
func (c *Catalog) Model(id string) (Model, error) {
	if canonical, ok := c.aliases[id]; ok {
		id = canonical
	}
	m, ok := c.byID[id]
	if !ok {
		named := echoed(id)
		return Model{}, ErrUnknownModel.WithMsg(fmt.Sprintf("model %q not found", named)).With("model", named)
	}
	return m, nil
}

// maxEchoed is how much of an unknown model's name its error repeats.
const maxEchoed = 256

// echoed is id cut to at most maxEchoed bytes at a character's start, with "…" when it was cut.
func echoed(id string) string {
	if len(id) <= maxEchoed {
		return id
	}
	cut := maxEchoed
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}

// Serves refuses, with a 400 naming the model field, a model of another modality than mod.
func (m Model) Serves(mod Modality) error {
	if m.Modality != mod {
		return domain.E(domain.KindInvalid, "model_not_"+string(mod),
			fmt.Sprintf("model: %q is a %s model, not a %s model", m.ID, m.Modality, names[mod])).With("field", "model")
	}
	return nil
}

// Len is the number of models.
func (c *Catalog) Len() int { return len(c.order) }

// List returns the models of one modality in configuration order.
func (c *Catalog) List(mod Modality) []Model {
	var out []Model
	for _, id := range c.order {
		if m := c.byID[id]; m.Modality == mod {
			out = append(out, m)
		}
	}
	return out
}

// All returns every model in configuration order.
func (c *Catalog) All() []Model {
	out := make([]Model, len(c.order))
	for i, id := range c.order {
		out[i] = c.byID[id]
	}
	return out
}

// Providers returns the slugs of the providers that serve some model, in the order they first appear.
func (c *Catalog) Providers() []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range c.order {
		for _, e := range c.byID[id].Endpoints {
			if !seen[e.Provider] {
				seen[e.Provider] = true
				out = append(out, e.Provider)
			}
		}
	}
	return out
}
