package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cacheRig is a cache whose clock, source and background refreshes the test drives: a refresh runs when the
// test runs it, so every step is deterministic.
type cacheRig struct {
	now     time.Time
	value   int
	err     error
	reads   int
	during  func() // runs inside the next read, after the value was taken: a change committed meanwhile
	pending []func()
	log     bytes.Buffer
	c       *ttlCache[int, int]
}

func newCacheRig() *cacheRig {
	r := &cacheRig{now: t0, value: 1}
	r.c = newTTLCache("test", ports.NoMetrics{}, slog.New(slog.NewTextHandler(&r.log, nil)),
		func() time.Time { return r.now }, r.read)
	r.c.spawn = func(f func()) { r.pending = append(r.pending, f) }
	return r
}

func (r *cacheRig) read(context.Context, int) (int, error) {
	r.reads++
	v, err := r.value, r.err
	if during := r.during; during != nil {
		r.during = nil
		during()
	}
	return v, err
}

func (r *cacheRig) runPending() {
	run := r.pending
	r.pending = nil
	for _, f := range run {
		f()
	}
}

// TestTTLCacheServesStaleAndRefreshes walks one entry through its life: served fresh, served stale while one
// background refresh reads it again, kept through failed refreshes until its stale bound, then read on the
// caller's path; and an invalidation that comes while a read is in flight (a refresh, or a read on the caller's
// path) wins over it.
func TestTTLCacheServesStaleAndRefreshes(t *testing.T) {
	t.Parallel()
	r := newCacheRig()
	fail := errors.New("database unreachable")
	steps := []struct {
		name    string
		before  func()
		want    int
		reads   int
		pending int
		logged  string // levels of what was logged so far
	}{
		{"a first call reads", func() {}, 1, 1, 0, ""},
		{"younger than fresh: served", func() { r.now = t0.Add(2 * time.Second) }, 1, 1, 0, ""},
		{"older than fresh: served at once, refresh started", func() {
			r.value, r.now = 2, t0.Add(4*time.Second)
		}, 1, 1, 1, ""},
		{"one refresh per entry at a time, however long it takes", func() { r.now = t0.Add(7 * time.Second) }, 1, 1, 1, ""},
		{"the refresh stores what it read (then, so stale at once)", r.runPending, 2, 2, 1, ""},
		{"the database away", func() { r.err, r.now = fail, t0.Add(8*time.Second) }, 2, 2, 1, ""},
		{"a failed refresh keeps the value, logged", r.runPending, 2, 3, 0, "WARN"},
		{"the next refresh is tried fresh later", func() { r.now = t0.Add(10 * time.Second) }, 2, 3, 1, "WARN"},
		{"another failure is not logged again", r.runPending, 2, 4, 0, "WARN"},
		{"the database back, a refresh started", func() {
			r.err, r.value, r.now = nil, 3, t0.Add(14*time.Second)
		}, 2, 4, 1, "WARN"},
		{"which succeeds, logged", r.runPending, 3, 5, 0, "WARN INFO"},
		{"past stale the call waits for the read", func() { r.value, r.now = 4, t0.Add(44*time.Second) }, 4, 6, 0, "WARN INFO"},
		{"stale: refresh started", func() { r.now = t0.Add(48 * time.Second) }, 4, 6, 1, "WARN INFO"},
		{"an invalidation during the refresh's read wins over it", func() {
			r.during = func() { r.value = 5; r.c.forget(0) }
			r.runPending()
		}, 5, 8, 0, "WARN INFO"},
		{"past stale, the read on the caller's path gets the old value", func() {
			r.now = t0.Add(90 * time.Second)
			r.during = func() { r.value = 6; r.c.clear() }
		}, 5, 9, 0, "WARN INFO"},
		{"which an invalidation during that read kept out of the cache", func() {}, 6, 10, 0, "WARN INFO"},
	}
	for _, s := range steps {
		s.before()
		got, err := r.c.get(context.Background(), 0)
		if err != nil || got != s.want || r.reads != s.reads || len(r.pending) != s.pending {
			t.Fatalf("%s: got %d %v after %d reads, %d refreshes pending; want %d after %d reads, %d pending",
				s.name, got, err, r.reads, len(r.pending), s.want, s.reads, s.pending)
		}
		if logged := levels(r.log.String()); logged != s.logged {
			t.Fatalf("%s: logged %q, want %q:\n%s", s.name, logged, s.logged, r.log.String())
		}
	}
}

