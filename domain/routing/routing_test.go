package routing_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

func usd(s string) *domain.Micros {
	m, err := domain.ParseUSD(s)
	if err != nil {
		panic(err)
	}
	return &m
}

func num(v float64) *float64 { return &v }

func priced(provider, prompt, completion string, params ...string) catalog.Endpoint {
	ep := catalog.Endpoint{Provider: provider, UpstreamModel: provider + "-m",
		Pricing: catalog.Pricing{PerMillionPromptTokens: usd(prompt), PerMillionCompletionTokens: usd(completion)}}
	if params != nil {
		ep.Parameters = &params
	}
	return ep
}

// measured are the figures of the endpoints below: a answers in 0.5 s and streams 100 tokens a second, b in 0.1 s
// and 50, c was never measured.
var measured = map[string]routing.Figures{
	"a": {Latency: routing.Quantiles{P50: .5, P75: .6, P90: .7, P99: 2}, Throughput: routing.Quantiles{P50: 100, P75: 90, P90: 80, P99: 10},
		LatencyKnown: true, ThroughputKnown: true},
	"b": {Latency: routing.Quantiles{P50: .1, P75: .2, P90: .3, P99: .4}, Throughput: routing.Quantiles{P50: 50, P75: 40, P90: 30, P99: 20},
		LatencyKnown: true, ThroughputKnown: true},
}

func figures(ep catalog.Endpoint) routing.Figures { return measured[ep.Provider] }

// names are the plan's endpoints by provider, each rank of several in brackets, and the limit after a slash.
func names(p routing.Plan) string {
	var b strings.Builder
	start := 0
	for i, ep := range p.Endpoints {
		if p.Ranks != nil && slices.Contains(p.Ranks, i) {
			start = i
		}
		group := p.Ranks != nil && groupLen(p.Ranks, i) > 1
		if group && i == start {
			b.WriteString("[")
		}
		b.WriteString(ep.Provider)
		if group && slices.Contains(p.Ranks, i+1) {
			b.WriteString("]")
		}
	}
	if p.Limit > 0 {
		fmt.Fprintf(&b, "/%d", p.Limit)
	}
	return b.String()
}

// groupLen is the length of the rank that holds endpoint i.
func groupLen(ranks []int, i int) int {
	start := 0
	for _, end := range ranks {
		if i < end {
			return end - start
		}
		start = end
	}
	return 0
}

