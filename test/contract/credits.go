package contract

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// CreditStore checks the organization's balance: it starts empty, grants add up, and reservations hold: what
// is held plus a new amount never passes the balance, also when many reserve at once, and expired holds free
// their room.
func CreditStore(t *testing.T, newStore func(t *testing.T) ports.CreditStore) {
	ctx := context.Background()
	s := newStore(t)
	balance := func(wantTotal, wantUsed domain.Micros) {
		t.Helper()
		total, used, err := s.Credits(ctx)
		if err != nil || total != wantTotal || used != wantUsed {
			t.Fatalf("Credits = %v, %v, %v; want %v, %v", total, used, err, wantTotal, wantUsed)
		}
	}
	balance(0, 0)
	now := time.Date(2026, 3, 18, 15, 4, 5, 0, time.UTC)
	if res, err := s.ReserveCredits(ctx, "call-0", 1, now, now.Add(time.Minute)); err != nil || res != (ports.Reservation{}) {
		t.Fatalf("reserved against no credits: %+v %v", res, err)
	}
	if err := s.AddCredits(ctx, 5_000); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCredits(ctx, 250); err != nil {
		t.Fatal(err)
	}
	balance(5_250, 0)

	const callers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.ReserveCredits(ctx, fmt.Sprintf("call-%d", i+1), 1_000, now, now.Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if res.Held {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 5 {
		t.Fatalf("%d reservations of 1,000 admitted against 5,250, want 5", admitted)
	}
	// An amount past what is left is refused however large it is (no sum wraps around), and told what is left.
	for _, amount := range []domain.Micros{1_000, math.MaxInt64, math.MaxInt64 - 5_000} {
		if res, err := s.ReserveCredits(ctx, fmt.Sprintf("huge-%d", amount), amount, now, now.Add(time.Minute)); err != nil ||
			res != (ports.Reservation{Left: 250}) {
			t.Fatalf("ReserveCredits(%d) with 5,000 of 5,250 held = %+v, %v; want refused with 250 left", amount, res, err)
		}
	}
	if res, _ := s.ReserveCredits(ctx, "later", 1_000, now.Add(time.Hour), now.Add(2*time.Hour)); !res.Held {
		t.Fatal("expired holds still count")
	}
	balance(5_250, 0)
}
