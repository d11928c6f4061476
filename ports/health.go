package ports

import (
	"time"

	"github.com/switchboard-ai/switchboard/domain/routing"
)

// EndpointHealth is what the gateway measured of each upstream endpoint it routes to, for operators: /metrics and
// the console read it. The figures are this process's own (each replica measures the calls it makes).
type EndpointHealth interface {
	// Endpoints are every configured endpoint (a provider's upstream model), in configuration order.
	Endpoints() []EndpointStatus
}

// EndpointStatus is one endpoint's health.
type EndpointStatus struct {
	// Provider is the provider's slug, UpstreamModel the provider's model ("" for a local provider); ID is how
	// generation records name the endpoint (provider/upstream_model).
	Provider, UpstreamModel, ID string
	// Breaker is "closed" (calls go through), "open" (skipped until OpenUntil) or "half_open" (the cool-down is over:
	// the next call is a probe, whose success closes it). FailuresInARow are the failed attempts since the last
	// success.
	Breaker        string
	OpenUntil      time.Time
	FailuresInARow int
	// Attempts are the recent attempts (at most 100) that ErrorRate, the share of them that failed, is over.
	Attempts  int
	ErrorRate float64
	// Figures are the time to the first token or byte (seconds) and the throughput (tokens a second) at p50, p75,
	// p90 and p99 of the recent calls (at most 100 each), LatencySamples and ThroughputSamples how many, and
	// LatencySum and ThroughputSum their sums.
	Figures                           routing.Figures
	LatencySamples, ThroughputSamples int
	LatencySum, ThroughputSum         float64
	Accounts                          []AccountStatus
}

// AccountStatus is one of a provider's accounts (API keys), which calls to its endpoints share by weight.
type AccountStatus struct {
	// Number is the account's place among the provider's keys in the configuration, from 1.
	Number, Weight int
	// RateLimited says it is skipped now, until RateLimitedUntil, when the Retry-After of its upstream's last 429
	// ends (zero when it never was).
	RateLimited      bool
	RateLimitedUntil time.Time
}
