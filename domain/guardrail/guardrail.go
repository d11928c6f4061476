// Package guardrail is an organization's policy for a group of members or keys: which models and providers they
// may use, how much they may spend per window, and which content is blocked, redacted or flagged. A guardrail
// that nobody is assigned to does nothing.
package guardrail

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

type Guardrail struct {
	ID          string
	WorkspaceID string
	Spec
	CreatedAt time.Time
	UpdatedAt *time.Time
}

var (
	ErrNotFound = domain.E(domain.KindNotFound, "guardrail_not_found", "guardrail not found")
	// ErrNoEndpoint and ErrBudget are refusals; With names the guardrail.
	ErrNoEndpoint = domain.E(domain.KindForbidden, "guardrail_blocked_route", "")
	ErrBudget     = domain.E(domain.KindForbidden, "guardrail_budget_exceeded", "")
	ErrBlocked    = domain.E(domain.KindInvalid, "guardrail_blocked_content", "")
)

// refusal names the guardrail in the message and in the metadata.
func (g Guardrail) refusal(base *domain.Error, msg string) *domain.Error {
	return base.WithMsg(fmt.Sprintf("guardrail %q (%s): %s", g.Name, g.ID, msg)).
		With("guardrail_id", g.ID).With("guardrail_name", g.Name)
}

// Hold is a reservation of an amount on one guardrail's budget window, made before a call and settled after it.
type Hold struct {
	ID          string
	GuardrailID string
	Window      time.Time
	Amount      domain.Micros
}

// Spec is a guardrail's settable fields; Validate checks them together.
type Spec struct {
	Name                 string
	Description          *string
	LimitUSD             *domain.Micros
	ResetInterval        domain.Interval
	AllowedModels        []string
	IgnoredModels        []string
	AllowedProviders     []string
	IgnoredProviders     []string
	AllowedDataRegions   []string
	ContentFilters       []ContentFilter
	Builtins             []Builtin
	IncludeBYOKInBudgets bool
}

// New validates spec and builds a guardrail.
func New(id, workspaceID string, spec Spec, now time.Time) (Guardrail, error) {
	g := Guardrail{ID: id, WorkspaceID: workspaceID, Spec: spec.normal(), CreatedAt: now.UTC()}
	return g, g.validate()
}

// normal trims the name and drops repeated list entries.
func (s Spec) normal() Spec {
	s.Name = strings.TrimSpace(s.Name)
	s.AllowedModels, s.IgnoredModels = dedupe(s.AllowedModels), dedupe(s.IgnoredModels)
	s.AllowedProviders, s.IgnoredProviders = dedupe(s.AllowedProviders), dedupe(s.IgnoredProviders)
	s.AllowedDataRegions = dedupe(s.AllowedDataRegions)
	return s
}

// Update replaces the settable fields with spec (a partial update merges into g.Spec first) and validates.
func (g *Guardrail) Update(spec Spec, now time.Time) error {
	g.Spec = spec.normal()
	t := now.UTC()
	g.UpdatedAt = &t
	return g.validate()
}

func dedupe(xs []string) []string {
	if xs == nil {
		return nil
	}
	out := make([]string, 0, len(xs))
	seen := make(map[string]struct{}, len(xs))
	for _, x := range xs {
		if _, dup := seen[x]; !dup {
			seen[x] = struct{}{}
			out = append(out, x)
		}
	}
	return out
}

func (g Guardrail) validate() error {
	if g.Name == "" || utf8.RuneCountInString(g.Name) > 200 {
		return domain.Invalid("name", "must be 1 to 200 characters")
	}
	if g.Description != nil && utf8.RuneCountInString(*g.Description) > 2000 {
		return domain.Invalid("description", "must be at most 2000 characters")
	}
	if g.LimitUSD != nil {
		if *g.LimitUSD < 0 {
			return domain.Invalid("limit_usd", "must not be negative")
		}
		if g.ResetInterval == domain.IntervalNone {
			return domain.Invalid("reset_interval", "is required with limit_usd (daily, weekly or monthly)")
		}
	}
	for field, list := range map[string][]string{"allowed_models": g.AllowedModels, "ignored_models": g.IgnoredModels,
		"allowed_providers": g.AllowedProviders, "ignored_providers": g.IgnoredProviders} {
		for _, s := range list {
			if strings.TrimSpace(s) == "" || len(s) > 200 {
				return domain.Invalid(field, "entries must be non-empty strings of at most 200 characters")
			}
		}
	}
	for _, r := range g.AllowedDataRegions {
		if r != "global" && r != "europe" && r != "us" {
			return domain.Invalid("allowed_data_regions", "entries must be global, europe or us")
		}
	}
	for i, f := range g.ContentFilters {
		if err := f.validate(i); err != nil {
			return err
		}
	}
	for i, b := range g.Builtins {
		if err := b.validate(i); err != nil {
			return err
		}
	}
	return nil
}

// Filter keeps the endpoints of model that the guardrail allows; none left is a refusal naming it.
func (g Guardrail) Filter(model string, endpoints []catalog.Endpoint) ([]catalog.Endpoint, error) {
	if (len(g.AllowedModels) > 0 && !matchAny(g.AllowedModels, model)) || matchAny(g.IgnoredModels, model) {
		return nil, g.refusal(ErrNoEndpoint, fmt.Sprintf("model %q is not allowed", model))
	}
	var out []catalog.Endpoint
	for _, e := range endpoints {
		if (len(g.AllowedProviders) == 0 || matchAny(g.AllowedProviders, e.Provider)) && !matchAny(g.IgnoredProviders, e.Provider) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, g.refusal(ErrNoEndpoint, fmt.Sprintf("no allowed provider serves model %q", model))
	}
	return out, nil
}

// matchAny matches exactly, or by prefix for patterns ending in "*" ("openai/*").
func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if p == s || strings.HasSuffix(p, "*") && strings.HasPrefix(s, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

// BudgetRefusal is the refusal for a call whose worst case (estimate) would take the guardrail past its limit in
// this window, where left was what the window had left: both in its message and metadata (domain.CannotHold).
func (g Guardrail) BudgetRefusal(window time.Time, estimate, left domain.Micros) error {
	budget := fmt.Sprintf("the budget of $%s", g.LimitUSD.Decimal())
	if g.ResetInterval != domain.IntervalNone {
		budget = fmt.Sprintf("the %s budget of $%s starting %s", g.ResetInterval, g.LimitUSD.Decimal(), window.Format("2006-01-02"))
	}
	base := domain.CannotHold(ErrBudget, budget, estimate, left)
	return g.refusal(base, base.Msg)
}
