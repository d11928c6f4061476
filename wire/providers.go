package wire

import (
	"log/slog"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/deepgram"
	"github.com/switchboard-ai/switchboard/adapters/upstream/elevenlabs"
	"github.com/switchboard-ai/switchboard/adapters/upstream/espeak"
	"github.com/switchboard-ai/switchboard/adapters/upstream/gemini"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/ports"
)

// Providers are the clients of the configured providers, by what they make.
type Providers struct {
	Speech ports.SpeechProviders
	Video  ports.VideoProviders
}

// newProviders builds one client per configured provider, serving each modality its kind speaks; all share one
// pool of connections.
func newProviders(cfg []ProviderConfig, log *slog.Logger) Providers {
	client := upstream.NewHTTPClient()
	out := Providers{Speech: ports.SpeechProviders{}, Video: ports.VideoProviders{}}
	for _, p := range cfg {
		uc := upstream.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Timeout: p.Timeout, IdleTimeout: p.IdleTimeout}
		switch p.Kind {
		case "openai":
			c := openai.New(uc, client)
			out.Speech[p.Slug], out.Video[p.Slug] = c, c
		case "google-ai-studio":
			c := gemini.New(uc, client)
			out.Speech[p.Slug], out.Video[p.Slug] = c, c
		case "elevenlabs":
			out.Speech[p.Slug] = elevenlabs.New(uc, client)
		case "deepgram":
			out.Speech[p.Slug] = deepgram.New(uc, client)
		case "espeak":
			e := espeak.New()
			if !e.Installed() {
				log.Warn("provider uses espeak-ng, which is not installed: its calls will fail over or fail", "provider", p.Slug)
			}
			out.Speech[p.Slug] = e
		}
	}
	return out
}