// TestPlan: each preference narrows and orders a model's endpoints as the reference documents it.
func TestPlan(t *testing.T) {
	t.Parallel()
	a, b, c := priced("a", "1", "1", "tools", "temperature"), priced("b", "3", "3", ""), priced("c", "2", "2")
	*b.Parameters = nil // b declares it supports no parameter
	eps := []catalog.Endpoint{a, b, c}
	no := false
	for _, tc := range []struct {
		name   string
		prefs  routing.Preferences
		params []string
		want   string // the plan (see names), or the field a 404 names
	}{
		{"none: the configured order", routing.Preferences{}, nil, "abc"},
		{"order, then the others", routing.Preferences{Order: []string{"C", "a"}}, nil, "cab"},
		{"only and ignore", routing.Preferences{Only: []string{"b", "c"}, Ignore: []string{"B"}}, nil, "c"},
		{"nothing left", routing.Preferences{Only: []string{"x"}}, nil, "provider"},
		{"no fallbacks past the order", routing.Preferences{Order: []string{"b"}, AllowFallbacks: &no}, nil, "b"},
		{"no fallbacks: the first", routing.Preferences{AllowFallbacks: &no}, nil, "abc/1"},
		{"no fallbacks, order names none", routing.Preferences{Order: []string{"x"}, AllowFallbacks: &no}, nil, "provider"},
		{"sort by price", routing.Preferences{Sort: routing.ByPrice}, nil, "acb"},
		{"sort by latency: unmeasured last", routing.Preferences{Sort: routing.ByLatency}, nil, "bac"},
		{"sort by throughput: unmeasured last", routing.Preferences{Sort: routing.ByThroughput}, nil, "abc"},
		{"order before the sort", routing.Preferences{Order: []string{"b"}, Sort: routing.ByPrice}, nil, "bac"},
		{"max_price filters", routing.Preferences{MaxPrice: routing.MaxPrice{Prompt: usd("2")}}, nil, "ac"},
		{"max_price at the price", routing.Preferences{MaxPrice: routing.MaxPrice{Prompt: usd("3"), Completion: usd("1")}}, nil, "a"},
		{"max_price refuses", routing.Preferences{MaxPrice: routing.MaxPrice{Completion: usd("0.5")}}, nil, "provider.max_price"},
		{"require_parameters keeps who declares them, or none", routing.Preferences{RequireParameters: true}, []string{"tools"}, "ac"},
		{"require_parameters with none set", routing.Preferences{RequireParameters: true}, nil, "abc"},
		{"require_parameters refuses", routing.Preferences{RequireParameters: true, Ignore: []string{"c"}}, []string{"seed"},
			"provider.require_parameters"},
		{"preferred_max_latency: the slow after", routing.Preferences{PreferredMaxLatency: routing.Percentiles{P50: num(.3)}}, nil, "bca"},
		{"preferred_max_latency at p99", routing.Preferences{PreferredMaxLatency: routing.Percentiles{P99: num(1)}}, nil, "bca"},
		{"preferred_max_latency every endpoint meets", routing.Preferences{PreferredMaxLatency: routing.Percentiles{P50: num(1)}}, nil, "abc"},
		{"preferred_min_throughput: the slow after", routing.Preferences{PreferredMinThroughput: routing.Percentiles{P50: num(80)}}, nil, "acb"},
		{"preferred_min_throughput at p90", routing.Preferences{PreferredMinThroughput: routing.Percentiles{P50: num(10), P90: num(35)}}, nil, "acb"},
		{"a preference past the sort", routing.Preferences{Sort: routing.ByLatency, PreferredMinThroughput: routing.Percentiles{P50: num(80)}},
			nil, "acb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := tc.prefs.Plan("m", eps, figures, tc.params)
			got := names(plan)
			if err != nil {
				var de *domain.Error
				if !errors.As(err, &de) || de.Kind != domain.KindNotFound || !strings.HasPrefix(de.Msg, tc.want+": ") {
					t.Fatalf("error %v, want a 404 naming %s", err, tc.want)
				}
				got = fmt.Sprint(de.Meta["field"])
			}
			if got != tc.want {
				t.Fatalf("plan %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPlanRanks: endpoints of one configured rank, or whose sort keys are equal, are one rank, which the gateway
// balances by weight; an ordered provider is a rank of its own.
func TestPlanRanks(t *testing.T) {
	t.Parallel()
	ranked := func(rank int, ep catalog.Endpoint) catalog.Endpoint { ep.Rank = rank; return ep }
	a, b, c, d := priced("a", "1", "1"), priced("b", "1", "1"), priced("c", "2", "2"), priced("d", "1", "1")
	for _, tc := range []struct {
		name  string
		eps   []catalog.Endpoint
		prefs routing.Preferences
		want  string
	}{
		{"each its own rank", []catalog.Endpoint{a, b, c}, routing.Preferences{}, "abc"},
		{"configured ranks", []catalog.Endpoint{ranked(1, a), ranked(1, b), ranked(2, c)}, routing.Preferences{}, "[ab]c"},
		{"configured ranks, filtered", []catalog.Endpoint{ranked(1, a), ranked(1, b), ranked(2, c)},
			routing.Preferences{Ignore: []string{"x"}}, "[ab]c"},
		{"equal prices", []catalog.Endpoint{c, a, b, d}, routing.Preferences{Sort: routing.ByPrice}, "[abd]c"},
		{"ordered providers apart", []catalog.Endpoint{c, a, b, d}, routing.Preferences{Sort: routing.ByPrice, Order: []string{"a", "b"}},
			"abdc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := tc.prefs.Plan("m", tc.eps, figures, nil)
			if err != nil || names(plan) != tc.want {
				t.Fatalf("plan %q (%v), want %q", names(plan), err, tc.want)
			}
		})
	}
}

// TestPlanAsItIs: preferences that say nothing leave the model's endpoints as they are, with no copy and no figure
// read: what most calls cost.
func TestPlanAsItIs(t *testing.T) {
	eps := []catalog.Endpoint{priced("a", "1", "1"), priced("b", "1", "1")}
	plan, err := routing.Preferences{}.Plan("m", eps, func(catalog.Endpoint) routing.Figures { panic("figures read") }, nil)
	if err != nil || &plan.Endpoints[0] != &eps[0] || plan.Ranks != nil {
		t.Fatalf("%+v, %v", plan, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = routing.Preferences{}.Plan("m", eps, figures, nil) }); n > raceSlack {
		t.Fatalf("%v allocations", n)
	}
}

func TestVariant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id, model string
		sort      routing.Sort
		ok        bool
	}{
		{"acme/m:floor", "acme/m", routing.ByPrice, true},
		{"acme/m:nitro", "acme/m", routing.ByThroughput, true},
		{"acme/m", "acme/m", routing.Configured, false},
		{"acme/m:free", "acme/m:free", routing.Configured, false},
		{":nitro", ":nitro", routing.Configured, false},
	} {
		model, sort, ok := routing.Variant(tc.id)
		if model != tc.model || sort != tc.sort || ok != tc.ok {
			t.Errorf("Variant(%q) = %q, %q, %v", tc.id, model, sort, ok)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	negative := domain.Micros(-1)
	for _, tc := range []struct {
		prefs routing.Preferences
		field string
	}{
		{routing.Preferences{Order: []string{"a"}, Sort: routing.ByLatency, PreferredMaxLatency: routing.Percentiles{P50: num(0)}}, ""},
		{routing.Preferences{Order: make([]string, routing.MaxProviders+1)}, "provider.order"},
		{routing.Preferences{Ignore: []string{"a\x00"}}, "provider.ignore[0]"},
		{routing.Preferences{Sort: "cheap"}, "provider.sort"},
		{routing.Preferences{PreferredMinThroughput: routing.Percentiles{P75: num(-1)}}, "provider.preferred_min_throughput.p75"},
		{routing.Preferences{MaxPrice: routing.MaxPrice{Completion: &negative}}, "provider.max_price.completion"},
	} {
		err := tc.prefs.Check()
		var de *domain.Error
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &de) || de.Meta["field"] != tc.field) {
			t.Errorf("%+v: %v, want a 400 naming %q", tc.prefs, err, tc.field)
		}
	}
}
