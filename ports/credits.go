package ports

import (
	"context"

	"github.com/switchboard-ai/switchboard/domain"
)

// CreditStore is the organization's credit balance: what was added, and what calls used.
type CreditStore interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
	AddCreditUsage(ctx context.Context, amount domain.Micros) error
}

// CreditService reads and tops up the balance.
type CreditService interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
}
