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
	store ports.GenerationStore
	list  ports.GenerationList
	dir   ports.Directory
}

var (
	_ ports.GenerationService = (*Generations)(nil)
	_ ports.GenerationLister  = (*Generations)(nil)
)

func NewGenerations(store ports.GenerationStore, list ports.GenerationList, dir ports.Directory) *Generations {
	return &Generations{store: store, list: list, dir: dir}
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
