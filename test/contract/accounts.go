package contract

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// Accounts is every port the account store serves.
type Accounts interface {
	ports.Directory
	ports.KeyStore
	ports.UsageStore
	ports.MemberStore
}

// AccountStore checks workspaces, the organization, keys (round trip, listing, updates under lock, deletion
// with their usage), usage by UTC day and window, and members.
func AccountStore(t *testing.T, newStore func(t *testing.T) Accounts) {
	ctx := context.Background()
	s := newStore(t)

	ws, err := s.DefaultWorkspace(ctx)
	if err != nil || ws.Slug != account.DefaultWorkspaceSlug || ws.ID == "" {
		t.Fatalf("DefaultWorkspace = %+v, %v", ws, err)
	}
	if _, err := s.Workspace(ctx, "nope"); !errors.Is(err, account.ErrWorkspaceNotFound) {
		t.Fatalf("Workspace(nope) err = %v, want ErrWorkspaceNotFound", err)
	}
	org, err := s.Organization(ctx)
	if err != nil || org.ID == "" {
		t.Fatalf("Organization = %+v, %v", org, err)
	}
	has, err := s.HasManagementKey(ctx)
	if err != nil || has {
		t.Fatalf("HasManagementKey on empty db = %v, %v", has, err)
	}
	limit := domain.Micros(5_000_000)
	k := account.Key{Hash: "h1", Name: "one", Label: "sk-...", Management: true, Limit: &limit,
		LimitReset: domain.IntervalWeekly, ExpiresAt: ptr(t0.Add(time.Hour)), WorkspaceID: ws.ID,
		CreatorUserID: ptr("user_1"), CreatedAt: t0}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.Key(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != k.Name || !got.CreatedAt.Equal(t0) || *got.Limit != limit || got.LimitReset != domain.IntervalWeekly ||
		!got.ExpiresAt.Equal(*k.ExpiresAt) || *got.CreatorUserID != "user_1" || !got.Management {
		t.Fatalf("Key round trip: got %+v, want %+v", got, k)
	}
	if has, _ := s.HasManagementKey(ctx); !has {
		t.Fatal("HasManagementKey = false after creating one")
	}
	if _, err := s.Key(ctx, "missing"); !errors.Is(err, account.ErrKeyNotFound) {
		t.Fatalf("Key(missing) err = %v", err)
	}

	if err := s.CreateKey(ctx, account.Key{Hash: "h2", Name: "two", Label: "x", WorkspaceID: ws.ID,
		Disabled: true, CreatedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	list, _ := s.ListKeys(ctx, ports.KeyFilter{})
	if len(list) != 1 || list[0].Hash != "h1" {
		t.Fatalf("ListKeys without disabled = %v", list)
	}
	list, _ = s.ListKeys(ctx, ports.KeyFilter{IncludeDisabled: true})
	if len(list) != 2 || list[0].Hash != "h2" {
		t.Fatalf("ListKeys with disabled, newest first = %v", list)
	}
	if list, _ = s.ListKeys(ctx, ports.KeyFilter{IncludeDisabled: true, WorkspaceID: "other"}); len(list) != 0 {
		t.Fatalf("ListKeys(other workspace) = %v", list)
	}

	updated, err := s.UpdateKey(ctx, "h1", func(k *account.Key) error { k.Name = "renamed"; k.Limit = nil; return nil })
	if err != nil || updated.Name != "renamed" || updated.Limit != nil {
		t.Fatalf("UpdateKey = %+v, %v", updated, err)
	}
	if got, _ := s.Key(ctx, "h1"); got.Name != "renamed" || got.Limit != nil {
		t.Fatalf("UpdateKey not stored: %+v", got)
	}
	refuse := domain.Invalid("name", "no")
	if _, err := s.UpdateKey(ctx, "h1", func(k *account.Key) error { k.Name = "x"; return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("UpdateKey with failing change err = %v", err)
	}
	if got, _ := s.Key(ctx, "h1"); got.Name != "renamed" {
		t.Fatal("a failed change was stored")
	}

	// Usage by UTC day: today, earlier this week, earlier this month, last month.
	for _, u := range []struct {
		at time.Time
		m  domain.Micros
	}{{t0, 1}, {t0, 2}, {t0.AddDate(0, 0, -2), 10}, {t0.AddDate(0, 0, -10), 100}, {t0.AddDate(0, -1, 0), 1000}} {
		if err := s.AddUsage(ctx, "h1", u.at, u.m); err != nil {
			t.Fatal(err)
		}
	}
	usage, err := s.Usage(ctx, []string{"h1", "h2"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := account.Usage{Total: 1113, Daily: 3, Weekly: 13, Monthly: 113}
	if usage["h1"] != want {
		t.Fatalf("Usage = %+v, want %+v", usage["h1"], want)
	}
	if _, ok := usage["h2"]; ok {
		t.Fatal("a key without spend has usage")
	}
	// A reservation past the key's limit is refused however large it is (no sum wraps around), and says what was
	// left of the limit.
	for _, amount := range []domain.Micros{1_000_000 - 2, math.MaxInt64, math.MaxInt64 - 2} {
		if res, err := s.ReserveUsage(ctx, fmt.Sprintf("huge-%d", amount), "h1", t0, 1_000_000, amount, t0, t0.Add(time.Minute)); err != nil ||
			res != (ports.Reservation{Left: 1_000_000 - 3}) {
			t.Fatalf("ReserveUsage(%d) against a limit of 1,000,000 with 3 used = %+v, %v; want refused with 999,997 left", amount, res, err)
		}
	}

	if err := s.DeleteKey(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteKey(ctx, "h1"); !errors.Is(err, account.ErrKeyNotFound) {
		t.Fatalf("second DeleteKey err = %v", err)
	}
	if usage, _ := s.Usage(ctx, []string{"h1"}, t0); len(usage) != 0 {
		t.Fatal("deleting a key left its usage")
	}

	m := account.Member{ID: "user_a", Email: "a@example.com", Role: account.RoleAdmin, CreatedAt: t0}
	if err := s.CreateMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateMember(ctx, account.Member{ID: "user_b", Email: "a@example.com", Role: account.RoleMember, CreatedAt: t0}); !errors.Is(err, account.ErrMemberExists) {
		t.Fatalf("duplicate email err = %v, want ErrMemberExists", err)
	}
	unknown, err := s.UnknownMembers(ctx, []string{"user_x", "user_a", "user_y"})
	if err != nil || len(unknown) != 2 || unknown[0] != "user_x" || unknown[1] != "user_y" {
		t.Fatalf("UnknownMembers = %v, %v", unknown, err)
	}
	ms, total, err := s.ListMembers(ctx, ports.Page{Limit: 10})
	if err != nil || total != 1 || len(ms) != 1 || ms[0].Email != m.Email {
		t.Fatalf("ListMembers = %v, %d, %v", ms, total, err)
	}
}
