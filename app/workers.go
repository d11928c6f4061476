package app

import (
	"context"
	"log/slog"
	"time"
)

// Worker is background work: it runs until ctx ends, finishes what it holds, and returns.
type Worker struct {
	Name string
	Run  func(ctx context.Context)
}

// Every is the worker that calls tick every interval until ctx ends (tick's ctx stays live while it runs, so
// a stop never cuts a tick in half).
func Every(name string, interval time.Duration, tick func(ctx context.Context)) Worker {
	return Worker{Name: name, Run: func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				tick(context.WithoutCancel(ctx))
			}
		}
	}}
}

// Workers is the gateway's background work, started one way and stopped one way.
type Workers struct {
	log     *slog.Logger
	running []running
}

type running struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

// StartWorkers runs each worker in its own goroutine, in the order given.
func StartWorkers(log *slog.Logger, ws ...Worker) *Workers {
	all := &Workers{log: log}
	for _, w := range ws {
		ctx, cancel := context.WithCancel(context.Background())
		r := running{name: w.Name, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			w.Run(ctx)
		}()
		all.running = append(all.running, r)
	}
	return all
}

// Stop ends the workers in the reverse order of their start, each one finished before the next is told:
// later workers may feed earlier ones (a poller finishes jobs that the recorder writes), never the reverse.
func (w *Workers) Stop() {
	for i := len(w.running) - 1; i >= 0; i-- {
		r := w.running[i]
		r.cancel()
		<-r.done
		w.log.Debug("background worker stopped", "worker", r.name)
	}
}
