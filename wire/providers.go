package wire

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/anthropic"
	"github.com/switchboard-ai/switchboard/adapters/upstream/deepgram"
	"github.com/switchboard-ai/switchboard/adapters/upstream/elevenlabs"
	"github.com/switchboard-ai/switchboard/adapters/upstream/espeak"
	"github.com/switchboard-ai/switchboard/adapters/upstream/fal"
	"github.com/switchboard-ai/switchboard/adapters/upstream/gemini"
	"github.com/switchboard-ai/switchboard/adapters/upstream/minimax"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/adapters/upstream/runway"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/ports"
)

// providerKinds is the provider registry: every upstream protocol the gateway speaks, by the kind the
// configuration names, with how a client for one account is built. The configuration accepts exactly these
// kinds, and each serves the modalities whose ports its client implements. A new provider is its package under
// adapters/upstream plus one row here.
var providerKinds = map[string]providerKind{
	"openai":           remote(openai.New),
	"anthropic":        remote(anthropic.New),
	"elevenlabs":       remote(elevenlabs.New),
	"google-ai-studio": remote(gemini.New),
	"deepgram":         remote(deepgram.New),
	"espeak":           local(espeak.New),
	"fal":              remote(fal.New),
	"runway":           remote(runway.New),
	"minimax":          remote(minimax.New),
}

// providerKind is one row of the registry.
type providerKind struct {
	// local kinds run on the gateway's own host: they take no base_url, api_key or upstream_model.
	local bool
	// modalities are what the kind's clients serve.
	modalities []catalog.Modality
	build      func(upstream.Config, *http.Client) ports.Provider
}

// remote is a kind that calls an upstream API over HTTP, through the shared connection pool.
func remote[C ports.Provider](build func(upstream.Config, *http.Client) C) providerKind {
	var client C // a typed nil: enough to see which ports the client's type implements
	return providerKind{modalities: ports.Modalities(client),
		build: func(cfg upstream.Config, hc *http.Client) ports.Provider { return build(cfg, hc) }}
}

// local is a kind that runs on the gateway's host.
func local[C ports.Provider](build func() C) providerKind {
	var client C
	return providerKind{local: true, modalities: ports.Modalities(client),
		build: func(upstream.Config, *http.Client) ports.Provider { return build() }}
}

func (k providerKind) serves(mod catalog.Modality) bool { return slices.Contains(k.modalities, mod) }

func knownKinds() string { return strings.Join(slices.Sorted(maps.Keys(providerKinds)), ", ") }

// checker is what a provider implements when it can tell at start that its calls will fail (a local program
// that is not installed).
type checker interface{ Check() error }

// newProviders builds one client per account of each configured provider from the registry (its first account's
// under its slug, the others' under accountClient); all share one pool of connections.
func newProviders(cfg []ProviderConfig, log *slog.Logger, tracing httpapi.Tracing) (ports.Providers, error) {
	client := upstream.NewHTTPClient()
	traceUpstream(client, tracing)
	out := ports.Providers{}
	for _, p := range cfg {
		kind, ok := providerKinds[p.Kind]
		if !ok {
			return nil, fmt.Errorf("provider %q: unknown kind %q; known: %s", p.Slug, p.Kind, knownKinds())
		}
		for i, k := range p.Keys {
			c := kind.build(upstream.Config{BaseURL: p.BaseURL, APIKey: k.Key, Timeout: p.Timeout, IdleTimeout: p.IdleTimeout,
				Responses: p.ResponsesAPI}, client)
			if ch, ok := c.(checker); ok && i == 0 {
				if err := ch.Check(); err != nil {
					log.Warn("provider cannot work: its calls will fail over or fail", "provider", p.Slug, "err", err)
				}
			}
			out[accountClient(p.Slug, i)] = c
		}
	}
	return out, nil
}

// accountClient is the key in the provider registry of a provider's account i (from 0): its slug for the first,
// slug#2, slug#3... for the others (catalog.Endpoint.Client).
func accountClient(slug string, i int) string {
	if i == 0 {
		return slug
	}
	return slug + "#" + strconv.Itoa(i+1)
}

// providerAccounts are the accounts of the providers that have several, for the router to balance.
func providerAccounts(cfg []ProviderConfig) app.ProviderAccounts {
	out := app.ProviderAccounts{}
	for _, p := range cfg {
		if len(p.Keys) < 2 {
			continue
		}
		for i, k := range p.Keys {
			out[p.Slug] = append(out[p.Slug], app.Account{Client: accountClient(p.Slug, i), Weight: k.Weight})
		}
	}
	return out
}
