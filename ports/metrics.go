package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// Metrics is what the gateway tells its operators about its own work: the HTTP adapter reports requests, the
// pipeline its upstream calls, the use cases their queues and caches. Implementations are safe for concurrent use
// and cheap on the request path. Every label is from a closed or configured set (route patterns, key kinds,
// provider slugs, catalog model ids, outcomes): never a key, an id or a caller's text.
type Metrics interface {
	// Request is one HTTP request answered.
	Request(r RequestMetric)
	// Upstream is one attempt at a provider's endpoint for a catalog model: its outcome (UpstreamOK or the
	// failure's class, see OutcomeOf) and how long until the provider answered or failed.
	Upstream(provider, model, outcome string, took time.Duration)
	// Failover is the pipeline leaving a failed provider for the model's next endpoint.
	Failover(provider, model string)
	// ImplausibleUsage is a call whose provider reported a usage the call could not have used: billed at the
	// gateway's estimate instead.
	ImplausibleUsage(provider, model string)
	// Overhead is the time the gateway itself added before an answer could start: the time from the request's
	// arrival to the first byte minus the time spent waiting for upstreams.
	Overhead(modality string, d time.Duration)
	// RateLimited is a request the gateway's own rate limit refused.
	RateLimited()
	// CacheLookup is one lookup in a named in-process cache ("keys", "guardrails").
	CacheLookup(cache string, hit bool)
	// RecordsWritten counts generation records stored, RecordsQuarantined those the database refused (kept in the
	// spool's quarantine for an operator).
	RecordsWritten(n int)
	RecordsQuarantined(n int)
	// Holds moves the number of guardrail budget holds reserved and not yet settled.
	Holds(delta int)
	// Depth registers a queue whose length is read at each scrape: "recorder", the generation records in the spool
	// not yet written. The spool holds nothing else to count, so it is no queue of its own.
	Depth(queue string, length func() int)
	// Spool registers the spool whose fill is read at each scrape: the bytes of the entries not yet written, and
	// the bound at which new inference calls are refused (503 spool_full).
	Spool(stats func() SpoolStats)
}

// RequestMetric is one answered HTTP request.
type RequestMetric struct {
	// Route is the matched route pattern ("/api/v1/keys/:hash"), "" when none matched.
	Route, Method string
	Status        int
	// KeyKind is "management", "inference" or "none" (not authenticated).
	KeyKind string
	// Bytes is the size of the response body; Took the time until the handler returned.
	Bytes int64
	Took  time.Duration
}

// UpstreamOK is the outcome of an upstream attempt that answered.
const UpstreamOK = "ok"

// Outcome is the failure's class as a metric label: rate_limited, timeout, overloaded, invalid or error.
func (e *UpstreamError) Outcome() string {
	switch e.Kind {
	case domain.KindRateLimited:
		return "rate_limited"
	case domain.KindTimeout:
		return "timeout"
	case domain.KindOverloaded:
		return "overloaded"
	case domain.KindInvalid:
		return "invalid"
	}
	return "error"
}

// NoMetrics discards everything: metrics turned off, or a use case built without them.
type NoMetrics struct{}

var _ Metrics = NoMetrics{}

func (NoMetrics) Request(RequestMetric)                          {}
func (NoMetrics) Upstream(string, string, string, time.Duration) {}
func (NoMetrics) Failover(string, string)                        {}
func (NoMetrics) ImplausibleUsage(string, string)                {}
func (NoMetrics) Overhead(string, time.Duration)                 {}
func (NoMetrics) RateLimited()                                   {}
func (NoMetrics) CacheLookup(string, bool)                       {}
func (NoMetrics) RecordsWritten(int)                             {}
func (NoMetrics) RecordsQuarantined(int)                         {}
func (NoMetrics) Holds(int)                                      {}
func (NoMetrics) Depth(string, func() int)                       {}
func (NoMetrics) Spool(func() SpoolStats)                        {}

type arrivalKey struct{}

// WithArrival marks a request's context with the time the request arrived, from which the pipeline measures the
// time the gateway adds (Metrics.Overhead).
func WithArrival(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, arrivalKey{}, at)
}

// Arrival is the time ctx's request arrived, if the HTTP adapter said.
func Arrival(ctx context.Context) (time.Time, bool) {
	at, ok := ctx.Value(arrivalKey{}).(time.Time)
	return at, ok
}
