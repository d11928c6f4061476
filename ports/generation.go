package ports

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// GenerationRecorder takes one entry per finished call from the request path. Record returns once the entry is
// durable (in the spool); it is written to the store in the background, and nothing is lost.
type GenerationRecorder interface {
	Record(ctx context.Context, e generation.Entry)
	// Accepting is nil while there is room for more entries, and an unavailable error (503) once the spool is
	// full: the pipeline asks before any upstream work.
	Accepting() error
}

// Spool is a local append-only log of entries not yet written to the store, bounded in bytes (adapters/spool).
// One reader drains it; Append is safe from any goroutine.
type Spool interface {
	// Append returns once payload survives the process (see the adapter for what it does not survive). value is
	// what payload encodes, handed to the reader as it is while the spool keeps it in memory.
	Append(payload []byte, value any) error
	// Read returns up to max records (about maxBytes at most, at least one) after those earlier Reads returned,
	// oldest first, and the function that releases them once they are stored; no records when none wait. Several
	// writers may Read at once; a release takes effect once every earlier Read's records are released too.
	Read(max int, maxBytes int64) (records []SpoolRecord, release func() error, err error)
	// Notify is signalled after appends.
	Notify() <-chan struct{}
	// Quarantine keeps a record the store refuses, apart, for an operator: it is never read again.
	Quarantine(payload []byte) error
	Stats() SpoolStats
}

// ErrRecordTooLarge is a spool's refusal of one record past its bound on a record: the spool still takes
// other appends.
var ErrRecordTooLarge = errors.New("spool: record too large")

// SpoolRecord is one record read from the spool: its payload, and the value appended with it when the spool
// still held that in memory (nil when the record was read from disk: appended by an earlier process, or evicted
// while a backlog built up).
type SpoolRecord struct {
	Payload []byte
	Value   any
}

// SpoolStats is what waits in the spool.
type SpoolStats struct {
	Records, Bytes, MaxBytes int64
	// Quarantined counts the records kept apart since start.
	Quarantined int64
}

// Full reports whether the spool has reached its bound.
func (s SpoolStats) Full() bool { return s.MaxBytes > 0 && s.Bytes >= s.MaxBytes }

// GenerationStore keeps generation records and, apart from them, their content.
type GenerationStore interface {
	// InsertGenerations writes a batch in one transaction with the charges of its entries (see generation.Entry);
	// ids already stored are skipped with their charges, so a batch may be written again after a crash.
	InsertGenerations(ctx context.Context, batch []generation.Entry) error
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	// Generation returns generation.ErrNotFound for an unknown id.
	Generation(ctx context.Context, id string) (generation.Record, error)
	// GenerationContent returns generation.ErrNotFound when the generation or its content is not stored.
	GenerationContent(ctx context.Context, id string) (generation.Content, error)
	// PurgeGenerations deletes up to limit records (and their content) created before before.
	PurgeGenerations(ctx context.Context, before time.Time, limit int) (int64, error)
}

// GenerationService reads generation records for callers.
type GenerationService interface {
	Generation(ctx context.Context, by account.Principal, id string) (generation.Record, error)
	GenerationContent(ctx context.Context, by account.Principal, id string) (generation.Content, error)
}
