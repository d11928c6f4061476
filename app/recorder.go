package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// RecorderConfig tunes the generation recorder.
type RecorderConfig struct {
	// QueueSize bounds the entries waiting to be written: memory stays flat whatever the database does.
	QueueSize int
	// BatchSize bounds one insert.
	BatchSize int
	// Workers write batches concurrently.
	Workers int
	// FullWait is how long Record waits for room in a full queue before writing the entry itself.
	FullWait time.Duration
	// Retries is how often a failed batch is tried again before its entries are written one by one.
	Retries int
	// RetryBackoff is the first pause between tries; it doubles each time.
	RetryBackoff time.Duration
	// StoreContent keeps prompts and completions; when false only the metadata row is written.
	StoreContent bool
}

// DefaultRecorderConfig suits a gateway on a 2-core machine.
func DefaultRecorderConfig() RecorderConfig {
	return RecorderConfig{QueueSize: 8192, BatchSize: 500, Workers: 2, FullWait: 50 * time.Millisecond,
		Retries: 3, RetryBackoff: 100 * time.Millisecond, StoreContent: true}
}

// Recorder writes generation entries off the request path: a bounded queue drained by workers that insert in
// batches. Batching is natural: a worker takes whatever has queued up while it was writing, so an idle gateway
// writes each record at once and a busy one writes hundreds per statement.
//
// Nothing is lost: when the queue is full the caller waits up to FullWait and then writes its entry itself;
// a failed batch is retried, then written entry by entry, and an entry that still fails is logged with its id;
// Close drains the queue before it returns.
type Recorder struct {
	store   ports.GenerationStore
	log     *slog.Logger
	metrics ports.Metrics
	cfg     RecorderConfig

	mu     sync.RWMutex // guards closed against sends on the closed queue
	closed bool
	queue  chan generation.Entry
	wg     sync.WaitGroup
}

var _ ports.GenerationRecorder = (*Recorder)(nil)

// NewRecorder starts the workers; Close stops them after draining.
func NewRecorder(store ports.GenerationStore, log *slog.Logger, metrics ports.Metrics, cfg RecorderConfig) *Recorder {
	r := &Recorder{store: store, log: log, metrics: metrics, cfg: cfg, queue: make(chan generation.Entry, cfg.QueueSize)}
	metrics.Depth("recorder", r.Pending)
	for range max(cfg.Workers, 1) {
		r.wg.Add(1)
		go r.work()
	}
	return r
}

// Record queues e and returns. It blocks only when the queue is full, and then at most FullWait before it
// writes e itself.
func (r *Recorder) Record(ctx context.Context, e generation.Entry) {
	if !r.cfg.StoreContent {
		e.Content = nil
	}
	r.mu.RLock()
	if !r.closed {
		select {
		case r.queue <- e:
			r.mu.RUnlock()
			return
		default:
		}
		t := time.NewTimer(r.cfg.FullWait)
		select {
		case r.queue <- e:
			t.Stop()
			r.mu.RUnlock()
			return
		case <-t.C:
		}
	}
	r.mu.RUnlock()
	r.write(context.WithoutCancel(ctx), []generation.Entry{e})
}

// Pending is how many entries wait in the queue.
func (r *Recorder) Pending() int { return len(r.queue) }

// Close stops taking entries into the queue, writes everything queued, and returns when all is written.
func (r *Recorder) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Recorder) work() {
	defer r.wg.Done()
	batch := make([]generation.Entry, 0, r.cfg.BatchSize)
	for e := range r.queue {
		batch = append(batch[:0], e)
	fill:
		for len(batch) < r.cfg.BatchSize {
			select {
			case e, ok := <-r.queue:
				if !ok {
					break fill
				}
				batch = append(batch, e)
			default:
				break fill
			}
		}
		r.write(context.Background(), batch)
	}
}

// write inserts batch, retrying; a batch that keeps failing is split so that one bad entry loses only itself.
func (r *Recorder) write(ctx context.Context, batch []generation.Entry) {
	pause := r.cfg.RetryBackoff
	var err error
	for try := 0; try <= r.cfg.Retries; try++ {
		if err = r.store.InsertGenerations(ctx, batch); err == nil {
			r.metrics.RecordsWritten(len(batch))
			return
		}
		if try < r.cfg.Retries {
			r.log.WarnContext(ctx, "generation batch failed; retrying", "entries", len(batch), "err", err)
			time.Sleep(pause)
			pause *= 2
		}
	}
	if len(batch) == 1 {
		r.lost(ctx, batch[0], err)
		return
	}
	for i := range batch {
		if err := r.store.InsertGenerations(ctx, batch[i:i+1]); err != nil {
			r.lost(ctx, batch[i], err)
		} else {
			r.metrics.RecordsWritten(1)
		}
	}
}

func (r *Recorder) lost(ctx context.Context, e generation.Entry, err error) {
	r.metrics.RecordsLost(1)
	r.log.ErrorContext(ctx, "generation record lost", "generation_id", e.Record.ID, "err", err)
}
