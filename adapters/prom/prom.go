// Package prom is the Prometheus adapter of the metrics port: it counts what the gateway reports and serves it,
// with the Go runtime's and the process's own metrics, in Prometheus' text format.
package prom

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-ai/switchboard/ports"
)

// Metrics is one gateway's metrics, in a registry of its own (so that several gateways in one process, as in
// tests, do not share counters).
type Metrics struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	responseBytes *prometheus.CounterVec
	overhead      *prometheus.HistogramVec
	upstream      *prometheus.CounterVec
	upstreamTime  *prometheus.HistogramVec
	failovers     *prometheus.CounterVec
	implausible   *prometheus.CounterVec
	rateLimited   prometheus.Counter
	cache         *prometheus.CounterVec
	written       prometheus.Counter
	quarantined   prometheus.Counter
	holds         prometheus.Gauge
	queues        *queues
	spool         *spoolFill
	endpoints     *endpointHealth

	// The children of the vectors every call counts in, by their label values.
	requestSeries  series[requestKey, requestChildren]
	bytesSeries    series[string, prometheus.Counter]
	upstreamSeries series[upstreamKey, upstreamChildren]
	overheadSeries series[string, prometheus.Observer]
	cacheSeries    series[cacheKey, prometheus.Counter]
}

type requestKey struct {
	route, method string
	status        int
	keyKind       string
}

type requestChildren struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type upstreamKey struct{ provider, model, outcome string }

type upstreamChildren struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

type cacheKey struct {
	cache string
	hit   bool
}

// series holds the children of vectors by their label values, made the first time a key comes: WithLabelValues
// checks every value is UTF-8, hashes them and looks the child up under the vector's lock on each call, and a
// call counts in four of them, two on its way from the upstream's answer to its first byte (Upstream, Overhead).
type series[K comparable, C any] struct {
	mu       sync.RWMutex
	children map[K]C
}

// of returns k's children, made by newChildren the first time.
func (s *series[K, C]) of(k K, newChildren func(K) C) C {
	s.mu.RLock()
	c, ok := s.children[k]
	s.mu.RUnlock()
	if ok {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok = s.children[k]; !ok {
		if s.children == nil {
			s.children = map[K]C{}
		}
		c = newChildren(k)
		s.children[k] = c
	}
	return c
}

var _ ports.Metrics = (*Metrics)(nil)

const namespace = "switchboard"

// latencyBuckets span a fast cache hit to a slow upstream (seconds).
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// overheadBuckets are finer: the gateway's own time is tens of microseconds a call when its caches are warm, and a
// millisecond or more when the call waits for a database read (a key's first call).
var overheadBuckets = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}

// New registers every metric, the Go runtime's and the process's included.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method, status and kind of key."},
			[]string{"route", "method", "status", "key_kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "http_request_duration_seconds",
			Help: "Time from a request's arrival until its handler returned (a stream's whole length).", Buckets: latencyBuckets},
			[]string{"route", "method"}),
		responseBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "http_response_bytes_total",
			Help: "Bytes of response bodies sent to callers (streamed audio, video, completions), by route pattern."},
			[]string{"route"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "gateway_overhead_seconds",
			Help:    "Time the gateway added before an answer could start: time to first byte minus the time spent waiting for upstreams.",
			Buckets: overheadBuckets}, []string{"modality"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_requests_total",
			Help: "Calls to upstream providers, by provider, catalog model and outcome (ok, rate_limited, timeout, overloaded, invalid, error)."},
			[]string{"provider", "model", "outcome"}),
		upstreamTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "upstream_latency_seconds",
			Help: "Time until an upstream provider answered (its first bytes) or failed.", Buckets: latencyBuckets},
			[]string{"provider", "model"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_failovers_total",
			Help: "Times the gateway left a failed provider for the model's next endpoint, by the provider it left."},
			[]string{"provider", "model"}),
		implausible: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_implausible_usage_total",
			Help: "Calls whose provider reported a usage the call could not have used, billed at the gateway's estimate instead, by provider and catalog model."},
			[]string{"provider", "model"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "rate_limit_rejections_total",
			Help: "Requests refused by the gateway's own per-key rate limit or token limits (429)."}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "cache_lookups_total",
			Help: "Lookups in in-process caches (keys, guardrails), by result (hit, miss)."}, []string{"cache", "result"}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "generation_records_written_total",
			Help: "Generation records written to the database."}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "generation_records_lost_total",
			Help: "Generation records the database refused, kept in the spool's quarantine (switchboard spool requeue puts them back). Anything but 0 needs an operator: alert on it."}),
		holds: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "guardrail_holds_outstanding",
			Help: "Guardrail budget holds reserved by calls in flight and not settled yet."}),
		queues: &queues{desc: prometheus.NewDesc(namespace+"_queue_depth",
			"Entries waiting in a background queue (recorder: generation records in the spool not yet written to the database).",
			[]string{"queue"}, nil), length: map[string]func() int{}},
		spool: &spoolFill{
			bytes: prometheus.NewDesc(namespace+"_spool_bytes",
				"Bytes of generation entries in the spool not yet written to the database; at switchboard_spool_max_bytes new inference calls get 503 (spool_full).",
				nil, nil),
			max: prometheus.NewDesc(namespace+"_spool_max_bytes",
				"The spool's bound (generations.spool_max_bytes): new inference calls get 503 (spool_full) once switchboard_spool_bytes reaches it.",
				nil, nil)},
		endpoints: newEndpointHealth(),
	}
	m.reg.MustRegister(m.requests, m.duration, m.responseBytes, m.overhead, m.upstream, m.upstreamTime, m.failovers,
		m.implausible, m.rateLimited, m.cache, m.written, m.quarantined, m.holds, m.queues, m.spool, m.endpoints,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *Metrics) Request(r ports.RequestMetric) {
	route := r.Route
	if route == "" {
		route = "unmatched"
	}
	c := m.requestSeries.of(requestKey{route, r.Method, r.Status, r.KeyKind}, func(k requestKey) requestChildren {
		return requestChildren{count: m.requests.WithLabelValues(k.route, k.method, strconv.Itoa(k.status), k.keyKind),
			duration: m.duration.WithLabelValues(k.route, k.method)}
	})
	c.count.Inc()
	c.duration.Observe(r.Took.Seconds())
	if r.Bytes > 0 {
		m.bytesSeries.of(route, func(route string) prometheus.Counter { return m.responseBytes.WithLabelValues(route) }).
			Add(float64(r.Bytes))
	}
}

