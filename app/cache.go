package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// cacheFresh is how long a looked-up key or guardrail assignment is served without asking the database again.
// Changes made through this process invalidate at once, and every other replica is notified (ports.ChangeNotifier);
// reading again is the safety net for a notification that was missed.
const cacheFresh = 3 * time.Second

// cacheStale bounds the age of what is served at all. Between cacheFresh and cacheStale a value is served at once
// and read again in the background, so that a caller whose calls come more than cacheFresh apart -- most callers
// -- does not wait for the database on each one; past cacheStale the call waits for the read, as a first call
// does. It is therefore the bound on a change whose notification was lost (a key revoked that way still
// authenticates the calls that come before a background read sees it, for at most this long), and on how long a
// key keeps working through a database that does not answer. 30 s is ten refresh periods, so a caller pacing
// its calls up to about half a minute apart never waits, while a revocation that every notification missed still
// takes effect within a short, fixed time, as a pooled credential's would.
const cacheStale = 30 * time.Second

// Caches are this replica's caches, as the listener for other replicas' changes sees them.
type Caches struct {
	accounts   *Accounts
	guardrails *Guardrails
}

var _ ports.CacheInvalidator = (*Caches)(nil)

func NewCaches(a *Accounts, g *Guardrails) *Caches { return &Caches{accounts: a, guardrails: g} }

func (c *Caches) Invalidate(ch ports.Change) {
	c.accounts.Invalidate(ch)
	c.guardrails.Invalidate(ch)
}

func (c *Caches) Flush() {
	c.accounts.Flush()
	c.guardrails.Flush()
}

// OneProcess is the change notifier of a deployment that runs one process (the embedded SQLite database): the
// use cases drop their own cache entries, and there is nobody else to tell.
type OneProcess struct{}

var _ ports.ChangeNotifier = OneProcess{}

func (OneProcess) Notify(context.Context, ports.Change) {}

// refreshDelay is how long a background refresh waits before it reads: the call that found the entry stale goes
// its way first, rather than sharing the cores (and, on SQLite, the one connection) with the read at its most
// sensitive point, before its upstream request is sent. Measured on the busy 2-core CI machine with speech calls
// 4 s apart (clock advanced, in process): a refresh started at once left the stale call's p50 0.4-0.9 ms slower
// than one 50 ms later, which left it as fast as a call that found its entry fresh. 50 ms more changes nothing to
// what the cache promises, whose periods are seconds.
const refreshDelay = 50 * time.Millisecond

// cacheMaxEntries bounds every cache: a flood of distinct keys (wrong secrets, say) cannot grow one without end.
const cacheMaxEntries = 100_000

// ttlCache keeps what its load function read: younger than fresh, a value is served as it is; older but younger
// than stale, it is still served at once, and one read per entry at a time refreshes it in the background;
// older, or never read, it is read on the caller's path. It takes the clock from the use case, and sweeps entries
// past stale as it grows. Full of live entries, it caches nothing more (those values are read on each call) and
// sweeps at most once per fresh.
//
// An invalidation wins over a read in flight: forget and clear remove the entry a refresh was started for, and
// advance a generation that a read on a caller's path must still see to store its value, so a value read before
// the change cannot come back after it.
type ttlCache[K comparable, V any] struct {
	// name and metrics report each lookup: a hit is served without waiting for the database.
	name    string
	metrics ports.Metrics
	log     *slog.Logger
	now     func() time.Time
	load    func(context.Context, K) (V, error)
	fresh   time.Duration
	stale   time.Duration
	max     int
	// spawn runs a refresh in the background, refreshDelay later; tests run the refreshes when they choose.
	spawn func(f func())

	mu sync.Mutex
	m  map[K]*ttlEntry[V]
	// gen counts invalidations, for the reads on callers' paths.
	gen uint64
	// failing: the last refresh failed. A failure is logged once until a refresh succeeds again, so that a
	// database outage is one warning, not one per entry.
	failing bool
	sweep   int
	swept   time.Time
}

type ttlEntry[V any] struct {
	v V
	// read is when the read that returned v began, or the call that asked for it came (what v says held then,
	// or later); v is served until read + stale.
	read time.Time
	// tried is when the last refresh began (read, unless one failed since): the next one is due fresh later.
	tried      time.Time
	refreshing bool
}

func newTTLCache[K comparable, V any](name string, metrics ports.Metrics, log *slog.Logger, now func() time.Time,
	load func(context.Context, K) (V, error)) *ttlCache[K, V] {
	return &ttlCache[K, V]{name: name, metrics: metrics, log: log, now: now, load: load, fresh: cacheFresh,
		stale: cacheStale, max: cacheMaxEntries, spawn: func(f func()) { time.AfterFunc(refreshDelay, f) },
		m: map[K]*ttlEntry[V]{}, sweep: 1024}
}

// get returns k's value, from the cache while it is younger than stale (refreshing it in the background once it
// is older than fresh), else read now.
func (c *ttlCache[K, V]) get(ctx context.Context, k K) (V, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[k]
	ok = ok && now.Sub(e.read) < c.stale
	refresh := ok && !e.refreshing && now.Sub(e.tried) >= c.fresh
	if refresh {
		e.refreshing, e.tried = true, now
	}
	var v V
	if ok {
		v = e.v
	}
	gen := c.gen
	c.mu.Unlock()
	c.metrics.CacheLookup(c.name, ok)
	if refresh {
		// The refresh outlives the call that started it (its trace and values carried along), but not stale:
		// by then the entry is read on a caller's path anyway.
		c.spawn(func() { c.refresh(context.WithoutCancel(ctx), k, e, now) })
	}
	if ok {
		return v, nil
	}
	v, err := c.load(ctx, k)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen { // else it changed meanwhile: what was read may be the old value
		c.put(k, v, now)
	}
	return v, nil
}

// refresh reads k again for entry e, begun at began. It replaces e only if e is still k's entry: forget, clear or
// a read on a caller's path may have replaced it meanwhile. A value that says the key was revoked or deleted is
// stored like any other, and refuses the next call. A failure keeps e, served until its stale bound, and the
// next refresh is tried fresh after this one began.
func (c *ttlCache[K, V]) refresh(ctx context.Context, k K, e *ttlEntry[V], began time.Time) {
	ctx, cancel := context.WithTimeout(ctx, c.stale)
	defer cancel()
	v, err := c.load(ctx, k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[k] != e {
		return
	}
	e.refreshing = false
	if err != nil {
		if !c.failing {
			c.failing = true
			c.log.WarnContext(ctx, "could not refresh a cached entry: serving what was read before, until it is too old",
				"cache", c.name, "stale_after", c.stale, "err", err)
		}
		return
	}
	if c.failing {
		c.failing = false
		c.log.InfoContext(ctx, "cached entries refresh again", "cache", c.name)
	}
	c.put(k, v, began)
}

// put stores v, read at read, under c.mu.
func (c *ttlCache[K, V]) put(k K, v V, read time.Time) {
	now := c.now()
	if len(c.m) >= c.sweep || len(c.m) >= c.max && now.Sub(c.swept) >= c.fresh {
		for key, e := range c.m {
			if now.Sub(e.read) >= c.stale {
				delete(c.m, key)
			}
		}
		c.sweep, c.swept = max(1024, 2*len(c.m)), now
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		return
	}
	c.m[k] = &ttlEntry[V]{v: v, read: read, tried: read}
}

func (c *ttlCache[K, V]) forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
	c.gen++
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.gen++
}
