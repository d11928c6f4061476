package app_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/app"
)

// TestWorkersStopInReverse: each worker is stopped, and has finished, before the one started before it is told.
func TestWorkersStopInReverse(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var finished []string
	worker := func(name string) app.Worker {
		return app.Worker{Name: name, Run: func(ctx context.Context) {
			<-ctx.Done()
			mu.Lock()
			finished = append(finished, name)
			mu.Unlock()
		}}
	}
	w := app.StartWorkers(slog.New(slog.NewTextHandler(io.Discard, nil)), worker("recorder"), worker("billing"), worker("poller"))
	w.Stop()
	if want := []string{"poller", "billing", "recorder"}; !slices.Equal(finished, want) {
		t.Fatalf("stopped %v, want %v", finished, want)
	}
}

// TestEvery: the tick runs until the worker stops, with a context that a stop does not cancel.
func TestEvery(t *testing.T) {
	t.Parallel()
	ticks := make(chan error)
	w := app.StartWorkers(slog.New(slog.NewTextHandler(io.Discard, nil)),
		app.Every("tick", time.Millisecond, func(ctx context.Context) { ticks <- ctx.Err() }))
	for range 2 {
		if err := <-ticks; err != nil {
			t.Fatalf("tick context: %v", err)
		}
	}
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	for {
		select {
		case <-ticks: // a tick already under way finishes
		case <-stopped:
			return
		}
	}
}
