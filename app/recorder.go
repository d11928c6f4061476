package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// RecorderConfig tunes the generation recorder.
type RecorderConfig struct {
	// BatchSize bounds the entries of one transaction, and BatchBytes their encoded size.
	BatchSize  int
	BatchBytes int64
	// Writers drain the spool at once, each writing its own batches: while one waits on the database (its
	// commit, or a lock on a row its charges book), another copies its batch. Records are released in order.
	Writers int
	// Backoff is the first pause after a failed write; it doubles up to MaxBackoff, and the writer tries again
	// for as long as it takes.
	Backoff, MaxBackoff time.Duration
	// Linger is how long a writer waits for more entries before it writes what it found (unless that fills a
	// batch): calls finishing one at a time, or a few at a time, share a transaction rather than each few paying for
	// one. Records are readable that much later; each transaction costs the database and the gateway a commit and
	// a statement a table and a booking whatever its size.
	Linger time.Duration
	// StoreContent keeps prompts and completions; when false only the metadata row is written.
	StoreContent bool
}

// DefaultRecorderConfig suits a gateway on a 2-core machine. With a linger of 20 ms a gateway taking 2,500 calls a
// second writes its records in about 19 transactions a thousand (with 5 ms, 66); each costs PostgreSQL and the
// gateway a commit and a few statements, and past 20 ms the records wait longer for little.
func DefaultRecorderConfig() RecorderConfig {
	return RecorderConfig{BatchSize: 500, BatchBytes: 8 << 20, Writers: 2, Backoff: 100 * time.Millisecond,
		MaxBackoff: 5 * time.Second, Linger: 20 * time.Millisecond, StoreContent: true}
}

// The refusals of a spool that cannot take more: each episode is logged once, when it starts and when it ends.
var (
	errSpoolFull = &domain.Error{Kind: domain.KindUnavailable, Code: "spool_full", RetryAfter: 5 * time.Second, Logged: true,
		Msg: "the gateway cannot record more calls until its database catches up; try again shortly"}
	errSpoolFailing = &domain.Error{Kind: domain.KindUnavailable, Code: "spool_unavailable", RetryAfter: 5 * time.Second, Logged: true,
		Msg: "the gateway cannot record calls: its spool refuses writes; try again shortly"}
)

// Recorder makes each finished call's entry — its generation record and its charge — durable before the call's
// answer ends, and writes it to the store off the request path.
//
// Record appends the entry to the spool, a local write-ahead log (one write to a file); one writer drains the
// spool into the store in batches, each one transaction that books the records and their charges together and
// skips ids already stored, so the entries a crash left in the spool are written again on start without being
// booked twice. Nothing is dropped: while the store is away the writer waits and tries again and the spool
// grows; when the spool is full, Accepting refuses new calls. An entry the store refuses while it is up is
// repaired, and if it is still refused, kept apart in the spool's quarantine: it never holds up its batch.
//
// When the spool refuses an append (a disk error), Accepting refuses new calls until an append succeeds again,
// and the entry that failed is held by its call — whose answer does not end — until the store or the spool takes
// it: at most the calls that were in flight wait, and none is answered without its entry being durable.
type Recorder struct {
	store   ports.GenerationStore
	spool   ports.Spool
	log     *slog.Logger
	metrics ports.Metrics
	cfg     RecorderConfig

	mu       sync.Mutex
	spooling bool // the spool holds a backlog (logged when it starts and when it drains)

	collecting sync.Mutex // held by the writer that reads the next batch, through its wait and linger

	failing atomic.Bool  // the spool's last append failed: Accepting refuses calls until one succeeds
	full    atomic.Bool  // Accepting last found the spool full
	probing sync.Mutex   // one probe of a failing spool at a time
	held    atomic.Int64 // entries neither the spool nor the store has taken yet, each held by its call
}

var _ ports.GenerationRecorder = (*Recorder)(nil)

// NewRecorder takes entries into spool; its Worker writes them to store.
func NewRecorder(store ports.GenerationStore, spool ports.Spool, log *slog.Logger, metrics ports.Metrics, cfg RecorderConfig) *Recorder {
	r := &Recorder{store: store, spool: spool, log: log, metrics: metrics, cfg: cfg}
	metrics.Depth("recorder", func() int { return int(spool.Stats().Records) })
	metrics.Spool(spool.Stats)
	return r
}

// The first byte of a spooled record: an entry's payload version, or a probe of a failing spool (no entry).
// Version 1 is the entry as encoding/json writes it (goccy/go-json, a drop-in, reads it), which earlier releases
// spooled; version 2 is generation.Entry's AppendBinary, encoded without reflection.
const (
	probeRecord = 0
	entryV1     = 1
	entryV2     = 2
)

