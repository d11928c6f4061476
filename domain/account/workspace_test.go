package account_test

import (
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
)

func TestWorkspaceChange(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	team := account.Workspace{ID: "w", Name: "Team", Slug: "team", CreatedAt: now}
	for _, tt := range []struct {
		name   string
		from   account.Workspace
		change account.WorkspaceChange
		field  string // the field the change is refused for; "" when it applies
		want   account.Workspace
	}{
		{"nothing", team, account.WorkspaceChange{}, "", team},
		{"name", team, account.WorkspaceChange{Name: str("  Team A ")}, "", account.Workspace{ID: "w", Name: "Team A", Slug: "team"}},
		{"slug", team, account.WorkspaceChange{Slug: str("team-a")}, "", account.Workspace{ID: "w", Name: "Team", Slug: "team-a"}},
		{"description", team, account.WorkspaceChange{Description: domain.Patch[string]{Set: true, Value: str("d")}}, "",
			account.Workspace{ID: "w", Name: "Team", Slug: "team", Description: str("d")}},
		{"empty name", team, account.WorkspaceChange{Name: str(" ")}, "name", team},
		{"empty slug", team, account.WorkspaceChange{Slug: str("")}, "slug", team},
		{"bad slug", team, account.WorkspaceChange{Slug: str("Team A")}, "slug", team},
		{"long description", team, account.WorkspaceChange{Description: domain.Patch[string]{Set: true, Value: str(strings.Repeat("d", 501))}}, "description", team},
		{"the default's slug", account.Workspace{ID: "d", Name: "Default", Slug: "default"}, account.WorkspaceChange{Slug: str("other")}, "slug", team},
		{"the default's name", account.Workspace{ID: "d", Name: "Default", Slug: "default"}, account.WorkspaceChange{Name: str("Main")}, "",
			account.Workspace{ID: "d", Name: "Main", Slug: "default"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.from
			err := tt.change.Apply(&w, now)
			if tt.field != "" {
				if de, ok := err.(*domain.Error); !ok || de.Meta["field"] != tt.field {
					t.Fatalf("err %v, want a 400 naming %s", err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Name != tt.want.Name || w.Slug != tt.want.Slug || (w.Description == nil) != (tt.want.Description == nil) ||
				w.UpdatedAt == nil || !w.UpdatedAt.Equal(now) {
				t.Errorf("got %+v, want %+v updated now", w, tt.want)
			}
		})
	}
}

func TestNewBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		interval string
		limit    domain.Micros
		field    string
	}{
		{"daily", 0, ""},
		{"weekly", 5_000_000, ""},
		{"monthly", account.MaxBudget, ""},
		{"hourly", 1, "interval"},
		{"", 1, "interval"},
		{"daily", -1, "limit_usd"},
		{"daily", account.MaxBudget + 1, "limit_usd"},
	} {
		b, err := account.NewBudget("b", "w", tt.interval, tt.limit, true, now)
		if tt.field != "" {
			if de, ok := err.(*domain.Error); !ok || de.Meta["field"] != tt.field {
				t.Errorf("%s %d: err %v, want a 400 naming %s", tt.interval, tt.limit, err, tt.field)
			}
			continue
		}
		if err != nil || b.Interval != domain.Interval(tt.interval) || b.Limit != tt.limit || !b.IncludeBYOK || !b.UpdatedAt.Equal(now) {
			t.Errorf("%s %d: %+v, %v", tt.interval, tt.limit, b, err)
		}
	}
}

// A refused change leaves the workspace as it was.
func TestWorkspaceChangeRefusedLeavesIt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("d", 501)
	w := account.Workspace{ID: "w", Name: "Team", Slug: "team"}
	name := "Other"
	if err := (account.WorkspaceChange{Name: &name, Description: domain.Patch[string]{Set: true, Value: &long}}).Apply(&w, now); err == nil {
		t.Fatal("a description of 501 characters applied")
	}
	if w.Name != "Team" || w.Description != nil || w.UpdatedAt != nil {
		t.Fatalf("refused change left %+v", w)
	}
}
