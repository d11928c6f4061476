package app_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// consoleFakes are the console's ports in memory: keys by hash (authenticated by secret = hash), and sessions.
type consoleFakes struct {
	ports.KeyStore
	mu       sync.Mutex
	keys     map[string]account.Key
	sessions map[string]ports.ConsoleSession
}

func (f *consoleFakes) Authenticate(_ context.Context, secret string) (account.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[secret]
	if !ok || k.Disabled {
		return account.Principal{}, account.ErrUnauthenticated
	}
	return account.Principal{KeyHash: k.Hash, Management: k.Management}, nil
}

func (f *consoleFakes) Key(_ context.Context, hash string) (account.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[hash]
	if !ok {
		return account.Key{}, account.ErrKeyNotFound
	}
	return k, nil
}

func (f *consoleFakes) CreateSession(_ context.Context, s ports.ConsoleSession) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[s.TokenHash] = s
	return nil
}

func (f *consoleFakes) Session(_ context.Context, tokenHash string) (ports.ConsoleSession, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[tokenHash]
	if !ok {
		return ports.ConsoleSession{}, account.ErrUnauthenticated
	}
	return s, nil
}

func (f *consoleFakes) DeleteSession(_ context.Context, tokenHash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, tokenHash)
	return nil
}

func (f *consoleFakes) DeleteExpiredSessions(_ context.Context, before time.Time, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	maps.DeleteFunc(f.sessions, func(_ string, s ports.ConsoleSession) bool { return s.ExpiresAt.Before(before) })
	return nil
}

// TestConsoleSessions: only a live management key signs in; a session ends when it expires, when it is signed out,
// or when its key is disabled, deleted or no longer a management key; the store keeps no secret.
func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		after  func(f *consoleFakes, c *app.Console, token string) // what happens after signing in
		elapse time.Duration
		want   error
	}{
		{"live", nil, 0, nil},
		{"just before expiry", nil, app.ConsoleSessionTTL - time.Second, nil},
		{"expired", nil, app.ConsoleSessionTTL, account.ErrUnauthenticated},
		{"signed out", func(_ *consoleFakes, c *app.Console, token string) {
			if err := c.SignOut(context.Background(), token); err != nil {
				t.Fatal(err)
			}
		}, 0, account.ErrUnauthenticated},
		{"key disabled", func(f *consoleFakes, _ *app.Console, _ string) {
			k := f.keys["admin"]
			k.Disabled = true
			f.keys["admin"] = k
		}, 0, account.ErrUnauthenticated},
		{"key deleted", func(f *consoleFakes, _ *app.Console, _ string) { delete(f.keys, "admin") }, 0, account.ErrUnauthenticated},
		{"key no longer manages", func(f *consoleFakes, _ *app.Console, _ string) {
			k := f.keys["admin"]
			k.Management = false
			f.keys["admin"] = k
		}, 0, account.ErrUnauthenticated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := start
			f := &consoleFakes{sessions: map[string]ports.ConsoleSession{}, keys: map[string]account.Key{
				"admin": {Hash: "admin", Name: "admin", Management: true}, "app": {Hash: "app", Name: "app"}}}
			c := app.NewConsole(f, f, f, app.Env{Now: func() time.Time { return now }})
			ctx := context.Background()
			if _, _, err := c.SignIn(ctx, "app"); !errors.Is(err, account.ErrManagementOnly) {
				t.Fatalf("an inference key signed in: %v", err)
			}
			if _, _, err := c.SignIn(ctx, "nope"); !errors.Is(err, account.ErrUnauthenticated) {
				t.Fatalf("an unknown key signed in: %v", err)
			}
			token, expires, err := c.SignIn(ctx, "admin")
			if err != nil || !expires.Equal(start.Add(app.ConsoleSessionTTL)) {
				t.Fatalf("sign in: %v, expires %v", err, expires)
			}
			for h, s := range f.sessions {
				if h != account.HashSecret(token) || s.KeyHash != "admin" {
					t.Fatalf("stored session %q: %+v", h, s)
				}
			}
			if tt.after != nil {
				tt.after(f, c, token)
			}
			now = now.Add(tt.elapse)
			p, err := c.Resume(ctx, token)
			if !errors.Is(err, tt.want) || err == nil && (p.KeyHash != "admin" || !p.Management) {
				t.Fatalf("Resume: %+v, %v; want %v", p, err, tt.want)
			}
		})
	}
}
