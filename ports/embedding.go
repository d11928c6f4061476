package ports

import (
	"context"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// EmbedRequest is what an embeddings provider is asked for: the inputs as admitted (texts the guardrails may
// have redacted, or token arrays).
type EmbedRequest struct {
	UpstreamModel string
	Inputs        []embedding.Input
	Dimensions    *int64
	// Options is the matched provider's passthrough; canonical fields win over it.
	Options map[string]any
}

// Embeddings are a provider's answer: one vector an input, in the inputs' order, whatever encoding the wire used.
type Embeddings struct {
	Vectors    [][]float32
	UpstreamID string
	// PromptTokens is the input tokens the upstream reported, nil when it reported none.
	PromptTokens *int64
}

// EmbeddingProvider is one upstream's embeddings protocol. Errors are *UpstreamError.
type EmbeddingProvider interface {
	Embed(ctx context.Context, req EmbedRequest) (Embeddings, error)
}

// EmbeddingAnswer is what a call delivers to its caller.
type EmbeddingAnswer struct {
	GenerationID, Model, Provider string
	Vectors                       [][]float32
	Format                        embedding.Format
	PromptTokens                  int64
	// Cost is what the call was billed, the reference's usage.cost.
	Cost domain.Micros
}

// EmbeddingSink is where a call's answer goes: the HTTP adapter supplies it. Write sends the whole answer; an error
// means the caller is gone.
type EmbeddingSink interface {
	Write(a EmbeddingAnswer) error
}

// EmbeddingService is the embeddings use case. It writes the answer into sink and returns the generation id, also
// when it fails (a failed call has a record too, unless it failed validation).
type EmbeddingService interface {
	Embed(ctx context.Context, by account.Principal, req embedding.Request, caller generation.Caller, sink EmbeddingSink) (string, error)
}