// levels are the levels of the log's records, in order.
func levels(log string) string {
	var out []string
	for _, f := range strings.Fields(log) {
		if l, ok := strings.CutPrefix(f, "level="); ok {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// TestTTLCacheReadFails: a read on the caller's path that fails is the caller's error, and nothing is cached.
func TestTTLCacheReadFails(t *testing.T) {
	t.Parallel()
	r := newCacheRig()
	r.err = errors.New("database unreachable")
	if _, err := r.c.get(context.Background(), 0); !errors.Is(err, r.err) {
		t.Fatalf("got %v, want the read's error", err)
	}
	r.err = nil
	if v, err := r.c.get(context.Background(), 0); v != 1 || err != nil || r.reads != 2 {
		t.Fatalf("after a failed read: %d %v, %d reads", v, err, r.reads)
	}
}

// TestTTLCacheBounded: full of live entries the cache takes no more; once they are past stale, room is made
// again (a sweep at most once per fresh).
func TestTTLCacheBounded(t *testing.T) {
	t.Parallel()
	r := newCacheRig()
	r.c.max, r.c.sweep = 3, 3
	for i := range 5 {
		r.c.put(i, i, r.now)
	}
	if len(r.c.m) != 3 {
		t.Fatalf("%d entries, want the bound 3", len(r.c.m))
	}
	if _, err := r.c.get(context.Background(), 4); err != nil || r.reads != 1 {
		t.Fatalf("an entry past the bound was kept: %v, %d reads", err, r.reads)
	}
	r.now = r.now.Add(cacheStale)
	r.c.put(9, 9, r.now)
	if v, err := r.c.get(context.Background(), 9); err != nil || v != 9 || len(r.c.m) != 1 {
		t.Fatalf("past stale: %v %v, %d entries", v, err, len(r.c.m))
	}
}

// keyStore holds one key, which the test disables or deletes without telling the cache (a lost notification).
type keyStore struct {
	ports.KeyStore
	ports.Directory
	key     account.Key
	deleted bool
}

func (s *keyStore) Key(context.Context, string) (account.Key, error) {
	if s.deleted {
		return account.Key{}, account.ErrKeyNotFound
	}
	return s.key, nil
}

func (s *keyStore) Organization(context.Context) (account.Organization, error) {
	return account.Organization{ID: "org"}, nil
}

// TestRevokedKeyStopsWithoutNotification: a key disabled or deleted where this replica heard nothing still
// authenticates the call that finds its entry stale, and none after that call's refresh.
func TestRevokedKeyStopsWithoutNotification(t *testing.T) {
	t.Parallel()
	const secret = "sk-sb-v1-revoked"
	for _, tt := range []struct {
		name   string
		revoke func(*keyStore)
	}{
		{"disabled", func(s *keyStore) { s.key.Disabled = true }},
		{"deleted", func(s *keyStore) { s.deleted = true }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := t0
			store := &keyStore{key: account.Key{Hash: account.HashSecret(secret), Name: "k"}}
			a := NewAccounts(store, store, nil, nil, nil, OneProcess{}, ports.NoMetrics{}, Env{Now: func() time.Time { return now }},
				slog.New(slog.DiscardHandler))
			var pending []func()
			a.keyCache.spawn = func(f func()) { pending = append(pending, f) }
			steps := []struct {
				name   string
				before func()
				want   error
			}{
				{"cached", func() {}, nil},
				{"revoked unheard, the stale entry serves this call", func() {
					tt.revoke(store)
					now = now.Add(cacheFresh)
				}, nil},
				{"its refresh saw the revocation", func() {
					for _, f := range pending {
						f()
					}
				}, account.ErrUnauthenticated},
			}
			for _, s := range steps {
				s.before()
				if _, err := a.Authenticate(context.Background(), secret); !errors.Is(err, s.want) {
					t.Fatalf("%s: %v, want %v", s.name, err, s.want)
				}
			}
		})
	}
}
