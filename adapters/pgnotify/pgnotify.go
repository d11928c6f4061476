// Package pgnotify tells every replica of the gateway about changes to what they cache (keys, guardrails,
// assignments) through PostgreSQL's LISTEN/NOTIFY: the database every replica shares already, so invalidation
// needs no other component, works whenever the database does, and can be sent by any process that writes to it
// (the administrative commands included).
//
// A Notifier sends a change after its transaction committed; a Listener holds one connection per replica that
// LISTENs, and hands each notification to the replica's caches. Each time the Listener (re)connects it flushes
// the caches, since changes may have been sent while it was not listening. PostgreSQL delivers notifications
// only to sessions listening at the time, so the caches' TTL stays the safety net for what falls in between.
package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/ports"
)

// Channel is the notification channel (channels are per database, so each deployment has its own).
const Channel = "switchboard_changes"

// ApplicationName names each replica's listening session in pg_stat_activity.
const ApplicationName = "switchboard-listener"

// notifyTimeout bounds a notification sent after the caller's change committed, whatever the caller's context.
const notifyTimeout = 2 * time.Second

// Notifier sends changes to every replica's Listener.
type Notifier struct {
	db  *gorm.DB
	log *slog.Logger
}

var _ ports.ChangeNotifier = (*Notifier)(nil)

func NewNotifier(db *gorm.DB, log *slog.Logger) *Notifier { return &Notifier{db: db, log: log} }

// Notify sends c; a failure is logged, and the other replicas then see the change within the caches' TTL.
func (n *Notifier) Notify(ctx context.Context, c ports.Change) {
	// The change is committed: a caller who hangs up now must not keep the other replicas from hearing of it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	if err := n.db.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", Channel, encode(c)).Error; err != nil {
		n.log.WarnContext(ctx, "could not notify the other replicas of a change: they see it when their cache expires",
			"kind", string(c.Kind), "err", err)
	}
}

func encode(c ports.Change) string { return string(c.Kind) + ":" + c.ID }

// decode reads a payload; ok is false for one this version does not know (a newer replica's), which the caller
// answers by flushing everything.
func decode(payload string) (c ports.Change, ok bool) {
	kind, id, _ := strings.Cut(payload, ":")
	switch k := ports.ChangeKind(kind); k {
	case ports.KeyChanged, ports.GuardrailsChanged, ports.WorkspaceChanged:
		return ports.Change{Kind: k, ID: id}, true
	}
	return ports.Change{}, false
}

// Listener timing: how long it waits before reconnecting (doubling up to the maximum), and how long a quiet
// connection goes before it is checked, so that a connection lost without a word is noticed.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	idleCheck  = 30 * time.Second
)

// Listener receives the changes of every replica for this one's caches, while it runs.
type Listener struct {
	cfg *pgx.ConnConfig
	to  ports.CacheInvalidator
	log *slog.Logger
}

// NewListener listens to the database at url (a postgres:// URL) once it runs; to receives every change, and a
// Flush after each (re)connection.
func NewListener(url string, to ports.CacheInvalidator, log *slog.Logger) (*Listener, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	// A wait that times out only sets a deadline on the socket, rather than asking the server to cancel a query
	// (there is none while listening).
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	return &Listener{cfg: cfg, to: to, log: log}, nil
}

// Run listens, reconnecting as needed, until ctx ends; then it closes the connection and returns.
func (l *Listener) Run(ctx context.Context) {
	backoff := minBackoff
	for {
		listened, err := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = minBackoff
		}
		l.log.Warn("lost the database connection that hears other replicas' changes: reconnecting (until then, their changes show within the cache TTL)",
			"retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session connects, listens and delivers until the connection fails; listened reports whether it got as far as
// listening.
func (l *Listener) session(ctx context.Context) (listened bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return false, err
	}
	l.to.Flush() // whatever changed while nobody listened
	for {
		wait, cancel := context.WithTimeout(ctx, idleCheck)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			if c, ok := decode(n.Payload); ok {
				l.to.Invalidate(c)
			} else {
				l.to.Flush()
			}
		case ctx.Err() != nil:
			return true, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
			if err := conn.Ping(ctx); err != nil {
				return true, err
			}
		default:
			return true, err
		}
	}
}
