package gormstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestBatchesGroupWaiting: a reservation on an idle budget runs alone and at once; those arriving while it runs
// run together in the next transaction, in one batch, each with its own answer; another budget is not held up.
func TestBatchesGroupWaiting(t *testing.T) {
	var b batches[int]
	release := make(chan struct{})
	var mu sync.Mutex
	var runs [][]int
	run := func(_ context.Context, batch []*pending[int]) {
		var reqs []int
		for _, p := range batch {
			reqs = append(reqs, p.req)
			p.res.Held = p.req%2 == 0
			if p.req == 3 {
				p.err = fmt.Errorf("call %d failed", p.req)
			}
		}
		mu.Lock()
		runs = append(runs, reqs)
		mu.Unlock()
		if reqs[0] == 0 {
			<-release // the first transaction runs until the others wait
		}
	}
	queued := func(budget string) int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queues[budget])
	}

	first := make(chan bool)
	go func() { res, _ := b.do(context.Background(), "credits", 0, run); first <- res.Held }()
	for !started(&mu, &runs) {
		runtime.Gosched()
	}
	type answer struct {
		ok  bool
		err error
	}
	answers := make([]chan answer, 5)
	for i := 1; i < 5; i++ {
		answers[i] = make(chan answer, 1)
		go func() { res, err := b.do(context.Background(), "credits", i, run); answers[i] <- answer{res.Held, err} }()
		for queued("credits") < i {
			runtime.Gosched()
		}
	}
	if res, err := b.do(context.Background(), "a key", 10, run); !res.Held || err != nil {
		t.Fatalf("another budget: %+v %v", res, err)
	}
	close(release)
	if !<-first {
		t.Fatal("the first reservation: not admitted")
	}
	for i := 1; i < 5; i++ {
		a := <-answers[i]
		if a.ok != (i%2 == 0 && i != 3) || (a.err != nil) != (i == 3) {
			t.Errorf("reservation %d: %v %v", i, a.ok, a.err)
		}
	}
	if len(runs) != 3 || len(runs[0]) != 1 || len(runs[1]) != 1 || runs[1][0] != 10 || fmt.Sprint(runs[2]) != "[1 2 3 4]" {
		t.Fatalf("transactions %v, want [0] [10] and the 4 waiting together", runs)
	}
	if len(b.queues) != 0 {
		t.Fatalf("idle budgets left: %v", b.queues)
	}
}

func started(mu *sync.Mutex, runs *[][]int) bool {
	mu.Lock()
	defer mu.Unlock()
	return len(*runs) > 0
}