// Record makes e durable and returns: in the spool, or when the spool refuses it (a disk error, or an entry past
// its bound on one record, which does not stop it taking others), in the store directly; when neither takes it,
// Record holds the entry and tries both again until one does.
func (r *Recorder) Record(ctx context.Context, e generation.Entry) {
	if !r.cfg.StoreContent {
		e.Content = nil
	}
	if e.Content != nil {
		e.Content = e.Content.Bounded()
	}
	e = e.Repaired()
	rec := e.AppendBinary([]byte{entryV2})
	err := r.spool.Append(rec, e)
	if err == nil {
		if r.failing.Load() {
			r.appendsWork()
		}
		return
	}
	if !errors.Is(err, ports.ErrRecordTooLarge) { // that entry alone: the spool takes the others
		r.appendFailed(err)
	}
	r.hold(context.WithoutCancel(ctx), e, rec, err)
}

// hold writes an entry the spool refused to the store, and while the store refuses it too, tries the spool and
// the store again, backing off, for as long as it takes: the call's answer waits.
func (r *Recorder) hold(ctx context.Context, e generation.Entry, rec []byte, cause error) {
	r.held.Add(1)
	defer r.held.Add(-1)
	r.log.ErrorContext(ctx, "spool refused a generation entry; writing it to the database directly", "generation_id", e.Record.ID, "err", cause)
	pause := r.cfg.Backoff
	for logged := false; ; logged = true {
		err := r.insert(ctx, []generation.Entry{e})
		if err == nil {
			return
		}
		if !logged {
			r.log.ErrorContext(ctx, "neither the spool nor the database takes a generation entry: its call waits until one does",
				"generation_id", e.Record.ID, "err", err)
		}
		t := time.NewTimer(pause)
		<-t.C
		pause = min(pause*2, r.cfg.MaxBackoff)
		if r.spool.Append(rec, e) == nil {
			r.appendsWork()
			return
		}
	}
}

func (r *Recorder) appendFailed(err error) {
	if r.failing.CompareAndSwap(false, true) {
		r.log.Error("the spool refuses appends: inference calls get 503 until it takes them again", "err", err)
	}
}

func (r *Recorder) appendsWork() {
	if r.failing.CompareAndSwap(true, false) {
		r.log.Info("the spool takes appends again: accepting inference calls")
	}
}

// Accepting refuses new calls while the spool is full, or while it refuses appends: then each call asks the
// spool again with a probe record (one at a time), so the first append that succeeds admits calls again.
func (r *Recorder) Accepting() error {
	if r.failing.Load() && !r.probe() {
		return errSpoolFailing
	}
	if st := r.spool.Stats(); st.Full() {
		if r.full.CompareAndSwap(false, true) {
			r.log.Warn("the spool is full: inference calls get 503 (spool_full) until the database takes what waits",
				"records", st.Records, "bytes", st.Bytes, "max_bytes", st.MaxBytes)
		}
		return errSpoolFull
	}
	if r.full.Load() && r.full.CompareAndSwap(true, false) {
		r.log.Info("the spool has room again: accepting inference calls")
	}
	return nil
}

func (r *Recorder) probe() bool {
	if !r.probing.TryLock() {
		return false
	}
	defer r.probing.Unlock()
	if err := r.spool.Append([]byte{probeRecord}, nil); err != nil {
		return false
	}
	r.appendsWork()
	return true
}

// Held is the number of entries neither the spool nor the store has taken yet, each held by its call.
func (r *Recorder) Held() int64 { return r.held.Load() }

// Stats is what waits in the spool.
func (r *Recorder) Stats() ports.SpoolStats { return r.spool.Stats() }

// Worker is the writers: they drain the spool into the store until its context ends, then go on while the
// spool holds entries and the store takes them, and leave the rest in the spool for the next start. It is
// stopped after the HTTP server and the workers that record (the video poller), so it writes their last entries.
func (r *Recorder) Worker() Worker {
	return Worker{Name: "recorder", Run: func(ctx context.Context) {
		var wg sync.WaitGroup
		for range max(r.cfg.Writers, 1) {
			wg.Go(func() { r.drain(ctx) })
		}
		wg.Wait()
		if n := r.Held(); n > 0 {
			r.log.Error("stopping while calls hold generation entries that neither the spool nor the database takes; their answers have not ended",
				"held", n)
		}
	}}
}

func (r *Recorder) drain(ctx context.Context) {
	for {
		recs, release, err := r.collect(ctx)
		if err != nil {
			r.log.Error("read spool", "err", err)
			if !r.pause(ctx, r.cfg.MaxBackoff) {
				return
			}
			continue
		}
		if len(recs) == 0 {
			return // stopped with nothing waiting
		}
		if !r.book(ctx, recs) {
			return
		}
		if err := release(); err != nil {
			r.log.Error("release spool records", "err", err)
		}
		r.drained()
	}
}

