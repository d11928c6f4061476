package app

import (
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/routing"
	"github.com/switchboard-ai/switchboard/ports"
)

// HealthConfig is the endpoints' circuit breaker: Failures failed attempts in a row open an endpoint's breaker,
// which then skips it for Cooldown before one call probes it.
type HealthConfig struct {
	Failures int
	Cooldown time.Duration
}

// DefaultHealthConfig is the breaker when the configuration says nothing.
func DefaultHealthConfig() HealthConfig { return HealthConfig{Failures: 5, Cooldown: 30 * time.Second} }

// Account is one of a provider's accounts (API keys): Client is its client's key in the provider registry, Weight
// its share of the provider's calls.
type Account struct {
	Client string
	Weight int
}

// ProviderAccounts are the providers' accounts by slug, in configuration order; a provider not listed has one, its
// slug.
type ProviderAccounts map[string][]Account

// Router decides which endpoints a call tries, in which order, and learns from what they do. It ranks a model's
// endpoints by the caller's preferences (routing.Preferences.Plan, with what it measured of them), balances the
// endpoints of equal rank by weight, skips those whose circuit breaker is open, and spreads each endpoint's calls
// over its provider's accounts by weight, skipping an account while its upstream's Retry-After lasts. It measures
// each endpoint's time to first token, throughput and failures over its recent calls (in this process: replicas
// measure their own). It serves the pipeline of every modality, and is the gateway's ports.EndpointHealth.
type Router struct {
	cfg       HealthConfig
	now       func() time.Time
	endpoints map[catalog.Upstream]*endpointHealth // every configured endpoint: read-only once built
	listed    []*endpointHealth                    // in configuration order
	accounts  map[string][]*accountHealth          // by provider slug, every provider of an endpoint
	spare     int                                  // the accounts past each provider's first, in all
	// mu guards the balancing's current weights (the wrr fields of endpoints and accounts).
	mu sync.Mutex
}

var _ ports.EndpointHealth = (*Router)(nil)

// NewRouter routes to the endpoints of the catalog's models, through the providers' accounts.
func NewRouter(c *catalog.Catalog, accounts ProviderAccounts, cfg HealthConfig, env Env) *Router {
	r := &Router{cfg: cfg, now: env.Now, endpoints: map[catalog.Upstream]*endpointHealth{}, accounts: map[string][]*accountHealth{}}
	for _, m := range c.All() {
		for _, ep := range m.Endpoints {
			up := ep.Upstream()
			if r.endpoints[up] == nil {
				h := &endpointHealth{up: up}
				r.endpoints[up] = h
				r.listed = append(r.listed, h)
			}
			if r.accounts[ep.Provider] != nil {
				continue
			}
			list := accounts[ep.Provider]
			if len(list) == 0 {
				list = []Account{{Client: ep.Provider, Weight: 1}}
			}
			for i, a := range list {
				r.accounts[ep.Provider] = append(r.accounts[ep.Provider],
					&accountHealth{provider: ep.Provider, client: a.Client, number: i + 1, weight: max(a.Weight, 1)})
			}
			r.spare += len(list) - 1
		}
	}
	return r
}

// Plan ranks a model's endpoints by the call's preferences: a 404 naming the preference that leaves none.
func (r *Router) Plan(model string, prefs routing.Preferences, params []string, eps []catalog.Endpoint) (routing.Plan, error) {
	return prefs.Plan(model, eps, r.figures, params)
}

func (r *Router) figures(ep catalog.Endpoint) routing.Figures {
	if h := r.endpoints[ep.Upstream()]; h != nil {
		return h.read()
	}
	return routing.Figures{}
}

