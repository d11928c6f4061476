package integration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// TestWorkspaceBudgets: calls racing a workspace's daily and monthly budgets (through two connection pools on
// PostgreSQL, two processes) are held exactly up to the tighter one; a record written settles its hold into
// the workspace's activity, which the next reservation reads; an expired hold stops counting; a refusal says
// what the tightest budget has left; a budget set again keeps its id.
func TestWorkspaceBudgets(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		url := testdb.PostgresURL(t)
		testWorkspaceBudgets(t, openURL(t, url), openURL(t, url))
	})
	t.Run("sqlite", func(t *testing.T) {
		db := testdb.SQLite(t)
		testWorkspaceBudgets(t, db, db)
	})
}

func testWorkspaceBudgets(t *testing.T, db, other *gorm.DB) {
	ctx := context.Background()
	stores := []*gormstore.AccountStore{gormstore.NewAccountStore(db), gormstore.NewAccountStore(other)}
	s, gens := stores[0], gormstore.NewGenerationStore(db)
	if err := gens.PrepareDays(ctx, t0, t0.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	ws := account.Workspace{ID: "00000000-0000-4000-8000-0000000000b1", Name: "Budgeted", Slug: "budgeted", CreatedAt: t0}
	if err := s.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	set := func(id, interval string, limit domain.Micros, at time.Time) account.Budget {
		b, err := account.NewBudget(id, ws.ID, interval, limit, false, at)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = s.SetWorkspaceBudget(ctx, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	set("b-month", "monthly", 1_000, t0)
	set("b-day", "daily", 1_000, t0)
	if b := set("b-month-again", "monthly", 1_500, t0.Add(time.Minute)); b.ID != "b-month" || !b.CreatedAt.Equal(t0) || b.Limit != 1_500 {
		t.Fatalf("set again: %+v, want b-month's id and creation with the new limit", b)
	}
	budgets, err := s.WorkspaceBudgets(ctx, ws.ID)
	if err != nil || len(budgets) != 2 || budgets[0].Interval != domain.IntervalDaily || budgets[1].Limit != 1_500 {
		t.Fatalf("budgets %+v, %v: want daily then monthly", budgets, err)
	}

	exp := t0.Add(time.Hour)
	reserve := func(s *gormstore.AccountStore, id string, amount domain.Micros, now time.Time) ports.Reservation {
		r, err := s.ReserveWorkspace(ctx, id, ws.ID, budgets, amount, now, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const calls = 40
	held := make([]bool, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			held[i] = reserve(stores[i%2], genID(fmt.Sprintf("race%02d", i)), 100, t0).Held
		}()
	}
	wg.Wait()
	var first string
	n := 0
	for i, h := range held {
		if h {
			n++
			if first == "" {
				first = genID(fmt.Sprintf("race%02d", i))
			}
		}
	}
	if n != 10 {
		t.Fatalf("%d of %d calls of 100 held against a daily budget of 1,000: want exactly 10", n, calls)
	}
	if r := reserve(s, genID("over"), 1, t0); r.Held || r.Left != 0 {
		t.Fatalf("the daily budget is full: %+v", r)
	}

	// One of the held calls cost 40: its hold goes, and its cost counts in the workspace's activity.
	e := fullEntry(first, t0)
	e.Record.WorkspaceID, e.Record.TotalCost = ws.ID, 40
	if err := gens.InsertGenerations(ctx, []generation.Entry{e}); err != nil {
		t.Fatal(err)
	}
	if r := reserve(s, genID("fits"), 60, t0); !r.Held {
		t.Fatalf("40 spent + 900 held + 60 against 1,000 refused: %+v", r)
	}
	if r := reserve(s, genID("over2"), 1, t0); r.Held {
		t.Fatal("the daily budget is full again")
	}
	// The next day: the daily window is new, the monthly one holds 40 spent, and the holds have expired.
	next := exp.Add(24 * time.Hour)
	if r := reserve(s, genID("next"), 1_461, next); r.Held || r.Left != 1_000 {
		t.Fatalf("next day, 1,461: %+v, want refused with 1,000 left (the daily budget)", r)
	}
	if r := reserve(s, genID("next2"), 1_000, next); !r.Held {
		t.Fatalf("next day, 1,000: %+v", r)
	}
	if r := reserve(s, genID("next3"), 461, next.Add(-23*time.Hour+time.Minute)); r.Held {
		t.Fatalf("the monthly budget (1,500: 40 spent, 1,000 held) took 461 more: %+v", r)
	}

	if err := s.DeleteWorkspaceBudget(ctx, ws.ID, domain.IntervalWeekly); !errors.Is(err, account.ErrNoBudget) {
		t.Fatalf("delete a budget that is not there: %v", err)
	}
}

// TestDeleteWorkspace: a workspace with a key is not deleted; once it has none, it goes with its budgets and
// memberships; the default workspace's refusal is the use case's (test/api).
func TestDeleteWorkspace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewAccountStore(db)
		ws := account.Workspace{ID: "00000000-0000-4000-8000-0000000000d1", Name: "Doomed", Slug: "doomed", CreatedAt: t0}
		if err := s.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateMember(ctx, account.Member{ID: "user_1", Email: "a@example.com", Role: account.RoleMember, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddWorkspaceMembers(ctx, []account.WorkspaceMembership{{WorkspaceID: ws.ID, UserID: "user_1",
			Role: account.WorkspaceMember, CreatedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		b, _ := account.NewBudget("b1", ws.ID, "daily", 5, false, t0)
		if _, err := s.SetWorkspaceBudget(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateKey(ctx, account.Key{Hash: "dk", Name: "k", Label: "x", WorkspaceID: ws.ID, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWorkspace(ctx, ws.ID); !errors.Is(err, account.ErrWorkspaceInUse) {
			t.Fatalf("delete with a key: %v, want ErrWorkspaceInUse", err)
		}
		if err := s.DeleteKey(ctx, "dk"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWorkspace(ctx, ws.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WorkspaceByRef(ctx, "doomed"); !errors.Is(err, account.ErrNoWorkspace) {
			t.Fatalf("deleted workspace: %v", err)
		}
		for _, table := range []string{"workspace_budgets", "workspace_members"} {
			var n int64
			db.Raw("SELECT count(*) FROM "+table+" WHERE workspace_id = ?", ws.ID).Scan(&n)
			if n != 0 {
				t.Errorf("%s: %d rows left", table, n)
			}
		}
		if err := s.DeleteWorkspace(ctx, ws.ID); !errors.Is(err, account.ErrNoWorkspace) {
			t.Fatalf("delete again: %v", err)
		}
	})
}
