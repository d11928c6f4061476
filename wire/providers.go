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

// newSpeechProviders builds a client for every configured provider that speaks text to speech; all share one
// pool of connections.
func newSpeechProviders(cfg []ProviderConfig, log *slog.Logger) ports.SpeechProviders {
	client := upstream.NewHTTPClient()
	out := ports.SpeechProviders{}
	for _, p := range cfg {
		uc := upstream.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Timeout: p.Timeout, IdleTimeout: p.IdleTimeout}
		switch p.Kind {
		case "openai":
			out[p.Slug] = openai.New(uc, client)
		case "elevenlabs":
			out[p.Slug] = elevenlabs.New(uc, client)
		case "google-ai-studio":
			out[p.Slug] = gemini.New(uc, client)
		case "deepgram":
			out[p.Slug] = deepgram.New(uc, client)
		case "espeak":
			e := espeak.New()
			if !e.Installed() {
				log.Warn("provider uses espeak-ng, which is not installed: its calls will fail over or fail", "provider", p.Slug)
			}
			out[p.Slug] = e
		}
	}
	return out
}
