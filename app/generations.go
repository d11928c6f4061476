package app

import (
	"context"
	"fmt"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// Generations reads generation records: a key sees its workspace's, a management key every workspace's.
type Generations struct {
	store    ports.GenerationStore
	list     ports.GenerationList
	feedback ports.FeedbackStore
	dir      ports.Directory
	env      Env
}

var (
	_ ports.GenerationService = (*Generations)(nil)
	_ ports.GenerationLister  = (*Generations)(nil)
	_ ports.FeedbackService   = (*Generations)(nil)
)

func NewGenerations(store ports.GenerationStore, list ports.GenerationList, feedback ports.FeedbackStore,
	dir ports.Directory, env Env) *Generations {
	return &Generations{store: store, list: list, feedback: feedback, dir: dir, env: env}
}

// SubmitFeedback keeps feedback on a generation from a management key or from the key that made it; to any
// other key the generation does not exist (404), as GET /generation answers it.
func (g *Generations) SubmitFeedback(ctx context.Context, by account.Principal, generationID, category string, comment *string) error {
	if generationID == "" {
		return domain.Invalid("generation_id", "is required")
	}
	rec, err := g.store.Generation(ctx, generationID)
	if err != nil {
		return err
	}
	if !by.Management && rec.KeyHash != by.KeyHash {
		return generation.ErrNotFound
	}
	f, err := generation.NewFeedback(g.env.NewID(), rec, by.KeyHash, category, comment, g.env.Now())
	if err != nil {
		return err
	}
	return g.feedback.AddFeedback(ctx, f)
}

// ListGenerations reads a page of the caller's records, newest first (see ports.GenerationFilter): a key that is
// not a management key lists its own workspace's only.
func (g *Generations) ListGenerations(ctx context.Context, by account.Principal, f ports.GenerationFilter) (ports.GenerationPage, error) {
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return ports.GenerationPage{}, domain.Invalid("from", "must be before to")
	}
	if f.Limit < 0 || f.Limit > generation.MaxPage {
		return ports.GenerationPage{}, domain.Invalid("limit", fmt.Sprintf("must be from 1 to %d", generation.MaxPage))
	}
	ws, err := scopeWorkspace(ctx, g.dir, by, f.WorkspaceID)
	if err != nil {
		return ports.GenerationPage{}, err
	}
	f.WorkspaceID = ws
	return g.list.ListGenerations(ctx, f)
}

// Generation answers a record of another workspace exactly as one that does not exist: nothing leaks.
func (g *Generations) Generation(ctx context.Context, by account.Principal, id string) (generation.Record, error) {
	if id == "" {
		return generation.Record{}, generation.ErrNoID
	}
	rec, err := g.store.Generation(ctx, id)
	if err != nil {
		return generation.Record{}, err
	}
	if !by.SeesWorkspace(rec.WorkspaceID) {
		return generation.Record{}, generation.ErrNotFound
	}
	return rec, nil
}

// GenerationContent is for management keys only.
func (g *Generations) GenerationContent(ctx context.Context, by account.Principal, id string) (generation.Content, error) {
	if !by.Management {
		return generation.Content{}, account.ErrManagementOnly
	}
	if id == "" {
		return generation.Content{}, generation.ErrNoID
	}
	return g.store.GenerationContent(ctx, id)
}
