package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// ConsoleSessionTTL is how long a console sign-in lasts.
const ConsoleSessionTTL = 12 * time.Hour

// Console is the web console's sign-in: a management key opens a session every replica shares (the console's pages
// read through the management use cases, as the API's routes do).
type Console struct {
	sessions ports.ConsoleSessionStore
	auth     ports.Authenticator
	keys     ports.KeyStore
	env      Env
}

var _ ports.ConsoleService = (*Console)(nil)

func NewConsole(sessions ports.ConsoleSessionStore, auth ports.Authenticator, keys ports.KeyStore, env Env) *Console {
	return &Console{sessions: sessions, auth: auth, keys: keys, env: env}
}

// SignIn opens a session for a management key and returns its token, which only the browser keeps (the store
// keeps its hash), and when it expires. Expired sessions are cleared on the way, a few at a time.
func (c *Console) SignIn(ctx context.Context, secret string) (string, time.Time, error) {
	p, err := c.auth.Authenticate(ctx, secret)
	if err != nil {
		return "", time.Time{}, err
	}
	if !p.Management {
		return "", time.Time{}, account.ErrManagementOnly
	}
	now := c.env.Now()
	if err := c.sessions.DeleteExpiredSessions(ctx, now, 100); err != nil {
		return "", time.Time{}, err
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	token := base64.RawURLEncoding.EncodeToString(b[:])
	expires := now.Add(ConsoleSessionTTL)
	err = c.sessions.CreateSession(ctx, ports.ConsoleSession{TokenHash: account.HashSecret(token), KeyHash: p.KeyHash,
		CreatedAt: now, ExpiresAt: expires})
	if err != nil {
		return "", time.Time{}, err
	}
	return token, expires, nil
}

// Resume is the principal of a session token: account.ErrUnauthenticated once the session expired or ended, or
// its key was disabled, deleted, expired or no longer manages (the key is read from the store on each request, so
// that revoking it on any replica ends its sessions on all).
func (c *Console) Resume(ctx context.Context, token string) (account.Principal, error) {
	if token == "" {
		return account.Principal{}, account.ErrUnauthenticated
	}
	s, err := c.sessions.Session(ctx, account.HashSecret(token))
	if err != nil {
		return account.Principal{}, err
	}
	now := c.env.Now()
	if !now.Before(s.ExpiresAt) {
		return account.Principal{}, account.ErrUnauthenticated
	}
	k, err := c.keys.Key(ctx, s.KeyHash)
	if errors.Is(err, account.ErrKeyNotFound) {
		return account.Principal{}, account.ErrUnauthenticated
	}
	if err != nil {
		return account.Principal{}, err
	}
	if !k.Usable(now) || !k.Management {
		return account.Principal{}, account.ErrUnauthenticated
	}
	return account.Principal{KeyHash: k.Hash, KeyName: k.Name, Management: true, WorkspaceID: k.WorkspaceID,
		CreatorUserID: k.CreatorUserID}, nil
}

// SignOut ends the session of a token.
func (c *Console) SignOut(ctx context.Context, token string) error {
	return c.sessions.DeleteSession(ctx, account.HashSecret(token))
}
