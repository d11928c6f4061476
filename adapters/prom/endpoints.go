package prom

import (
	"math"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-ai/switchboard/domain/routing"
	"github.com/switchboard-ai/switchboard/ports"
)

// Endpoints serves each upstream endpoint's health, read at each scrape (nothing before one is registered).
func (m *Metrics) Endpoints(h ports.EndpointHealth) {
	m.endpoints.mu.Lock()
	defer m.endpoints.mu.Unlock()
	m.endpoints.health = h
}

// endpointHealth reads the endpoints' breakers, figures and accounts at each scrape.
type endpointHealth struct {
	breaker, errors, latency, throughput, account *prometheus.Desc
	mu                                            sync.Mutex
	health                                        ports.EndpointHealth
}

func newEndpointHealth() *endpointHealth {
	labels := []string{"provider", "endpoint"}
	return &endpointHealth{
		breaker: prometheus.NewDesc(namespace+"_endpoint_breaker_state",
			"Each upstream endpoint's circuit breaker: 0 closed (calls go through), 1 half open (its cool-down is over: the next call probes it), 2 open (skipped).",
			labels, nil),
		errors: prometheus.NewDesc(namespace+"_endpoint_error_ratio",
			"The share of an endpoint's recent attempts (at most 100) that failed: an error status, a timeout, an overload, a broken connection or stream.",
			labels, nil),
		latency: prometheus.NewDesc(namespace+"_endpoint_latency_seconds",
			"An endpoint's time to its first token or byte over its recent answers (at most 100), at the quantiles routing reads (provider.sort latency, preferred_max_latency).",
			labels, nil),
		throughput: prometheus.NewDesc(namespace+"_endpoint_throughput_tokens_per_second",
			"The tokens a second an endpoint streamed over its recent answers (at most 100), at the quantiles routing reads (provider.sort throughput, :nitro, preferred_min_throughput).",
			labels, nil),
		account: prometheus.NewDesc(namespace+"_provider_account_rate_limited",
			"1 while a provider's account (API key, numbered in configuration order) is skipped for the Retry-After of its upstream's last 429, else 0.",
			[]string{"provider", "account"}, nil),
	}
}

func (e *endpointHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.breaker
	ch <- e.errors
	ch <- e.latency
	ch <- e.throughput
	ch <- e.account
}

var breakerValues = map[string]float64{"closed": 0, "half_open": 1, "open": 2}

func (e *endpointHealth) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	h := e.health
	e.mu.Unlock()
	if h == nil {
		return
	}
	accounts := map[string]bool{}
	for _, s := range h.Endpoints() {
		ch <- prometheus.MustNewConstMetric(e.breaker, prometheus.GaugeValue, breakerValues[s.Breaker], s.Provider, s.ID)
		ch <- prometheus.MustNewConstMetric(e.errors, prometheus.GaugeValue, s.ErrorRate, s.Provider, s.ID)
		ch <- prometheus.MustNewConstSummary(e.latency, uint64(s.LatencySamples), s.LatencySum,
			quantiles(s.Figures.Latency, s.Figures.LatencyKnown), s.Provider, s.ID)
		ch <- prometheus.MustNewConstSummary(e.throughput, uint64(s.ThroughputSamples), s.ThroughputSum,
			quantiles(s.Figures.Throughput, s.Figures.ThroughputKnown), s.Provider, s.ID)
		if accounts[s.Provider] {
			continue
		}
		accounts[s.Provider] = true
		for _, a := range s.Accounts {
			limited := 0.0
			if a.RateLimited {
				limited = 1
			}
			ch <- prometheus.MustNewConstMetric(e.account, prometheus.GaugeValue, limited, s.Provider, strconv.Itoa(a.Number))
		}
	}
}

// quantiles are a summary's quantiles: NaN, as a summary with no observations has, until one is measured.
func quantiles(q routing.Quantiles, known bool) map[float64]float64 {
	if !known {
		nan := math.NaN()
		return map[float64]float64{.5: nan, .75: nan, .9: nan, .99: nan}
	}
	return map[float64]float64{.5: q.P50, .75: q.P75, .9: q.P90, .99: q.P99}
}
