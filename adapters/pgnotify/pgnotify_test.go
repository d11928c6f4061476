package pgnotify_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/adapters/pgnotify"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// flushed is what a recorder receives for a Flush.
var flushed = ports.Change{Kind: "flush"}

// recorder is a replica's caches: it passes on what it is told.
type recorder chan ports.Change

func (r recorder) Invalidate(c ports.Change) { r <- c }
func (r recorder) Flush()                    { r <- flushed }

// next waits for what the listener delivers; the timeout only bounds a failing test.
func (r recorder) next(t *testing.T) ports.Change {
	t.Helper()
	select {
	case c := <-r:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered within 10s")
		return ports.Change{}
	}
}

func (r recorder) expect(t *testing.T, want ports.Change) {
	t.Helper()
	if got := r.next(t); got != want {
		t.Fatalf("delivered %+v, want %+v", got, want)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// listen runs a listener until the test ends, or until stop, which returns once it has stopped.
func listen(t *testing.T, url string, to ports.CacheInvalidator) (stop func()) {
	t.Helper()
	l, err := pgnotify.NewListener(url, to, quiet())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// Every replica hears every change; one that reconnects flushes first, then hears again.
func TestChangesReachEveryListener(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	db, cleanup, err := gormstore.Open(t.Context(), gormstore.Config{URL: url}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	notifier := pgnotify.NewNotifier(db, quiet())

	replicas := []recorder{make(recorder, 16), make(recorder, 16), make(recorder, 16)}
	for _, r := range replicas {
		listen(t, url, r)
		r.expect(t, flushed) // listening: whatever happened before is dropped
	}

	changes := []ports.Change{{Kind: ports.KeyChanged, ID: "hash-1"}, {Kind: ports.GuardrailsChanged},
		{Kind: ports.WorkspaceChanged, ID: "w1"}}
	for _, c := range changes {
		notifier.Notify(ctx, c)
	}
	for _, r := range replicas {
		for _, c := range changes {
			r.expect(t, c)
		}
	}

	// A change this version does not know (a newer replica's) drops everything rather than nothing.
	if err := db.Exec("SELECT pg_notify(?, ?)", pgnotify.Channel, "newer-kind:w1").Error; err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		r.expect(t, flushed)
	}

	// The server ends the listening sessions (a restart, a failover, an administrator): each replica reconnects,
	// flushes what it may have missed, and hears the next change.
	var ended int
	if err := db.Raw("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
		pgnotify.ApplicationName).Scan(&ended).Error; err != nil || ended != len(replicas) {
		t.Fatalf("terminated %d listening sessions (%v), want %d", ended, err, len(replicas))
	}
	for _, r := range replicas {
		r.expect(t, flushed)
	}
	notifier.Notify(ctx, changes[0])
	for _, r := range replicas {
		r.expect(t, changes[0])
	}
}

// A notification that cannot be sent is logged, not returned: the change it follows is committed already.
func TestNotifyFailureIsLogged(t *testing.T) {
	url := testdb.PostgresURL(t)
	db, cleanup, err := gormstore.Open(t.Context(), gormstore.Config{URL: url}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	cleanup() // the pool is closed: every statement fails
	var logged recorderLog
	pgnotify.NewNotifier(db, slog.New(slog.NewTextHandler(&logged, nil))).Notify(context.Background(),
		ports.Change{Kind: ports.KeyChanged, ID: "secret-hash"})
	if !logged.has("could not notify the other replicas") || logged.has("secret-hash") {
		t.Fatalf("log = %q", logged.String())
	}
}

// A listener that cannot reach the database keeps trying, and stops when its context ends.
func TestListenerStopsWhileUnreachable(t *testing.T) {
	r := make(recorder, 1)
	stop := listen(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", r)
	stop()
	if len(r) != 0 {
		t.Fatalf("delivered %+v without a connection", <-r)
	}
}

type recorderLog struct{ strings.Builder }

func (l *recorderLog) has(s string) bool { return strings.Contains(l.String(), s) }