// Candidates are the attempts a call makes, in order, from its plan: in each rank, the endpoint the balancing
// picks first and the others after it in turn; an endpoint whose breaker is open left out; each endpoint once per account
// of its provider that is not rate limited, the account the balancing picks first (a call moves on to the next
// account only when one is rate limited: see Inference.route). When it leaves none, the error says why: every
// endpoint's breaker open (502), or every account rate limited (429), with when to try again.
func (r *Router) Candidates(model string, plan routing.Plan) ([]catalog.Endpoint, error) {
	now := r.now()
	if plan.Ranks == nil && r.plain(plan.Endpoints, now) {
		return upTo(plan.Endpoints, plan.Limit), nil // as most calls: the plan as it is, with no copy
	}
	out := make([]catalog.Endpoint, 0, len(plan.Endpoints)+r.spare)
	var skipped struct {
		cooling, limited int
		soonest          time.Time
	}
	note := func(until time.Time) {
		if skipped.soonest.IsZero() || until.Before(skipped.soonest) {
			skipped.soonest = until
		}
	}
	taken := 0
	for start, end := range ranks(plan) {
		group := plan.Endpoints[start:end]
		first := r.balanced(group)
		for i := range group {
			ep := group[(first+i)%len(group)] // the one picked, then the others after it in turn
			if plan.Limit > 0 && taken == plan.Limit {
				break
			}
			if h := r.endpoints[ep.Upstream()]; h != nil {
				if cooling, until := h.cooling(now); cooling {
					skipped.cooling++
					note(until)
					continue
				}
			}
			var until time.Time
			if out, until = r.appendAccounts(out, ep, now); until.IsZero() {
				taken++
				continue
			}
			skipped.limited++
			note(until)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	retry := max(skipped.soonest.Sub(now), time.Second)
	if skipped.cooling == 0 {
		e := domain.E(domain.KindRateLimited, "upstream_rate_limited",
			fmt.Sprintf("every provider of %q is rate limiting the gateway: try again after the time in Retry-After", model))
		e.RetryAfter = retry
		return nil, e
	}
	return nil, unhealthy(model, retry)
}

// unhealthy is the 502 of a call whose every endpoint its breaker skips.
func unhealthy(model string, retry time.Duration) error {
	e := domain.E(domain.KindUpstream, "endpoints_unhealthy",
		fmt.Sprintf("every provider of %q failed its recent calls: each is skipped for a cool-down, then tried again", model))
	e.RetryAfter = retry
	return e
}

// plain reports that the plan's endpoints need nothing from the router: each of a provider with one account, that
// is not rate limited, and none skipped by its breaker.
func (r *Router) plain(eps []catalog.Endpoint, now time.Time) bool {
	for _, ep := range eps {
		switch accounts := r.accounts[ep.Provider]; len(accounts) {
		case 0:
		case 1:
			if limited, _ := accounts[0].limitedAt(now); limited {
				return false
			}
		default:
			return false
		}
		if h := r.endpoints[ep.Upstream()]; h != nil {
			if cooling, _ := h.cooling(now); cooling {
				return false
			}
		}
	}
	return true
}

func upTo(eps []catalog.Endpoint, limit int) []catalog.Endpoint {
	if limit > 0 && len(eps) > limit {
		return eps[:limit]
	}
	return eps
}

// ranks iterates over the plan's groups of equal rank: start and end of each.
func ranks(plan routing.Plan) func(yield func(int, int) bool) {
	return func(yield func(int, int) bool) {
		if plan.Ranks == nil {
			for i := range plan.Endpoints {
				if !yield(i, i+1) {
					return
				}
			}
			return
		}
		start := 0
		for _, end := range plan.Ranks {
			if !yield(start, end) {
				return
			}
			start = end
		}
	}
}

// balanced picks the endpoint a group of equal rank tries first: by a smooth weighted round robin, each endpoint
// is picked in proportion to its weight, spread evenly.
func (r *Router) balanced(group []catalog.Endpoint) int {
	if len(group) < 2 {
		return 0
	}
	var buf [16]*endpointHealth
	hs := buf[:0]
	for _, ep := range group {
		h := r.endpoints[ep.Upstream()]
		if h == nil {
			return 0 // an endpoint the router was not built with: no balancing
		}
		hs = append(hs, h)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return pick(len(group), func(i int) (int, *int) { return max(group[i].Weight, 1), &hs[i].wrr })
}

// appendAccounts appends ep once per account of its provider that is not rate limited, the one the balancing
// picks first, then the others in their order. When every account is rate limited it appends none, and until is
// when the first is usable again.
func (r *Router) appendAccounts(out []catalog.Endpoint, ep catalog.Endpoint, now time.Time) (_ []catalog.Endpoint, until time.Time) {
	all := r.accounts[ep.Provider]
	if len(all) < 2 { // one account (or a provider the router was not built with): the endpoint as it is
		if len(all) == 1 {
			if limited, until := all[0].limitedAt(now); limited {
				return out, until
			}
		}
		return append(out, ep), time.Time{}
	}
	var skip [MaxAccounts]bool
	usable := 0
	for i, a := range all {
		var u time.Time
		if skip[i], u = a.limitedAt(now); skip[i] {
			if until.IsZero() || u.Before(until) {
				until = u
			}
			continue
		}
		usable++
	}
	if usable == 0 {
		return out, until
	}
	r.mu.Lock()
	first := pick(len(all), func(i int) (int, *int) {
		if skip[i] {
			return 0, nil
		}
		return all[i].weight, &all[i].wrr
	})
	r.mu.Unlock()
	through := func(a *accountHealth) catalog.Endpoint {
		e := ep
		if a.client != ep.Provider {
			e.Account = a.client
		}
		return e
	}
	out = append(out, through(all[first]))
	for i, a := range all {
		if i != first && !skip[i] {
			out = append(out, through(a))
		}
	}
	return out, time.Time{}
}

// MaxAccounts bounds a provider's accounts (api_keys): the configuration holds it to that.
const MaxAccounts = 64

// pick is one step of a smooth weighted round robin (nginx's) over n members, each with its weight and current
// weight (a member with none, nil, is left out; at least one has one): every current weight grows by its weight,
// the largest is picked and falls by the total. Over any run of total picks each member is picked weight times,
// spread evenly.
func pick(n int, member func(i int) (weight int, current *int)) int {
	total, best, bestCurrent := 0, -1, 0
	for i := range n {
		w, cur := member(i)
		if cur == nil {
			continue
		}
		*cur += w
		total += w
		if best < 0 || *cur > bestCurrent {
			best, bestCurrent = i, *cur
		}
	}
	_, cur := member(best)
	*cur -= total
	return best
}

// begin claims an attempt at an endpoint: false when its breaker skips it (see endpointHealth.begin).
func (r *Router) begin(ep catalog.Endpoint) (probe, ok bool) {
	h := r.endpoints[ep.Upstream()]
	if h == nil {
		return false, true
	}
	return h.begin(r.now(), r.cfg.Cooldown)
}

// attempted learns from an attempt at an endpoint (err nil: it answered, in took): its health, and for a 429
// with a Retry-After, its account's.
func (r *Router) attempted(ep catalog.Endpoint, probe bool, took time.Duration, err error, callerGone bool) {
	now := r.now()
	o := succeeded
	if err != nil {
		o = failed
		switch ue := asUpstream(err); {
		case callerGone, ue.Kind == domain.KindInvalid:
			o = neutral
		case ue.Kind == domain.KindRateLimited:
			o = neutral
			if ue.RetryAfter > 0 {
				r.account(ep).rateLimited(now.Add(ue.RetryAfter))
			}
		}
	}
	if h := r.endpoints[ep.Upstream()]; h != nil {
		h.end(o, probe, took, now, r.cfg)
	}
}

// delivered learns from an answer delivered from an endpoint: its throughput (tokens a second, when it streamed
// tokens), or its failure when it broke off.
func (r *Router) delivered(ep catalog.Endpoint, tokens int64, streaming time.Duration, broke bool) {
	h := r.endpoints[ep.Upstream()]
	switch {
	case h == nil:
	case broke:
		h.end(failed, false, 0, r.now(), r.cfg)
	case tokens > 0 && streaming > 0:
		h.streamed(float64(tokens) / streaming.Seconds())
	}
}

// account is the account an endpoint's call went through.
func (r *Router) account(ep catalog.Endpoint) *accountHealth {
	for _, a := range r.accounts[ep.Provider] {
		if a.client == ep.Client() {
			return a
		}
	}
	return &accountHealth{} // a provider the router was not built with: nothing to remember
}

// Endpoints are every endpoint's health, in configuration order (ports.EndpointHealth).
func (r *Router) Endpoints() []ports.EndpointStatus {
	now := r.now()
	out := make([]ports.EndpointStatus, 0, len(r.listed))
	for _, h := range r.listed {
		h.mu.Lock()
		s := ports.EndpointStatus{Provider: h.up.Provider, UpstreamModel: h.up.Model, ID: h.up.ID(), Breaker: breakerNames[h.state],
			FailuresInARow: h.inARow, Attempts: h.nRecent, Figures: h.figures, LatencySamples: len(h.latency.sorted),
			ThroughputSamples: len(h.throughput.sorted), LatencySum: h.latency.sum(), ThroughputSum: h.throughput.sum()}
		if h.state == open {
			s.OpenUntil = h.until
			if !now.Before(h.until) {
				s.Breaker = breakerNames[halfOpen] // its cool-down is over: the next call probes it
			}
		}
		if h.nRecent > 0 {
			s.ErrorRate = float64(h.nFailed) / float64(h.nRecent)
		}
		h.mu.Unlock()
		for _, a := range r.accounts[h.up.Provider] {
			a.mu.Lock()
			s.Accounts = append(s.Accounts, ports.AccountStatus{Number: a.number, Weight: a.weight, RateLimited: now.Before(a.limited),
				RateLimitedUntil: a.limited})
			a.mu.Unlock()
		}
		out = append(out, s)
	}
	return out
}
