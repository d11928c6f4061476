package gormstore

import (
	"context"
	"sync"

	"github.com/switchboard-ai/switchboard/ports"
)

// maxBatch bounds the reservations one transaction takes (a multi-row INSERT of 4 parameters a row).
const maxBatch = 256

// batches groups the reservations on one budget (the organization's credits, one key's limit) that arrive while
// a transaction on that budget runs, and runs them together in the next one: one row lock, one read of what is
// spent and held, one INSERT and one commit for all of them, instead of a transaction each queueing on the lock
// (with the commit's fsync inside the lock, that capped a budget at a few hundred calls a second). A reservation
// that finds its budget idle runs at once, alone, so a lone call waits for nothing. The transactions stay what
// they were, so the reservations still hold across processes.
type batches[R any] struct {
	mu     sync.Mutex
	queues map[string][]*pending[R] // per budget with a transaction running: the reservations waiting for it
}

// pending is one reservation: the request, then its answer. batch is set on the one that runs the transaction.
type pending[R any] struct {
	req   R
	res   ports.Reservation
	err   error
	batch []*pending[R]
	done  chan struct{}
}

// do runs req through run with the other reservations on budget waiting at the time, and returns req's answer.
// run sets res (or err) on each; it runs without the caller's cancellation, since it answers for several callers.
func (b *batches[R]) do(ctx context.Context, budget string, req R, run func(context.Context, []*pending[R])) (ports.Reservation, error) {
	p := &pending[R]{req: req, done: make(chan struct{})}
	b.mu.Lock()
	if q, running := b.queues[budget]; running {
		b.queues[budget] = append(q, p)
		b.mu.Unlock()
		<-p.done
		if p.batch == nil {
			return p.res, p.err
		}
	} else {
		if b.queues == nil {
			b.queues = map[string][]*pending[R]{}
		}
		b.queues[budget] = nil
		b.mu.Unlock()
		p.batch = []*pending[R]{p}
	}
	run(context.WithoutCancel(ctx), p.batch)

	// Hand the budget to the first one waiting, with those behind it, before answering this batch.
	b.mu.Lock()
	if q := b.queues[budget]; len(q) == 0 {
		delete(b.queues, budget)
	} else {
		n := min(len(q), maxBatch)
		q[0].batch = q[:n:n]
		b.queues[budget] = q[n:]
		close(q[0].done)
	}
	b.mu.Unlock()
	for _, o := range p.batch {
		if o != p {
			close(o.done)
		}
	}
	return p.res, p.err
}
