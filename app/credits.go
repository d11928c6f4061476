package app

import (
	"context"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// Credits reads and tops up the organization's balance.
type Credits struct{ store ports.CreditStore }

var _ ports.CreditService = (*Credits)(nil)

func NewCredits(store ports.CreditStore) *Credits { return &Credits{store: store} }

func (c *Credits) Credits(ctx context.Context) (domain.Micros, domain.Micros, error) {
	return c.store.Credits(ctx)
}

func (c *Credits) AddCredits(ctx context.Context, amount domain.Micros) error {
	if amount <= 0 {
		return domain.Invalid("amount", "must be a positive number of dollars")
	}
	return c.store.AddCredits(ctx, amount)
}