func (m *Metrics) Upstream(provider, model, outcome string, took time.Duration) {
	c := m.upstreamSeries.of(upstreamKey{provider, model, outcome}, func(k upstreamKey) upstreamChildren {
		return upstreamChildren{count: m.upstream.WithLabelValues(k.provider, k.model, k.outcome),
			latency: m.upstreamTime.WithLabelValues(k.provider, k.model)}
	})
	c.count.Inc()
	c.latency.Observe(took.Seconds())
}

func (m *Metrics) Failover(provider, model string) {
	m.failovers.WithLabelValues(provider, model).Inc()
}

func (m *Metrics) ImplausibleUsage(provider, model string) {
	m.implausible.WithLabelValues(provider, model).Inc()
}

func (m *Metrics) Overhead(modality string, d time.Duration) {
	m.overheadSeries.of(modality, func(modality string) prometheus.Observer { return m.overhead.WithLabelValues(modality) }).
		Observe(max(d, 0).Seconds())
}

func (m *Metrics) RateLimited() { m.rateLimited.Inc() }

func (m *Metrics) CacheLookup(cache string, hit bool) {
	m.cacheSeries.of(cacheKey{cache, hit}, func(k cacheKey) prometheus.Counter {
		result := "miss"
		if k.hit {
			result = "hit"
		}
		return m.cache.WithLabelValues(k.cache, result)
	}).Inc()
}

func (m *Metrics) RecordsWritten(n int)     { m.written.Add(float64(n)) }
func (m *Metrics) RecordsQuarantined(n int) { m.quarantined.Add(float64(n)) }
func (m *Metrics) Holds(delta int)          { m.holds.Add(float64(delta)) }

func (m *Metrics) Depth(queue string, length func() int) {
	m.queues.mu.Lock()
	defer m.queues.mu.Unlock()
	m.queues.length[queue] = length
}

func (m *Metrics) Spool(stats func() ports.SpoolStats) {
	m.spool.mu.Lock()
	defer m.spool.mu.Unlock()
	m.spool.stats = stats
}

// spoolFill reads the registered spool's fill at each scrape (nothing before one is registered).
type spoolFill struct {
	bytes, max *prometheus.Desc
	mu         sync.Mutex
	stats      func() ports.SpoolStats
}

func (s *spoolFill) Describe(ch chan<- *prometheus.Desc) { ch <- s.bytes; ch <- s.max }

func (s *spoolFill) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats == nil {
		return
	}
	st := s.stats()
	ch <- prometheus.MustNewConstMetric(s.bytes, prometheus.GaugeValue, float64(st.Bytes))
	ch <- prometheus.MustNewConstMetric(s.max, prometheus.GaugeValue, float64(st.MaxBytes))
}

// queues reads the registered queue lengths at each scrape.
type queues struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	length map[string]func() int
}

func (q *queues) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queues) Collect(ch chan<- prometheus.Metric) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for name, length := range q.length {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(length()), name)
	}
}
