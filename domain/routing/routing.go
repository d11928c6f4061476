// Package routing is how a call's endpoints are chosen and ordered, whatever its modality: the caller's
// preferences (the reference's provider object), the model variants that are routing (:floor, :nitro), and what the
// gateway measured of each endpoint (its figures). It is pure: the pipeline gives it the endpoints and their figures,
// and balances the endpoints of equal rank by weight (app.Router).
package routing

import (
	"fmt"
	"math"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
)

// Sort is what a call ranks its model's endpoints by, instead of their configured order.
type Sort string

const (
	// Configured is the default: the endpoints' configured ranks.
	Configured Sort = ""
	// ByPrice puts the cheapest first (catalog.Pricing.Level).
	ByPrice Sort = "price"
	// ByThroughput puts the fastest to stream first: tokens a second, at the median of the endpoint's recent calls.
	ByThroughput Sort = "throughput"
	// ByLatency puts the quickest to answer first: time to the first token, at the median of its recent calls.
	ByLatency Sort = "latency"
)

// Sorts are the sorts a request may name.
var Sorts = []Sort{ByPrice, ByThroughput, ByLatency}

// Percentiles are cutoffs on a measured figure at the reference's percentiles; a nil one says nothing.
type Percentiles struct{ P50, P75, P90, P99 *float64 }

// Set reports whether any cutoff is.
func (p Percentiles) Set() bool { return p.P50 != nil || p.P75 != nil || p.P90 != nil || p.P99 != nil }

// Quantiles are a figure at those percentiles.
type Quantiles struct{ P50, P75, P90, P99 float64 }

// Figures are what the gateway measured of an endpoint over its recent calls: the time to its first token (or
// byte) in seconds, and how many tokens a second it streamed; each only when some call measured it.
type Figures struct {
	Latency, Throughput           Quantiles
	LatencyKnown, ThroughputKnown bool
}

// MaxPrice is the most a caller will pay, in USD per million prompt and completion tokens (a speech model's prompt
// price is per million characters); nil says nothing.
type MaxPrice struct{ Prompt, Completion *domain.Micros }

// Set reports whether any price is capped.
func (m MaxPrice) Set() bool { return m.Prompt != nil || m.Completion != nil }

// Preferences are a request's provider routing preferences, as the reference defines them. Providers are named
// by their slug, in any case.
type Preferences struct {
	// Order tries these providers first, in this order; Only and Ignore keep or drop providers.
	Order, Only, Ignore []string
	// AllowFallbacks false tries no provider beyond those ordered, or beyond the first.
	AllowFallbacks *bool
	// RequireParameters keeps the endpoints that declare every parameter of the request (an endpoint that declares
	// none is taken to support them all).
	RequireParameters bool
	Sort              Sort
	// MaxPrice drops the endpoints dearer than it.
	MaxPrice MaxPrice
	// PreferredMaxLatency (seconds to the first token) and PreferredMinThroughput (tokens a second) put the endpoints
	// measured past a cutoff after those within all of them; an endpoint not yet measured is within.
	PreferredMaxLatency, PreferredMinThroughput Percentiles
}

// MaxProviders bounds each list of providers.
const MaxProviders = 256

// Zero reports preferences that say nothing: the model's endpoints in their configured order.
func (p Preferences) Zero() bool {
	return len(p.Order) == 0 && len(p.Only) == 0 && len(p.Ignore) == 0 && p.AllowFallbacks == nil && !p.RequireParameters &&
		p.Sort == Configured && !p.MaxPrice.Set() && !p.PreferredMaxLatency.Set() && !p.PreferredMinThroughput.Set()
}

// Check holds the preferences to their rules, naming the field of the first they break: each list of providers at
// most MaxProviders slugs a database can store, a known sort, cutoffs that are numbers of at least 0.
func (p Preferences) Check() error {
	for _, l := range [...]struct {
		name string
		list []string
	}{{"order", p.Order}, {"only", p.Only}, {"ignore", p.Ignore}} {
		if len(l.list) > MaxProviders {
			return domain.Invalid("provider."+l.name, fmt.Sprintf("must list at most %d providers", MaxProviders))
		}
		for i, s := range l.list {
			if err := domain.CheckText(fmt.Sprintf("provider.%s[%d]", l.name, i), s); err != nil {
				return err
			}
		}
	}
	if p.Sort != Configured && !isSort(p.Sort) {
		return domain.Invalid("provider.sort", "must be price, throughput or latency")
	}
	for _, c := range [...]struct {
		name string
		p    Percentiles
	}{{"preferred_max_latency", p.PreferredMaxLatency}, {"preferred_min_throughput", p.PreferredMinThroughput}} {
		for _, q := range c.p.each() {
			if q.v != nil && (*q.v < 0 || math.IsNaN(*q.v) || math.IsInf(*q.v, 0)) {
				return domain.Invalid("provider."+c.name+"."+q.name, "must be a number of at least 0")
			}
		}
	}
	for _, m := range [...]struct {
		name string
		v    *domain.Micros
	}{{"prompt", p.MaxPrice.Prompt}, {"completion", p.MaxPrice.Completion}} {
		if m.v != nil && *m.v < 0 {
			return domain.Invalid("provider.max_price."+m.name, "must be a price of at least 0")
		}
	}
	return nil
}

func isSort(s Sort) bool {
	for _, known := range Sorts {
		if s == known {
			return true
		}
	}
	return false
}

type percentile struct {
	name string
	v    *float64
	q    func(Quantiles) float64
}

func (p Percentiles) each() [4]percentile {
	return [4]percentile{
		{"p50", p.P50, func(q Quantiles) float64 { return q.P50 }},
		{"p75", p.P75, func(q Quantiles) float64 { return q.P75 }},
		{"p90", p.P90, func(q Quantiles) float64 { return q.P90 }},
		{"p99", p.P99, func(q Quantiles) float64 { return q.P99 }},
	}
}

// atMost reports whether every cutoff set is at least the figure at its percentile; above reports the reverse
// bound (every figure at least its cutoff).
func (p Percentiles) atMost(q Quantiles) bool {
	for _, c := range p.each() {
		if c.v != nil && c.q(q) > *c.v {
			return false
		}
	}
	return true
}

func (p Percentiles) atLeast(q Quantiles) bool {
	for _, c := range p.each() {
		if c.v != nil && c.q(q) < *c.v {
			return false
		}
	}
	return true
}

// Variant splits a model id into the catalog model and the sort its routing variant names: ":floor" sorts by
// price and ":nitro" by throughput, as the reference's variants do. ok is false when id names no such variant.
func Variant(id string) (model string, sort Sort, ok bool) {
	for _, v := range [...]struct {
		suffix string
		sort   Sort
	}{{":floor", ByPrice}, {":nitro", ByThroughput}} {
		if m, found := strings.CutSuffix(id, v.suffix); found && m != "" {
			return m, v.sort, true
		}
	}
	return id, Configured, false
}
