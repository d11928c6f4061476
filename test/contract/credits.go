package contract

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// CreditStore checks the organization's balance: it starts empty, grants and usage add up, and concurrent
// usage loses nothing.
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
	if err := s.AddCredits(ctx, 5_000_000); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCredits(ctx, 250_000); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCreditUsage(ctx, 1_000); err != nil {
		t.Fatal(err)
	}
	balance(5_250_000, 1_000)

	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.AddCreditUsage(ctx, 10)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	balance(5_250_000, 1_000+writers*10)
}