// collect reads the next batch: what waits in the spool with what comes within the linger (see gather), or else,
// once an append wakes it, what the linger gathers. One writer collects at a time, while the others write their
// batches or wait for their turn: an append during a linger is left to the writer lingering, where it woke a second
// writer to linger beside the first, and calls finishing one at a time were split between two transactions, each a
// commit (a call every 2 ms made batches of 1.3 records where the linger holds 3, and a call every 3 ms a commit
// each). A record is still read within the linger of its append when a writer is free to collect, and written a
// write later. Nothing read and no error means ctx ended.
func (r *Recorder) collect(ctx context.Context) ([]ports.SpoolRecord, func() error, error) {
	r.collecting.Lock()
	defer r.collecting.Unlock()
	lingered := false
	for {
		select {
		// A signal left by an append the Read below sees: the wait must not take it for a new append, or the
		// linger starts before one and gathers less (one writer, a call every 2 ms: 2.5 records a batch, not 3).
		case <-r.spool.Notify():
		default:
		}
		recs, release, err := r.spool.Read(r.cfg.BatchSize, r.cfg.BatchBytes)
		if err != nil || len(recs) > 0 {
			if err == nil && !lingered {
				recs, release = r.gather(ctx, recs, release)
			}
			return recs, release, err
		}
		r.drained()
		select {
		case <-r.spool.Notify():
			r.pause(ctx, r.cfg.Linger) // after a stop, what is in the spool is written at once
			lingered = true
		case <-ctx.Done():
			select {
			case <-r.spool.Notify(): // an append that came with the stop (a select picks either): a clean stop writes it
				continue
			default:
				return nil, nil, nil
			}
		}
	}
}

// gather adds to recs, read at once, what comes within the linger, up to a batch: records found waiting are those
// that came while the writers were busy, and at a steady rate of calls a writer found a few at every turn, and wrote
// each few in a transaction of its own (32 callers at 2,500 records a second in all, their calls spread evenly: 5
// records a transaction with a linger of 5 ms). A full batch, or a stop, is written at once. What the second read
// cannot take waits for the next batch; an error it meets, for the next read.
func (r *Recorder) gather(ctx context.Context, recs []ports.SpoolRecord, release func() error) ([]ports.SpoolRecord, func() error) {
	var size int64
	for _, rec := range recs {
		size += int64(len(rec.Payload))
	}
	if len(recs) >= r.cfg.BatchSize || size >= r.cfg.BatchBytes || !r.pause(ctx, r.cfg.Linger) {
		return recs, release
	}
	more, releaseMore, err := r.spool.Read(r.cfg.BatchSize-len(recs), r.cfg.BatchBytes-size)
	if err != nil || len(more) == 0 {
		return recs, release
	}
	return append(recs, more...), func() error {
		if err := release(); err != nil {
			return err
		}
		return releaseMore()
	}
}

// drained logs the end of a backlog once nothing waits in the spool.
func (r *Recorder) drained() {
	if r.spool.Stats().Records > 0 {
		return
	}
	r.mu.Lock()
	was := r.spooling
	r.spooling = false
	r.mu.Unlock()
	if was {
		r.log.Info("generation spool drained: every entry is in the database")
	}
}

// book writes one batch read from the spool, trying again until the store takes it; false when ctx ended
// first.
func (r *Recorder) book(ctx context.Context, recs []ports.SpoolRecord) bool {
	batch := make([]generation.Entry, 0, len(recs))
	raw := make([][]byte, 0, len(recs))
	var undecodable []refused
	for _, rec := range recs {
		if len(rec.Payload) == 1 && rec.Payload[0] == probeRecord {
			continue
		}
		e, ok := rec.Value.(generation.Entry) // appended by this process: no need to decode
		if !ok {
			var err error
			if e, err = decode(rec.Payload); err != nil {
				undecodable = append(undecodable, refused{rec.Payload, err})
				continue
			}
		}
		batch, raw = append(batch, e), append(raw, rec.Payload)
	}
	pause := r.cfg.Backoff
	for afterStop := 0; ; {
		err := r.keepApart(&undecodable)
		if err == nil {
			err = r.write(context.WithoutCancel(ctx), batch, raw)
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			if !r.backAfterStop(ctx, afterStop) {
				r.log.Warn("generation entries left in the spool for the next start", "records", r.spool.Stats().Records, "err", err)
				return false
			}
			afterStop++
			continue
		}
		r.mu.Lock()
		first := !r.spooling
		r.spooling = true
		r.mu.Unlock()
		if first {
			st := r.spool.Stats()
			r.log.Warn("generation entries wait in the spool until the database takes them", "records", st.Records, "bytes", st.Bytes, "err", err)
		}
		r.pause(ctx, pause)
		pause = min(pause*2, r.cfg.MaxBackoff)
	}
	return true
}

