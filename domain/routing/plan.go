package routing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// Plan is the order a call tries its model's endpoints in, before the gateway's balancing and health: endpoints
// [Ranks[i-1], Ranks[i]) are of equal rank, and share the calls by weight.
type Plan struct {
	Endpoints []catalog.Endpoint
	// Ranks are the ends of the groups of equal rank in Endpoints; nil when every endpoint is a rank of its own.
	Ranks []int
	// Limit is how many endpoints a call may try (allow_fallbacks false), 0 for all of them.
	Limit int
}

// Figurer looks up what the gateway measured of an endpoint; the plan asks only when the preferences need it.
type Figurer func(catalog.Endpoint) Figures

// Plan orders a model's endpoints by the preferences. It keeps the endpoints the call may use (only, ignore,
// max_price, require_parameters with the request's parameters), each filter that leaves none a 404 naming the
// preference; it puts the ordered providers first, in their order, then the others by the sort (price,
// throughput, latency: endpoints not yet measured after those measured) or by their configured ranks; then those
// past a preferred latency or throughput after the others. Endpoints whose sort keys are equal are of one rank.
func (p Preferences) Plan(model string, eps []catalog.Endpoint, figures Figurer, params []string) (Plan, error) {
	if p.Zero() && len(eps) > 0 {
		return Plan{Endpoints: eps, Ranks: configuredRanks(eps)}, nil // as most calls: no copy, no figures
	}
	cands := make([]candidate, 0, len(eps))
	for i, ep := range eps {
		if (len(p.Only) == 0 || named(p.Only, ep.Provider) >= 0) && named(p.Ignore, ep.Provider) < 0 {
			cands = append(cands, candidate{ep: ep, at: i})
		}
	}
	if len(cands) == 0 {
		return Plan{}, noEndpoint(model, "provider", "matches the provider preferences")
	}
	if p.MaxPrice.Set() {
		if cands = slices.DeleteFunc(cands, func(c candidate) bool { return !p.MaxPrice.admits(c.ep.Pricing) }); len(cands) == 0 {
			return Plan{}, noEndpoint(model, "provider.max_price", "is within provider.max_price")
		}
	}
	if p.RequireParameters {
		if cands = slices.DeleteFunc(cands, func(c candidate) bool { return !c.ep.Supports(params) }); len(cands) == 0 {
			return Plan{}, noEndpoint(model, "provider.require_parameters",
				"supports every parameter of the request ("+strings.Join(params, ", ")+")")
		}
	}
	measured := p.Sort == ByLatency || p.Sort == ByThroughput || p.PreferredMaxLatency.Set() || p.PreferredMinThroughput.Set()
	for i := range cands {
		c := &cands[i]
		c.order = named(p.Order, c.ep.Provider)
		if c.order < 0 {
			c.order = len(p.Order)
		}
		var f Figures
		if measured {
			f = figures(c.ep)
		}
		c.key, c.unknown = p.sortKey(c, f)
		c.late = p.PreferredMaxLatency.Set() && f.LatencyKnown && !p.PreferredMaxLatency.atMost(f.Latency) ||
			p.PreferredMinThroughput.Set() && f.ThroughputKnown && !p.PreferredMinThroughput.atLeast(f.Throughput)
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(boolCmp(a.late, b.late), cmp.Compare(a.order, b.order), boolCmp(a.unknown, b.unknown),
			cmp.Compare(a.key, b.key), cmp.Compare(a.at, b.at))
	})
	if p.AllowFallbacks != nil && !*p.AllowFallbacks && len(p.Order) > 0 {
		if cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.order == len(p.Order) }); len(cands) == 0 {
			return Plan{}, noEndpoint(model, "provider", "matches the provider preferences")
		}
	}
	plan := Plan{Endpoints: make([]catalog.Endpoint, len(cands))}
	for i, c := range cands {
		plan.Endpoints[i] = c.ep
	}
	plan.Ranks = ends(cands, len(p.Order))
	if p.AllowFallbacks != nil && !*p.AllowFallbacks && len(p.Order) == 0 {
		plan.Limit = 1
	}
	return plan, nil
}

// candidate is an endpoint as the plan ranks it.
type candidate struct {
	ep catalog.Endpoint
	at int // its place in the model's list
	// order is its provider's place in provider.order, len(order) when not named; key is its sort key (lowest
	// first), unknown that the sort's figure was never measured for it, late that it misses a preferred cutoff.
	order   int
	key     float64
	unknown bool
	late    bool
}

func (a candidate) sameRank(b candidate) bool {
	return a.late == b.late && a.order == b.order && a.unknown == b.unknown && a.key == b.key
}

// ends are the ends of the groups of equal rank (nil when each endpoint is one): an ordered provider's endpoints are
// each a rank of their own.
func ends(cands []candidate, ordered int) []int {
	var out []int
	shared := false
	for i := 1; i <= len(cands); i++ {
		if i == len(cands) || cands[i].order < ordered || !cands[i].sameRank(cands[i-1]) {
			out = append(out, i)
			continue
		}
		shared = true
	}
	if !shared {
		return nil
	}
	return out
}

// sortKey is what the sort ranks c by, lowest first, given its figures f; unknown says the sort's figure was never
// measured, and then the key is its configured rank.
func (p Preferences) sortKey(c *candidate, f Figures) (key float64, unknown bool) {
	switch {
	case p.Sort == ByPrice:
		return float64(c.ep.Pricing.Level()), false
	case p.Sort == ByLatency && f.LatencyKnown:
		return f.Latency.P50, false
	case p.Sort == ByThroughput && f.ThroughputKnown:
		return -f.Throughput.P50, false
	}
	return float64(rank(c.ep, c.at)), p.Sort != Configured
}

// configuredRanks are the ends of the groups of equal configured rank of a model's endpoints, in their order;
// nil when every endpoint is a rank of its own (as when none sets one).
func configuredRanks(eps []catalog.Endpoint) []int {
	var out []int
	shared := false
	for i := 1; i <= len(eps); i++ {
		if i == len(eps) || rank(eps[i], i) != rank(eps[i-1], i-1) {
			out = append(out, i)
			continue
		}
		shared = true
	}
	if !shared {
		return nil
	}
	return out
}

// rank is an endpoint's configured rank, its place in the list (from 1) when it sets none.
func rank(ep catalog.Endpoint, at int) int {
	if ep.Rank > 0 {
		return ep.Rank
	}
	return at + 1
}

// admits reports whether an endpoint's prices are within the caps: its prompt price (per million tokens, or
// characters for speech) and its completion price. A price the endpoint does not set is 0.
func (m MaxPrice) admits(p catalog.Pricing) bool {
	prompt := max(deref(p.PerMillionPromptTokens), deref(p.PerMillionChars))
	return (m.Prompt == nil || prompt <= *m.Prompt) && (m.Completion == nil || deref(p.PerMillionCompletionTokens) <= *m.Completion)
}

func deref(m *domain.Micros) domain.Micros {
	if m == nil {
		return 0
	}
	return *m
}

// named is the place of slug in list, in any case, or -1.
func named(list []string, slug string) int {
	return slices.IndexFunc(list, func(s string) bool { return strings.EqualFold(s, slug) })
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// noEndpoint is the 404 of preferences no endpoint meets, naming the preference: the reference's "No endpoints
// found" is a 404.
func noEndpoint(model, field, what string) error {
	return domain.E(domain.KindNotFound, "no_endpoint",
		fmt.Sprintf("%s: no endpoint of model %q %s", field, model, what)).With("field", field)
}
