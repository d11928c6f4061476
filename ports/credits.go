package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// CreditStore is the organization's credit balance: what was added, and what calls used.
type CreditStore interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
	// ReserveCredits holds amount (until expires, or until the call's generation entry is written) when what was
	// used plus the holds in flight plus amount stay within what was added.
	ReserveCredits(ctx context.Context, id string, amount domain.Micros, now, expires time.Time) (Reservation, error)
}

// CreditService reads and tops up the balance.
type CreditService interface {
	Credits(ctx context.Context) (total, used domain.Micros, err error)
	AddCredits(ctx context.Context, amount domain.Micros) error
}
