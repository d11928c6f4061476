package integration_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// enforcer assembles the guardrail use case on db, as one gateway process would.
func enforcer(db *gorm.DB, clock func() time.Time) *app.Guardrails {
	s := gormstore.NewGuardrailStore(db)
	acc := gormstore.NewAccountStore(db)
	return app.NewGuardrails(s, s, s, acc, acc, app.OneProcess{}, ports.NoMetrics{}, app.Env{Now: clock, NewID: uuid.NewString}, quiet())
}

// setup creates a member owning a key, and a guardrail from spec assigned to the member.
func setup(t *testing.T, db *gorm.DB, g *app.Guardrails, spec guardrail.Spec) (account.Principal, guardrail.Guardrail) {
	t.Helper()
	ctx := context.Background()
	acc := gormstore.NewAccountStore(db)
	ws, _ := acc.DefaultWorkspace(ctx)
	user := "user_" + uuid.NewString()[:8]
	if err := acc.CreateMember(ctx, account.Member{ID: user, Email: user + "@x.io", Role: account.RoleMember, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	key := account.Key{Hash: uuid.NewString(), Name: "k", Label: "l", WorkspaceID: ws.ID, CreatorUserID: &user, CreatedAt: t0}
	if err := acc.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	gr, err := g.Create(ctx, account.Principal{}, "", spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AssignMembers(ctx, account.Principal{}, gr.ID, []string{user}); err != nil {
		t.Fatal(err)
	}
	return account.Principal{KeyHash: key.Hash, WorkspaceID: ws.ID, CreatorUserID: &user}, gr
}

var endpoints = []catalog.Endpoint{{Provider: "openai"}, {Provider: "elevenlabs"}}

func admission(text string, cost domain.Micros) ports.Admission {
	return ports.Admission{Model: "openai/tts-1", Endpoints: endpoints, Texts: []string{text}, Hold: time.Minute,
		Estimate: func(catalog.Endpoint, []string) domain.Micros { return cost }}
}

func TestEnforcement(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		g := enforcer(db, func() time.Time { return t0 })
		p, _ := setup(t, db, g, guardrail.Spec{Name: "team", IgnoredProviders: []string{"openai"},
			Builtins:       []guardrail.Builtin{{Slug: "email", Action: guardrail.Redact}, {Slug: "secrets", Action: guardrail.Flag}},
			ContentFilters: []guardrail.ContentFilter{{Pattern: "(?i)launch codes", Action: guardrail.Block}}})

		a, err := g.Admit(ctx, p, admission("mail ada@x.io sk-abcdefghijklmnopqrstuv", 0))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Endpoints) != 1 || a.Endpoints[0].Provider != "elevenlabs" || a.Texts[0] != "mail [EMAIL] sk-abcdefghijklmnopqrstuv" ||
			len(a.Flags) != 1 || a.Flags[0] != "secrets" {
			t.Fatalf("Admit = %+v", a)
		}
		var de *domain.Error
		if _, err := g.Admit(ctx, p, admission("the Launch Codes are", 0)); !errors.As(err, &de) || de.Kind != domain.KindInvalid {
			t.Fatalf("blocked content: %v", err)
		}

		// A second guardrail on the key itself: both apply, and together they leave nothing.
		keyOnly, _ := g.Create(ctx, account.Principal{}, "", guardrail.Spec{Name: "key-rail", AllowedProviders: []string{"openai"}})
		if _, err := g.AssignKeys(ctx, account.Principal{}, keyOnly.ID, []string{p.KeyHash}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Admit(ctx, p, admission("hi", 0)); !errors.As(err, &de) || de.Kind != domain.KindForbidden || de.Meta["guardrail_id"] == nil {
			t.Fatalf("two guardrails that leave no provider: %v", err)
		}

		// A caller nobody assigned anything to passes untouched.
		free := account.Principal{KeyHash: "unassigned"}
		if a, err := g.Admit(ctx, free, admission("ada@x.io", 0)); err != nil || a.Texts[0] != "ada@x.io" || len(a.Endpoints) != 2 {
			t.Fatalf("unassigned caller: %+v %v", a, err)
		}
	})
}

// TestBudgetUnderConcurrency hammers one guardrail's budget from two enforcers sharing PostgreSQL (two gateway
// processes). Each call reserves and then spends exactly its estimate, so exactly limit/cost calls fit: more would
// overspend, fewer would mean a call was refused while room remained.
func TestBudgetUnderConcurrency(t *testing.T) {
	url := testdb.PostgresURL(t)
	db, other := openURL(t, url), openURL(t, url) // two connection pools: two processes
	clock := func() time.Time { return t0 }
	g1, g2 := enforcer(db, clock), enforcer(other, clock)
	limit := domain.Micros(1_000_000)
	p, gr := setup(t, db, g1, guardrail.Spec{Name: "budget", LimitUSD: &limit, ResetInterval: domain.IntervalDaily})

	const cost, calls = domain.Micros(30_000), 100
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := g1
			if i%2 == 1 {
				g = g2
			}
			a, err := g.Admit(context.Background(), p, admission("x", cost))
			var de *domain.Error
			switch {
			case err == nil:
				admitted.Add(1)
				g.Settle(context.Background(), a.Holds, cost)
			case errors.As(err, &de) && de.Kind == domain.KindForbidden && de.Meta["guardrail_id"] == gr.ID:
				refused.Add(1)
			default:
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	spent, err := gormstore.NewGuardrailStore(db).Spent(context.Background(), gr.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != int64(limit/cost) || spent != cost*(limit/cost) || spent > limit {
		t.Fatalf("admitted %d, refused %d, spent %d of %d: want exactly %d admitted", admitted.Load(), refused.Load(),
			spent, limit, limit/cost)
	}
}

// TestBudgetHoldsExpire shows a crashed call's reservation stops counting once it expires, and settled spend
// belongs to its window: the next day starts afresh.
func TestBudgetHoldsExpire(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := t0
		g := enforcer(db, func() time.Time { return now })
		limit := domain.Micros(100)
		p, _ := setup(t, db, g, guardrail.Spec{Name: "b", LimitUSD: &limit, ResetInterval: domain.IntervalDaily})
		if _, err := g.Admit(ctx, p, admission("x", 100)); err != nil { // never settled: the process "crashed"
			t.Fatal(err)
		}
		if _, err := g.Admit(ctx, p, admission("x", 1)); err == nil {
			t.Fatal("a live hold did not count")
		}
		now = now.Add(2 * time.Minute) // past the hold's expiry
		a, err := g.Admit(ctx, p, admission("x", 100))
		if err != nil {
			t.Fatalf("an expired hold still counts: %v", err)
		}
		g.Settle(ctx, a.Holds, 100)
		if _, err := g.Admit(ctx, p, admission("x", 1)); err == nil {
			t.Fatal("spend over the limit was not refused")
		}
		now = now.Add(24 * time.Hour)
		if _, err := g.Admit(ctx, p, admission("x", 100)); err != nil {
			t.Fatalf("a new day did not reset the budget: %v", err)
		}
	})
}

func openURL(t *testing.T, url string) *gorm.DB {
	t.Helper()
	db, cleanup, err := gormstore.Open(t.Context(), gormstore.Config{URL: url}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return db
}
