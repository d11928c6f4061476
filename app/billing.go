package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
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

// Billing admits calls and settles them: before the upstream call it refuses calls that may not spend and lets
// the guardrails reserve budget (holds); after it, it books what the call cost — the key's usage, the
// organization's credits — and settles the holds.
//
// Usage and credits are summed in memory per key and UTC day and written once a second (and at Close), so a
// busy gateway writes one row per key a second instead of two per call, and no row is hot. The refusals below
// add what is not written yet, so they stay exact for this process. Guardrail holds are settled per call, in the
// background, as budgets across processes depend on them.
type Billing struct {
	usage   ports.UsageStore
	credits ports.CreditStore
	guard   ports.GuardrailEnforcer
	enabled CreditsEnabled
	env     Env
	log     *slog.Logger

	mu      sync.Mutex
	pending map[dayKey]domain.Micros // usage not written yet
	unspent domain.Micros            // credit usage not written yet

	slots chan struct{} // bounds the settlements running in the background
	wg    sync.WaitGroup
}

type dayKey struct {
	hash string
	day  time.Time
}

// chargeSlots is how many settlements may run in the background at once; past that a caller settles itself.
const chargeSlots = 256

// FlushEvery is how often accumulated usage is written.
const FlushEvery = time.Second

func NewBilling(usage ports.UsageStore, credits ports.CreditStore, guard ports.GuardrailEnforcer, enabled CreditsEnabled,
	env Env, log *slog.Logger) *Billing {
	b := &Billing{usage: usage, credits: credits, guard: guard, enabled: enabled, env: env, log: log,
		pending: map[dayKey]domain.Micros{}, slots: make(chan struct{}, chargeSlots)}
	return b
}

// Admit lets a call through, or refuses it, before any upstream call: 402 when the organization has no credit
// left (with credits enabled) or the key has spent its own limit in the current window; then the guardrails,
// which may narrow the endpoints, redact the text and reserve budget. Settle settles the holds it returns.
func (b *Billing) Admit(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, error) {
	if err := b.check(ctx, by); err != nil {
		return ports.Admitted{}, err
	}
	return b.guard.Admit(ctx, by, a)
}

func (b *Billing) check(ctx context.Context, by account.Principal) error {
	if by.Limit != nil {
		now := b.env.Now()
		usage, err := b.usage.Usage(ctx, []string{by.KeyHash}, now)
		if err != nil {
			return fmt.Errorf("read key usage: %w", err)
		}
		spent := usage[by.KeyHash].In(by.LimitReset) + b.pendingSince(by.KeyHash, by.LimitReset.Start(now))
		if spent >= *by.Limit {
			return errKeyLimit
		}
	}
	if b.enabled {
		total, used, err := b.credits.Credits(ctx)
		if err != nil {
			return fmt.Errorf("read credits: %w", err)
		}
		b.mu.Lock()
		used += b.unspent
		b.mu.Unlock()
		if used >= total {
			return errNoCredits
		}
	}
	return nil
}

// pendingSince is the key's unwritten usage from days at or after start.
func (b *Billing) pendingSince(hash string, start time.Time) domain.Micros {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sum domain.Micros
	for k, v := range b.pending {
		if k.hash == hash && !k.day.Before(start) {
			sum += v
		}
	}
	return sum
}

// Settle books amount for the call and settles its holds, off the request path.
func (b *Billing) Settle(ctx context.Context, by account.Principal, amount domain.Micros, holds []guardrail.Hold) {
	if amount > 0 {
		day := domain.IntervalDaily.Start(b.env.Now())
		b.mu.Lock()
		b.pending[dayKey{by.KeyHash, day}] += amount
		b.unspent += amount
		b.mu.Unlock()
	}
	if len(holds) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	select {
	case b.slots <- struct{}{}:
		b.wg.Add(1)
		go func() {
			defer func() { <-b.slots; b.wg.Done() }()
			b.guard.Settle(ctx, holds, amount)
		}()
	default:
		b.guard.Settle(ctx, holds, amount)
	}
}

// Worker writes the accumulated usage every FlushEvery; Close writes the rest.
func (b *Billing) Worker() Worker { return Every("billing", FlushEvery, b.Flush) }

// Flush writes the accumulated usage; what fails to be written stays for the next flush.
func (b *Billing) Flush(ctx context.Context) {
	b.mu.Lock()
	pending, unspent := b.pending, b.unspent
	b.pending, b.unspent = map[dayKey]domain.Micros{}, 0
	b.mu.Unlock()
	var failed map[dayKey]domain.Micros
	for k, v := range pending {
		if err := b.usage.AddUsage(ctx, k.hash, k.day, v); err != nil {
			b.log.ErrorContext(ctx, "book key usage; will retry", "amount", v.Decimal(), "err", err)
			if failed == nil {
				failed = map[dayKey]domain.Micros{}
			}
			failed[k] = v
		}
	}
	var unbooked domain.Micros
	if unspent > 0 {
		if err := b.credits.AddCreditUsage(ctx, unspent); err != nil {
			b.log.ErrorContext(ctx, "book credit usage; will retry", "amount", unspent.Decimal(), "err", err)
			unbooked = unspent
		}
	}
	if failed != nil || unbooked > 0 {
		b.mu.Lock()
		for k, v := range failed {
			b.pending[k] += v
		}
		b.unspent += unbooked
		b.mu.Unlock()
	}
}

// Close waits for the settlements in flight and writes what is accumulated: a shutdown loses none. It runs
// after the worker has stopped.
func (b *Billing) Close() {
	b.wg.Wait()
	b.Flush(context.Background())
}
