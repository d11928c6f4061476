package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// GenerationRecorder takes one entry per generation from the request path and returns at once; the entry is
// written in the background, and nothing is lost.
type GenerationRecorder interface {
	Record(ctx context.Context, e generation.Entry)
}

// GenerationStore keeps generation records and, apart from them, their content.
type GenerationStore interface {
	// InsertGenerations writes a batch in one transaction; ids already stored are skipped.
	InsertGenerations(ctx context.Context, batch []generation.Entry) error
	// Generation returns generation.ErrNotFound for an unknown id.
	Generation(ctx context.Context, id string) (generation.Record, error)
	// GenerationContent returns generation.ErrNotFound when the generation or its content is not stored.
	GenerationContent(ctx context.Context, id string) (generation.Content, error)
	// PurgeGenerations deletes up to limit records (and their content) created before before.
	PurgeGenerations(ctx context.Context, before time.Time, limit int) (int64, error)
}

// GenerationService reads generation records for callers.
type GenerationService interface {
	Generation(ctx context.Context, by account.Principal, id string) (generation.Record, error)
	GenerationContent(ctx context.Context, by account.Principal, id string) (generation.Content, error)
}
