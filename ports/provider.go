package ports

import "github.com/switchboard-ai/switchboard/domain/catalog"

// Provider is the client of one configured upstream account. What it serves is the modality ports it
// implements — SpeechProvider, VideoProvider, ChatProvider, EmbeddingProvider — found by type assertion, so one client may serve several
// modalities.
type Provider any

// Providers are the configured providers by slug.
type Providers map[string]Provider

// Modalities lists what a provider serves: each modality whose port it implements. A new modality's port gets
// its line here.
func Modalities(p Provider) []catalog.Modality {
	var out []catalog.Modality
	if _, ok := p.(SpeechProvider); ok {
		out = append(out, catalog.TTS)
	}
	if _, ok := p.(VideoProvider); ok {
		out = append(out, catalog.Video)
	}
	if _, ok := p.(ChatProvider); ok {
		out = append(out, catalog.Chat)
	}
	if _, ok := p.(EmbeddingProvider); ok {
		out = append(out, catalog.Embeddings)
	}
	return out
}
