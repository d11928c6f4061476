package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

var (
	errNoCredits = domain.E(domain.KindPaymentRequired, "insufficient_credits", "").With("limit_source", "credits")
	errKeyLimit  = domain.E(domain.KindPaymentRequired, "key_limit_reached", "").With("limit_source", "key_limit")
	errBudget    = domain.E(domain.KindPaymentRequired, "workspace_budget_reached", "").With("limit_source", "workspace_budget")
)

// period names a key limit's window in a refusal.
func period(i domain.Interval) string {
	switch i {
	case domain.IntervalDaily:
		return " for the current day"
	case domain.IntervalWeekly:
		return " for the current week"
	case domain.IntervalMonthly:
		return " for the current month"
	}
	return ""
}

// CreditsEnabled turns the organization's credit balance on.
type CreditsEnabled bool

// Billing admits calls: before the upstream call it lets the guardrails reserve their budgets, and reserves the
// most the call may cost (its estimate, of the text the guardrails let through, on the dearest endpoint they leave)
// against the key's own limit, its workspace's budgets and the organization's credits, atomically in the store so
// the reservations hold across processes. What a call costs is booked from its generation entry (see Recorder):
// the key's usage, the credits' usage and the settlement of every hold are written with the record, in one
// transaction.
type Billing struct {
	usage   ports.UsageStore
	budgets ports.WorkspaceBudgetSource
	holds   ports.WorkspaceBudgetStore
	credits ports.CreditStore
	guard   ports.GuardrailEnforcer
	enabled CreditsEnabled
	env     Env
}

func NewBilling(usage ports.UsageStore, budgets ports.WorkspaceBudgetSource, holds ports.WorkspaceBudgetStore,
	credits ports.CreditStore, guard ports.GuardrailEnforcer, enabled CreditsEnabled, env Env) *Billing {
	return &Billing{usage: usage, budgets: budgets, holds: holds, credits: credits, guard: guard, enabled: enabled, env: env}
}

// Admit lets a call through, or refuses it, before any upstream call: first the guardrails, which may narrow the
// endpoints, redact the text and reserve budget; then 402 when the key's limit (in its current window), one of its
// workspace's budgets (in theirs) or the organization's credits (with credits enabled) cannot hold the call's
// estimate besides what was spent and what calls in flight hold. Those are estimated on what goes upstream, the
// endpoints and the texts the guardrails let through: a redaction may lengthen a text (a label longer than what
// it replaces), and the call is billed for the text sent. A refused call releases the guardrails' holds; writing
// the call's generation entry settles every other hold.
func (b *Billing) Admit(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, error) {
	admitted, err := b.guard.Admit(ctx, by, a)
	if err != nil {
		return ports.Admitted{}, err
	}
	a.Endpoints, a.Texts = admitted.Endpoints, admitted.Texts
	if err := b.reserve(ctx, by, a); err != nil {
		b.guard.Settle(ctx, admitted.Holds, 0)
		return ports.Admitted{}, err
	}
	return admitted, nil
}

func (b *Billing) reserve(ctx context.Context, by account.Principal, a ports.Admission) error {
	budgets, err := b.budgets.ActiveBudgets(ctx, by.WorkspaceID)
	if err != nil {
		return fmt.Errorf("read workspace budgets: %w", err)
	}
	if by.Limit == nil && len(budgets) == 0 && !b.enabled {
		return nil
	}
	var estimate domain.Micros
	for _, e := range a.Endpoints {
		estimate = max(estimate, a.Estimate(e, a.Texts))
	}
	now := b.env.Now()
	expires := now.Add(a.Hold)
	if by.Limit != nil {
		res, err := b.usage.ReserveUsage(ctx, a.ID, by.KeyHash, by.LimitReset.Start(now), *by.Limit, estimate, now, expires)
		if err != nil {
			return fmt.Errorf("reserve key limit: %w", err)
		}
		if !res.Held {
			return domain.CannotHold(errKeyLimit, fmt.Sprintf("this key's limit of $%s%s", by.Limit.Decimal(), period(by.LimitReset)),
				estimate, res.Left)
		}
	}
	if len(budgets) > 0 {
		res, err := b.holds.ReserveWorkspace(ctx, a.ID, by.WorkspaceID, budgets, estimate, now, expires)
		if err != nil {
			return fmt.Errorf("reserve workspace budget: %w", err)
		}
		if !res.Held {
			return domain.CannotHold(errBudget, "the workspace's budget ("+budgetNames(budgets)+")", estimate, res.Left)
		}
	}
	if b.enabled {
		res, err := b.credits.ReserveCredits(ctx, a.ID, estimate, now, expires)
		if err != nil {
			return fmt.Errorf("reserve credits: %w", err)
		}
		if !res.Held {
			e := domain.CannotHold(errNoCredits, "the organization's credits", estimate, res.Left)
			return e.WithMsg(e.Msg + "; top up with `switchboard credits add USD`")
		}
	}
	return nil
}

// budgetNames names a workspace's budgets in a refusal: "$5 daily, $100 monthly".
func budgetNames(budgets []account.Budget) string {
	names := make([]string, len(budgets))
	for i, bu := range budgets {
		names[i] = "$" + bu.Limit.Decimal() + " " + string(bu.Interval)
	}
	return strings.Join(names, ", ")
}
