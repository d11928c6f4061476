package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
)

// ConsoleSession is a web console sign-in as stored: the hash of its token (the browser holds the token) and the
// hash of the management key it was opened with.
type ConsoleSession struct {
	TokenHash, KeyHash   string
	CreatedAt, ExpiresAt time.Time
}

// ConsoleSessionStore keeps the console's sessions where every replica reads them.
type ConsoleSessionStore interface {
	CreateSession(ctx context.Context, s ConsoleSession) error
	// Session returns account.ErrUnauthenticated for a token hash that names no session.
	Session(ctx context.Context, tokenHash string) (ConsoleSession, error)
	DeleteSession(ctx context.Context, tokenHash string) error
	// DeleteExpiredSessions removes up to limit sessions that expired before before.
	DeleteExpiredSessions(ctx context.Context, before time.Time, limit int) error
}

// ConsoleService is the web console's use case (app.Console).
type ConsoleService interface {
	// SignIn opens a session for a management key's secret and returns the session's token and its expiry.
	SignIn(ctx context.Context, secret string) (string, time.Time, error)
	// Resume is the principal of a live session's token, or account.ErrUnauthenticated.
	Resume(ctx context.Context, token string) (account.Principal, error)
	SignOut(ctx context.Context, token string) error
}