// stopTries is how many times a batch is written again after the stop while the database answers: one that has
// just come back after an outage may fail the first writes on connections it dropped meanwhile (one each), and a
// batch that gave up on the first left its entries in the spool for the next start, though the database was there.
const stopTries = 5

// backAfterStop says, after the stop, whether to write a batch that failed (tries times since the stop) again:
// while tries are left and the database answers a ping (a database away makes the rest wait in the spool at once,
// without holding up the shutdown), a backoff later.
func (r *Recorder) backAfterStop(ctx context.Context, tries int) bool {
	if tries >= stopTries || r.store.Ping(context.WithoutCancel(ctx)) != nil {
		return false
	}
	t := time.NewTimer(r.cfg.Backoff)
	defer t.Stop()
	<-t.C
	return true
}

// decode reads a spooled entry back from its bytes, repaired as Record repairs one (an earlier release spooled its
// entries as they came: a text the database cannot store had them refused, and their charges left unbooked).
func decode(rec []byte) (generation.Entry, error) {
	var e generation.Entry
	var err error
	switch {
	case len(rec) > 0 && rec[0] == entryV2:
		err = e.UnmarshalBinary(rec[1:])
	case len(rec) > 0 && rec[0] == entryV1:
		err = gojson.Unmarshal(rec[1:], &e)
	default:
		return e, errors.New("unknown spool record version")
	}
	if err != nil {
		return e, fmt.Errorf("decode spool record: %w", err)
	}
	return e.Repaired(), nil
}

// refused is a spooled record that can never be written to the store.
type refused struct {
	rec   []byte
	cause error
}

// keepApart quarantines the records of *rs, removing each one kept.
func (r *Recorder) keepApart(rs *[]refused) error {
	for len(*rs) > 0 {
		if err := r.quarantine((*rs)[0].rec, "", (*rs)[0].cause); err != nil {
			return err
		}
		*rs = (*rs)[1:]
	}
	return nil
}

// pause waits d, or until ctx ends; it reports whether ctx is still live.
func (r *Recorder) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// write books batch. When the store refuses it while it is reachable, and not as unavailable (a deadlock, a
// lock held past its timeout: the same batch succeeds when tried again), the batch is halved until the entry it
// refuses is found, and that entry, refused once more, is quarantined: its batch mates are written. The second
// try keeps an entry whose first insert failed as the database went away and came back before the ping (an error
// the store did not classify) out of the quarantine. An error means the store is away or unavailable, or the
// quarantine refused the entry: the batch is written again (ids stored already are skipped).
func (r *Recorder) write(ctx context.Context, batch []generation.Entry, raw [][]byte) error {
	if len(batch) == 0 {
		return nil
	}
	err := r.insert(ctx, batch)
	if err == nil || r.away(ctx, err) {
		return err
	}
	if len(batch) > 1 {
		half := len(batch) / 2
		if err := r.write(ctx, batch[:half], raw[:half]); err != nil {
			return err
		}
		return r.write(ctx, batch[half:], raw[half:])
	}
	if err := r.insert(ctx, batch); err == nil || r.away(ctx, err) {
		return err
	}
	return r.quarantine(raw[0], batch[0].Record.ID, err)
}

func (r *Recorder) insert(ctx context.Context, batch []generation.Entry) error {
	err := r.store.InsertGenerations(ctx, batch)
	if err == nil {
		r.metrics.RecordsWritten(len(batch))
	}
	return err
}

// away reports whether err, an insert's failure, is the store's being away or unavailable rather than its refusal
// of what was inserted.
func (r *Recorder) away(ctx context.Context, err error) bool {
	return domain.KindOf(err) == domain.KindUnavailable || r.store.Ping(ctx) != nil
}

// quarantine keeps rec apart in the spool's quarantine file; when that fails, rec stays in the spool.
func (r *Recorder) quarantine(rec []byte, id string, cause error) error {
	if err := r.spool.Quarantine(rec); err != nil {
		return fmt.Errorf("quarantine generation entry %q (refused: %v): %w", id, cause, err)
	}
	r.metrics.RecordsQuarantined(1)
	r.log.Error("generation entry refused by the database: kept in the spool's quarantine (switchboard spool requeue puts it back once the cause is fixed)",
		"generation_id", id, "err", cause)
	return nil
}
