package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

var (
	errNoCredits = domain.E(domain.KindPaymentRequired, "insufficient_credits",
		"the organization has no credits left; top up with `switchboard credits add USD`").With("limit_source", "credits")
	errKeyLimit = domain.E(domain.KindPaymentRequired, "key_limit_reached",
		"this key has reached its spending limit for the current period").With("limit_source", "key_limit")
)

// CreditsEnabled turns the organization's credit balance on.
type CreditsEnabled bool

// Billing refuses calls that may not spend, and books what calls cost: the key's usage, the organization's
// credits and the guardrails' budgets.
type Billing struct {
	usage   ports.UsageStore
	credits ports.CreditStore
	guard   ports.GuardrailEnforcer
	enabled CreditsEnabled
	env     Env
	log     *slog.Logger

	slots chan struct{} // bounds the charges in flight in the background
	wg    sync.WaitGroup
}

// chargeSlots is how many charges may run in the background at once; past that a caller charges itself.
const chargeSlots = 256

func NewBilling(usage ports.UsageStore, credits ports.CreditStore, guard ports.GuardrailEnforcer, enabled CreditsEnabled,
	env Env, log *slog.Logger) *Billing {
	return &Billing{usage: usage, credits: credits, guard: guard, enabled: enabled, env: env, log: log,
		slots: make(chan struct{}, chargeSlots)}
}

// Check answers 402 before any upstream call when the organization has no credit left (with credits enabled) or
// the key has spent its own limit in the current window.
func (b *Billing) Check(ctx context.Context, by account.Principal) error {
	if by.Limit != nil {
		usage, err := b.usage.Usage(ctx, []string{by.KeyHash}, b.env.Now())
		if err != nil {
			return fmt.Errorf("read key usage: %w", err)
		}
		if usage[by.KeyHash].In(by.LimitReset) >= *by.Limit {
			return errKeyLimit
		}
	}
	if b.enabled {
		total, used, err := b.credits.Credits(ctx)
		if err != nil {
			return fmt.Errorf("read credits: %w", err)
		}
		if used >= total {
			return errNoCredits
		}
	}
	return nil
}

// Charge books amount for the call and settles its guardrail holds. It runs after the response is complete, in
// the background; when too many charges are already in flight, the caller waits for its own.
func (b *Billing) Charge(ctx context.Context, by account.Principal, amount domain.Micros, holds []ports.BudgetHold) {
	ctx = context.WithoutCancel(ctx)
	select {
	case b.slots <- struct{}{}:
		b.wg.Add(1)
		go func() {
			defer func() { <-b.slots; b.wg.Done() }()
			b.charge(ctx, by, amount, holds)
		}()
	default:
		b.charge(ctx, by, amount, holds)
	}
}

func (b *Billing) charge(ctx context.Context, by account.Principal, amount domain.Micros, holds []ports.BudgetHold) {
	b.guard.Settle(ctx, holds, amount)
	if amount == 0 {
		return
	}
	if err := b.usage.AddUsage(ctx, by.KeyHash, b.env.Now(), amount); err != nil {
		b.log.ErrorContext(ctx, "book key usage", "key_label", by.KeyName, "amount", amount.Decimal(), "err", err)
	}
	if err := b.credits.AddCreditUsage(ctx, amount); err != nil {
		b.log.ErrorContext(ctx, "book credit usage", "amount", amount.Decimal(), "err", err)
	}
}

// Close waits for the charges in flight: a shutdown loses none.
func (b *Billing) Close() { b.wg.Wait() }

// Credits reads and tops up the organization's balance.
type Credits struct{ store ports.CreditStore }

var _ ports.Credits = (*Credits)(nil)

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
