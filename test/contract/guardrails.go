package contract

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
)

// Guardrails is every port the guardrail store serves, with the account ports its assignments refer to.
type Guardrails struct {
	Guardrails  ports.GuardrailStore
	Assignments ports.AssignmentStore
	Budgets     ports.BudgetStore
	Members     ports.MemberStore
	Keys        ports.KeyStore
	// Workspace is a workspace that exists.
	Workspace string
}

// GuardrailStore checks guardrails (round trip, listing, updates, deletion with their assignments), who holds
// which (one guardrail per member or key, moved on reassignment), and budgets: reservations that never
// overspend, even concurrently, holds that expire, and settlements.
func GuardrailStore(t *testing.T, newStore func(t *testing.T) Guardrails) {
	ctx := context.Background()
	s := newStore(t)
	limit := domain.Micros(1_000)
	desc, label, scope := "the team's", "codes", "input"
	full := guardrail.Guardrail{ID: "g-full", WorkspaceID: s.Workspace, CreatedAt: t0,
		Spec: guardrail.Spec{Name: "team", Description: &desc, LimitUSD: &limit, ResetInterval: domain.IntervalDaily,
			AllowedModels: []string{"acme/voice"}, IgnoredModels: []string{}, AllowedProviders: []string{"openai"},
			IgnoredProviders: []string{"espeak"}, AllowedDataRegions: []string{"global"},
			ContentFilters:       []guardrail.ContentFilter{{Pattern: "(?i)launch codes", Action: guardrail.Block, Label: &label}},
			Builtins:             []guardrail.Builtin{{Slug: "email", Action: guardrail.Redact, ScanScope: &scope}},
			IncludeBYOKInBudgets: true}}
	bare := guardrail.Guardrail{ID: "g-bare", WorkspaceID: s.Workspace, CreatedAt: t0.Add(time.Second), Spec: guardrail.Spec{Name: "bare"}}
	for _, g := range []guardrail.Guardrail{full, bare} {
		if err := s.Guardrails.CreateGuardrail(ctx, g); err != nil {
			t.Fatalf("CreateGuardrail(%s): %v", g.ID, err)
		}
	}
	if got, err := s.Guardrails.Guardrail(ctx, full.ID); err != nil || !reflect.DeepEqual(got, full) {
		t.Fatalf("round trip (%v)\n got %+v\nwant %+v", err, got, full)
	}
	if got, err := s.Guardrails.Guardrail(ctx, bare.ID); err != nil || !reflect.DeepEqual(got, bare) {
		t.Fatalf("unset lists stay unset (%v)\n got %+v\nwant %+v", err, got, bare)
	}
	if _, err := s.Guardrails.Guardrail(ctx, "nope"); !errors.Is(err, guardrail.ErrNotFound) {
		t.Fatalf("Guardrail(nope) err = %v", err)
	}
	list, total, err := s.Guardrails.ListGuardrails(ctx, s.Workspace, ports.Page{Limit: 1})
	if err != nil || total != 2 || len(list) != 1 || list[0].ID != bare.ID {
		t.Fatalf("ListGuardrails, newest first, one a page = %v, %d, %v", list, total, err)
	}
	if list, total, _ := s.Guardrails.ListGuardrails(ctx, "other-workspace", ports.Page{Limit: 10}); total != 0 || len(list) != 0 {
		t.Fatalf("another workspace's guardrails: %v", list)
	}

	updated, err := s.Guardrails.UpdateGuardrail(ctx, bare.ID, func(g *guardrail.Guardrail) error {
		g.Name, g.UpdatedAt = "renamed", ptr(t0.Add(time.Hour))
		return nil
	})
	if err != nil || updated.Name != "renamed" {
		t.Fatalf("UpdateGuardrail = %+v, %v", updated, err)
	}
	refused := errors.New("refused")
	if _, err := s.Guardrails.UpdateGuardrail(ctx, bare.ID, func(g *guardrail.Guardrail) error { g.Name = "x"; return refused }); !errors.Is(err, refused) {
		t.Fatalf("a failing change: err = %v", err)
	}
	if got, _ := s.Guardrails.Guardrail(ctx, bare.ID); got.Name != "renamed" || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after updates: %+v", got)
	}
	if _, err := s.Guardrails.UpdateGuardrail(ctx, "nope", func(*guardrail.Guardrail) error { return nil }); !errors.Is(err, guardrail.ErrNotFound) {
		t.Fatalf("UpdateGuardrail(nope) err = %v", err)
	}

	// Assignments: a member and its key, each holding one guardrail.
	for _, id := range []string{"user_a", "user_b"} {
		if err := s.Members.CreateMember(ctx, account.Member{ID: id, Email: id + "@x.io", Role: account.RoleMember, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	user := "user_a"
	if err := s.Keys.CreateKey(ctx, account.Key{Hash: "kh", Name: "k", Label: "sk-...", WorkspaceID: s.Workspace, CreatorUserID: &user, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	assign := func(what string, n int, err error, want int) {
		t.Helper()
		if err != nil || n != want {
			t.Fatalf("%s = %d, %v; want %d", what, n, err, want)
		}
	}
	n, err := s.Assignments.AssignMembers(ctx, full.ID, []string{"user_a", "user_b"}, nil, t0)
	assign("AssignMembers", n, err, 2)
	n, err = s.Assignments.AssignMembers(ctx, full.ID, []string{"user_a"}, nil, t0)
	assign("AssignMembers again", n, err, 0)
	n, err = s.Assignments.AssignKeys(ctx, bare.ID, []string{"kh"}, &user, t0)
	assign("AssignKeys", n, err, 1)
	applicable, err := s.Guardrails.Applicable(ctx, "kh", &user)
	ids := func(gs []guardrail.Guardrail) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.ID)
		}
		slices.Sort(out)
		return out
	}
	if err != nil || !slices.Equal(ids(applicable), []string{"g-bare", "g-full"}) {
		t.Fatalf("Applicable = %v, %v; want the key's and its member's", ids(applicable), err)
	}
	n, err = s.Assignments.AssignMembers(ctx, bare.ID, []string{"user_b"}, nil, t0)
	assign("moving a member", n, err, 1)
	members, total, err := s.Assignments.MemberAssignments(ctx, full.ID, ports.Page{Limit: 10})
	if err != nil || total != 1 || members[0].UserID != "user_a" {
		t.Fatalf("MemberAssignments after a move = %+v, %d, %v", members, total, err)
	}
	keys, total, err := s.Assignments.KeyAssignments(ctx, bare.ID, ports.Page{Limit: 10})
	if err != nil || total != 1 || keys[0].KeyHash != "kh" || keys[0].KeyName != "k" || keys[0].KeyLabel != "sk-..." || *keys[0].AssignedBy != user {
		t.Fatalf("KeyAssignments = %+v, %d, %v", keys, total, err)
	}
	if unknown, err := s.Assignments.UnknownKeys(ctx, []string{"x", "kh", "y"}); err != nil || !slices.Equal(unknown, []string{"x", "y"}) {
		t.Fatalf("UnknownKeys = %v, %v", unknown, err)
	}
	n, err = s.Assignments.UnassignKeys(ctx, bare.ID, []string{"kh", "other"})
	assign("UnassignKeys", n, err, 1)
	n, err = s.Assignments.UnassignMembers(ctx, full.ID, []string{"user_b"}) // user_b holds bare now
	assign("UnassignMembers of another guardrail's member", n, err, 0)

	if err := s.Guardrails.DeleteGuardrail(ctx, bare.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Guardrails.DeleteGuardrail(ctx, bare.ID); !errors.Is(err, guardrail.ErrNotFound) {
		t.Fatalf("second DeleteGuardrail err = %v", err)
	}
	if _, err := s.Assignments.AssignMembers(ctx, bare.ID, []string{"user_b"}, nil, t0); !errors.Is(err, guardrail.ErrNotFound) {
		t.Fatalf("assigning to a deleted guardrail: err = %v", err)
	}
	if _, total, _ := s.Assignments.MemberAssignments(ctx, bare.ID, ports.Page{Limit: 10}); total != 0 {
		t.Fatal("a deleted guardrail kept its assignments")
	}

	// Budgets: holds count until settled or expired; a settlement adds what was spent.
	window := domain.IntervalDaily.Start(t0)
	hold := func(id string, amount domain.Micros) guardrail.Hold {
		return guardrail.Hold{ID: id, GuardrailID: full.ID, Window: window, Amount: amount}
	}
	reserve := func(h guardrail.Hold, now time.Time, want bool) {
		t.Helper()
		if res, err := s.Budgets.Reserve(ctx, h, limit, now, now.Add(time.Minute)); err != nil || res.Held != want {
			t.Fatalf("Reserve(%s, %v) = %+v, %v; want held %v", h.ID, h.Amount, res, err, want)
		}
	}
	reserve(hold("h1", 600), t0, true)
	if res, _ := s.Budgets.Reserve(ctx, hold("h2", 500), limit, t0, t0.Add(time.Minute)); res != (ports.Reservation{Left: limit - 600}) {
		t.Fatalf("Reserve(h2, 500) with 600 of %v held = %+v; want refused with what is left", limit, res) // 600 held + 500 > 1000
	}
	reserve(hold("huge", math.MaxInt64), t0, false) // no sum wraps around
	reserve(hold("huge-2", math.MaxInt64-500), t0, false)
	reserve(hold("h3", 400), t0, true) // exactly the limit
	if err := s.Budgets.Settle(ctx, hold("h1", 600), 300); err != nil {
		t.Fatal(err)
	}
	if spent, err := s.Budgets.Spent(ctx, full.ID, window); err != nil || spent != 300 {
		t.Fatalf("Spent = %v, %v; want 300", spent, err)
	}
	reserve(hold("h4", 300), t0, true)                    // 300 spent + 400 held + 300
	reserve(hold("h5", 400), t0.Add(2*time.Minute), true) // h3 and h4 expired: 300 spent + 400
	if spent, _ := s.Budgets.Spent(ctx, full.ID, window.AddDate(0, 0, 1)); spent != 0 {
		t.Fatalf("another window's spend = %v", spent)
	}

	// Concurrent reservations never overspend and never refuse while room remains.
	other := guardrail.Guardrail{ID: "g-race", WorkspaceID: s.Workspace, CreatedAt: t0, Spec: guardrail.Spec{Name: "race", LimitUSD: &limit}}
	if err := s.Guardrails.CreateGuardrail(ctx, other); err != nil {
		t.Fatal(err)
	}
	const callers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := guardrail.Hold{ID: "race-" + string(rune('a'+i)), GuardrailID: other.ID, Window: window, Amount: 100}
			res, err := s.Budgets.Reserve(ctx, h, limit, t0, t0.Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if res.Held {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != int(limit/100) {
		t.Fatalf("%d of %d concurrent reservations of 100 won under a limit of %v", won, callers, limit)
	}
}
