package app_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// countingKeys is a key store that knows no key and counts its lookups; nothing else is called.
type countingKeys struct {
	ports.KeyStore
	mu      sync.Mutex
	lookups int
}

func (k *countingKeys) Key(context.Context, string) (account.Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lookups++
	return account.Key{}, account.ErrKeyNotFound
}

func (k *countingKeys) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lookups
}

// TestWrongKeysAreRemembered: a wrong secret sent again costs no lookup until the TTL passes or a key with its
// hash is created (here: any replica's notification).
func TestWrongKeysAreRemembered(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	keys := &countingKeys{}
	a := app.NewAccounts(nil, keys, nil, nil, nil, app.OneProcess{}, ports.NoMetrics{}, app.Env{Now: clock}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	wrong := "sk-sb-v1-wrong"
	steps := []struct {
		name    string
		before  func()
		lookups int
	}{
		{"first try reads the store", func() {}, 1},
		{"second try is remembered", func() {}, 1},
		{"another wrong key reads the store", func() { _, _ = a.Authenticate(ctx, "sk-sb-v1-other") }, 2},
		{"a key created with the hash is read again", func() {
			a.Invalidate(ports.Change{Kind: ports.KeyChanged, ID: account.HashSecret(wrong)})
		}, 3},
		{"remembered again", func() {}, 3},
		{"after the TTL it is read again", func() { mu.Lock(); now = now.Add(time.Minute); mu.Unlock() }, 4},
	}
	for _, s := range steps {
		s.before()
		if _, err := a.Authenticate(ctx, wrong); err != account.ErrUnauthenticated { //nolint:errorlint // the sentinel itself
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := keys.count(); got != s.lookups {
			t.Fatalf("%s: %d lookups, want %d", s.name, got, s.lookups)
		}
	}
}
