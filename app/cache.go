package app

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// cacheTTL is how long a looked-up key or guardrail assignment is trusted before it is read again. Changes made
// through this process invalidate at once, and every other replica is notified (ports.ChangeNotifier); the TTL
// is the safety net for a notification that was missed.
const cacheTTL = 3 * time.Second

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

// cacheMaxEntries bounds every cache: a flood of distinct keys (wrong secrets, say) cannot grow one without end.
const cacheMaxEntries = 100_000

// ttlCache keeps values for a while; it takes the clock from the use case, and sweeps expired entries as it grows.
// Full of live entries, it caches nothing more (those values are read again next time) and sweeps at most once
// per TTL.
type ttlCache[K comparable, V any] struct {
	// name and metrics report each lookup's hit or miss.
	name    string
	metrics ports.Metrics
	now     func() time.Time
	ttl     time.Duration
	max     int
	mu      sync.Mutex
	m       map[K]ttlEntry[V]
	sweep   int
	swept   time.Time
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[K comparable, V any](name string, metrics ports.Metrics, now func() time.Time, ttl time.Duration) *ttlCache[K, V] {
	return &ttlCache[K, V]{name: name, metrics: metrics, now: now, ttl: ttl, max: cacheMaxEntries, m: map[K]ttlEntry[V]{},
		sweep: 1024}
}

func (c *ttlCache[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	ok = ok && c.now().Before(e.expires)
	c.mu.Unlock()
	c.metrics.CacheLookup(c.name, ok)
	if !ok {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.m) >= c.sweep || len(c.m) >= c.max && now.Sub(c.swept) >= c.ttl {
		for key, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, key)
			}
		}
		c.sweep, c.swept = max(1024, 2*len(c.m)), now
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		return
	}
	c.m[k] = ttlEntry[V]{v: v, expires: now.Add(c.ttl)}
}

func (c *ttlCache[K, V]) forget(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
