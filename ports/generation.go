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
}

// GenerationRetention keeps the store's days of records: ready ahead of the records that come, and gone once past
// their retention. A store that keeps records by time (PostgreSQL's daily partitions) removes whole days at once;
// one that does not (SQLite) deletes up to limit records a call.
type GenerationRetention interface {
	// PrepareDays makes the store ready for records created on the UTC days from from through through (creating
	// what a day needs ahead of its first record, so that none waits for it); nothing where a day needs nothing.
	PrepareDays(ctx context.Context, from, through time.Time) error
	// PurgeContents removes the content of records created before before; the records stay.
	PurgeContents(ctx context.Context, before time.Time, limit int) (int64, error)
	// PurgeGenerations removes the records created before before, with their content.
	//
	// Both return how many records (or contents) went, a whole day's as the database estimates it; fewer than
	// limit means none is left before before.
	PurgeGenerations(ctx context.Context, before time.Time, limit int) (int64, error)
}

// GenerationFilter selects records for a list, newest first. Zero fields select everything.
type GenerationFilter struct {
	// From and To bound the records' creation: From <= created_at < To.
	From, To time.Time
	// WorkspaceID, KeyHash, Model, ProviderName, SessionID, UserID (the member who owns the key) and
	// ExternalUser (the caller's user field) each select the records that equal them.
	WorkspaceID, KeyHash, Model, ProviderName, SessionID, UserID, ExternalUser string
	// Status selects the records of one HTTP status.
	Status int
	// After is the previous page's Next: the page holds the records after it.
	After *generation.Cursor
	// Limit is the page's size: 0 is generation.DefaultPage, and it is at most generation.MaxPage.
	Limit int
}

// GenerationPage is one page of a list: its records, newest first, and the cursor of the next page (nil on the
// last).
type GenerationPage struct {
	Records []generation.Record
	Next    *generation.Cursor
}

// GenerationList lists records for the console and for operators, a page at a time (keyset pagination: a page
// costs the same wherever it is in the list).
type GenerationList interface {
	ListGenerations(ctx context.Context, f GenerationFilter) (GenerationPage, error)
}

// ActivityGroup names the dimensions an activity read keeps apart; the others are summed over.
type ActivityGroup uint8

const (
	ByDay ActivityGroup = 1 << iota
	ByWorkspace
	ByKey
	ByUser
	ByModel
	ByProvider
	ByEndpoint
)

// ActivityFilter selects aggregate activity: the UTC days from From to To (From <= day < To, by their
// midnights; zero fields do not bound), and the rows of one workspace, key, member, model or provider when set.
type ActivityFilter struct {
	From, To                                          time.Time
	WorkspaceID, KeyHash, UserID, Model, ProviderName string
	GroupBy                                           ActivityGroup
}

// ActivityStore reads the activity aggregates the store keeps as it writes records (in the same transaction:
// they always agree with the records), so that usage by day, key or model costs no scan of the records.
type ActivityStore interface {
	// Activity sums the selected rows by the dimensions GroupBy keeps, in the order of generation.Activity's keys;
	// the dimensions summed over are zero in each row.
	Activity(ctx context.Context, f ActivityFilter) ([]generation.Activity, error)
}

// GenerationService reads generation records for callers.
type GenerationService interface {
	Generation(ctx context.Context, by account.Principal, id string) (generation.Record, error)
	GenerationContent(ctx context.Context, by account.Principal, id string) (generation.Content, error)
}

// ActivityDays is how many UTC days before today activity reads go back by default (the reference's `/activity`:
// the last 30 days), today included beside them.
const ActivityDays = 30

// ActivityQuery is a caller's question to the activity: the filter's days, dimensions and selections, or when
// Date is set the one UTC day it names, which must be today or one of the ActivityDays before it.
type ActivityQuery struct {
	ActivityFilter
	Date time.Time
}

// ActivityService answers usage by day, model, provider, endpoint, workspace and key from the activity
// aggregates: a management key reads every workspace's (or one's), any other key its own workspace's.
type ActivityService interface {
	Activity(ctx context.Context, by account.Principal, q ActivityQuery) ([]generation.Activity, error)
}

// GenerationLister lists generation records for a caller: a management key every workspace's (or one's), any
// other key its own workspace's.
type GenerationLister interface {
	ListGenerations(ctx context.Context, by account.Principal, f GenerationFilter) (GenerationPage, error)
}

// FeedbackStore keeps callers' feedback on generations.
type FeedbackStore interface {
	AddFeedback(ctx context.Context, f generation.Feedback) error
}

// FeedbackService takes feedback on a generation from a management key or from the key that made it.
type FeedbackService interface {
	SubmitFeedback(ctx context.Context, by account.Principal, generationID, category string, comment *string) error
}
