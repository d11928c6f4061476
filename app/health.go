package app

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// window is the last windowSize samples of a figure, in the order they came (ring) and sorted (for percentiles):
// adding one moves at most windowSize values, and reading a percentile is an index.
type window struct {
	ring   [windowSize]float64
	sorted []float64
	next   int
}

// windowSize is how many recent samples an endpoint's figures are over.
const windowSize = 100

func (w *window) add(v float64) {
	if len(w.sorted) == windowSize {
		old := w.ring[w.next]
		i, _ := slices.BinarySearch(w.sorted, old)
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
	w.ring[w.next] = v
	w.next = (w.next + 1) % windowSize
	i, _ := slices.BinarySearch(w.sorted, v)
	w.sorted = slices.Insert(w.sorted, i, v)
}

// quantiles are the window's percentiles (nearest rank); zero when it holds none.
func (w *window) quantiles() routing.Quantiles {
	n := len(w.sorted)
	if n == 0 {
		return routing.Quantiles{}
	}
	at := func(p float64) float64 { return w.sorted[max(int(math.Ceil(p*float64(n)))-1, 0)] }
	return routing.Quantiles{P50: at(.5), P75: at(.75), P90: at(.9), P99: at(.99)}
}

func (w *window) sum() float64 {
	var s float64
	for _, v := range w.sorted {
		s += v
	}
	return s
}

// breaker is an endpoint's circuit breaker: closed, it lets calls through; open, it skips the endpoint until its
// cool-down is over; then half open, it lets one call through, a probe, whose success closes it and whose failure
// opens it again for another cool-down.
type breaker int

const (
	closed breaker = iota
	halfOpen
	open
)

var breakerNames = [...]string{closed: "closed", halfOpen: "half_open", open: "open"}

// outcome is what an attempt says of an endpoint's health: it answered, it failed (the provider's fault: an error
// status, a timeout, an overload, a broken connection or stream), or nothing (the caller's input refused, the
// caller gone, a rate limit, which its account's cool-down answers).
type outcome int

const (
	neutral outcome = iota
	succeeded
	failed
)

// endpointHealth is what this process measured of one upstream endpoint, and its breaker.
type endpointHealth struct {
	up catalog.Upstream
	// wrr is the endpoint's current weight in the smooth weighted round robin that balances its rank (guarded by
	// the Router's mu, not by this mu).
	wrr int

	mu         sync.Mutex
	latency    window // seconds to the first token or byte
	throughput window // tokens a second
	// recent are the last attempts' outcomes (true: failed), len(recent) of them up to windowSize; next is where the
	// next goes, and nFailed how many of them failed.
	recent  [windowSize]bool
	nRecent int
	next    int
	nFailed int
	// inARow are the failures since the last success.
	inARow int
	state  breaker
	until  time.Time // the end of an open breaker's cool-down
	// probing says a half-open breaker's probe is in flight, since probed: a probe that never ended (its call
	// panicked) lets another through after a cool-down.
	probing bool
	probed  time.Time
	figures routing.Figures
}

// cooling reports whether the endpoint's breaker skips it at now, and until when.
func (h *endpointHealth) cooling(now time.Time) (bool, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == open && now.Before(h.until), h.until
}

// begin claims an attempt at the endpoint: false when its breaker skips it (cooling, or its probe in flight);
// probe says the attempt is the probe of a breaker whose cool-down is over.
func (h *endpointHealth) begin(now time.Time, cooldown time.Duration) (probe, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.state == closed:
		return false, true
	case h.state == open && now.Before(h.until), h.state == halfOpen && h.probing && now.Before(h.probed.Add(cooldown)):
		return false, false
	}
	h.state, h.probing, h.probed = halfOpen, true, now
	return true, true
}

// end takes an attempt's outcome: a success closes the breaker, Failures failures in a row (or a failed probe) open
// it for the cool-down. A probe that ends with no outcome lets the next call probe.
func (h *endpointHealth) end(o outcome, probe bool, latency time.Duration, now time.Time, cfg HealthConfig) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if probe {
		h.probing = false
	}
	switch o {
	case succeeded:
		h.remember(false)
		h.inARow, h.state = 0, closed
		if latency > 0 {
			h.latency.add(latency.Seconds())
			h.figures.Latency, h.figures.LatencyKnown = h.latency.quantiles(), true
		}
	case failed:
		h.remember(true)
		h.inARow++
		if probe || h.state == closed && h.inARow >= cfg.Failures {
			h.state, h.until = open, now.Add(cfg.Cooldown)
		}
	}
}

// streamed takes a delivered answer's throughput (tokens a second), when it has one.
func (h *endpointHealth) streamed(tokensPerSecond float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.throughput.add(tokensPerSecond)
	h.figures.Throughput, h.figures.ThroughputKnown = h.throughput.quantiles(), true
}

func (h *endpointHealth) remember(fail bool) {
	if h.nRecent == windowSize && h.recent[h.next] {
		h.nFailed--
	}
	h.recent[h.next] = fail
	h.next = (h.next + 1) % windowSize
	h.nRecent = min(h.nRecent+1, windowSize)
	if fail {
		h.nFailed++
	}
}

func (h *endpointHealth) read() routing.Figures {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.figures
}

// accountHealth is one of a provider's accounts (API keys): its weight among them, and until when its upstream
// said it is rate limited (429 with Retry-After).
type accountHealth struct {
	provider string
	// client is the account's key in the provider registry (catalog.Endpoint.Client), number its place among the
	// provider's accounts, from 1.
	client string
	number int
	weight int
	wrr    int // guarded by the Router's mu

	mu      sync.Mutex
	limited time.Time
}

func (a *accountHealth) limitedAt(now time.Time) (bool, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.limited), a.limited
}

func (a *accountHealth) rateLimited(until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if until.After(a.limited) {
		a.limited = until
	}
}
