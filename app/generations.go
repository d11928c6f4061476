package app

import (
	"context"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// Generations reads generation records: a key sees its workspace's, a management key every workspace's.
type Generations struct{ store ports.GenerationStore }

var _ ports.GenerationService = (*Generations)(nil)

func NewGenerations(store ports.GenerationStore) *Generations { return &Generations{store: store} }

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
