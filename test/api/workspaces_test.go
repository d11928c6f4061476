package api_test

import (
	"strings"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// Workspaces by id or slug: get, update, delete (refused for the default workspace and while keys are in it),
// members added and removed, budgets set, read and deleted; bad input is a 4xx naming the field.
func TestWorkspaceRoutes(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		id := g.Workspace(t, "team")
		member := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "m@example.com"}).JSON(t)["data"].(map[string]any)["id"].(string)
		admin := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "a@example.com", "role": "org:admin"}).JSON(t)["data"].(map[string]any)["id"].(string)
		key, _ := g.Key(t, nil)

		for _, tt := range []struct {
			name, method, path string
			body               any
			status             int
			contains           string
		}{
			{"get by id", "GET", "/workspaces/" + id, nil, 200, `"slug":"team"`},
			{"get by slug", "GET", "/workspaces/team", nil, 200, `"id":"` + id + `"`},
			{"unknown", "GET", "/workspaces/nope", nil, 404, "workspace_not_found"},
			{"malformed ref", "GET", "/workspaces/Bad%20Ref", nil, 404, "workspace_not_found"},
			{"an inference key", "GET", "/workspaces/team", nil, 403, ""},
			{"update", "PATCH", "/workspaces/team", map[string]any{"name": "Team A", "description": "the A team", "is_observability_io_logging_enabled": true}, 200, `"description":"the A team"`},
			{"renamed slug", "PATCH", "/workspaces/team", map[string]any{"slug": "team-a"}, 200, `"slug":"team-a"`},
			{"description cleared", "PATCH", "/workspaces/team-a", map[string]any{"description": nil}, 200, `"description":null`},
			{"bad slug", "PATCH", "/workspaces/team-a", map[string]any{"slug": "Not A Slug"}, 400, `"field":"slug"`},
			{"bad name type", "PATCH", "/workspaces/team-a", map[string]any{"name": 5}, 400, "name"},
			{"taken slug", "PATCH", "/workspaces/team-a", map[string]any{"slug": "default"}, 409, "workspace_exists"},
			{"default keeps its slug", "PATCH", "/workspaces/default", map[string]any{"slug": "other"}, 400, `"field":"slug"`},
			{"add members", "POST", "/workspaces/team-a/members/add", map[string]any{"user_ids": []string{member, admin, member}}, 200, `"added_count":2`},
			{"add again", "POST", "/workspaces/team-a/members/add", map[string]any{"user_ids": []string{member}}, 200, `"added_count":0`},
			{"add unknown", "POST", "/workspaces/team-a/members/add", map[string]any{"user_ids": []string{"user_nope"}}, 400, `"field":"user_ids"`},
			{"add none", "POST", "/workspaces/team-a/members/add", map[string]any{"user_ids": []string{}}, 400, `"field":"user_ids"`},
			{"list members", "GET", "/workspaces/team-a/members", nil, 200, `"total_count":2`},
			{"admin's role", "GET", "/workspaces/team-a/members", nil, 200, `"role":"admin"`},
			{"remove", "POST", "/workspaces/team-a/members/remove", map[string]any{"user_ids": []string{member, "user_nope"}}, 200, `"removed_count":1`},
			{"no budgets", "GET", "/workspaces/team-a/budgets", nil, 200, `"data":[]`},
			{"set a budget", "PUT", "/workspaces/team-a/budgets/daily", map[string]any{"limit_usd": 2.5}, 200, `"limit_usd":2.5`},
			{"its interval", "GET", "/workspaces/team-a/budgets/daily", nil, 200, `"reset_interval":"daily"`},
			{"with BYOK", "PUT", "/workspaces/team-a/budgets/monthly", map[string]any{"limit_usd": 10, "include_byok_in_budgets": true}, 200, `"include_byok_in_budgets":true`},
			{"both", "GET", "/workspaces/" + id + "/budgets", nil, 200, `"reset_interval":"monthly"`},
			{"bad interval", "PUT", "/workspaces/team-a/budgets/hourly", map[string]any{"limit_usd": 1}, 400, `"field":"interval"`},
			{"no limit", "PUT", "/workspaces/team-a/budgets/weekly", map[string]any{}, 400, `"field":"limit_usd"`},
			{"negative limit", "PUT", "/workspaces/team-a/budgets/weekly", map[string]any{"limit_usd": -1}, 400, "limit_usd"},
			{"no such budget", "GET", "/workspaces/team-a/budgets/weekly", nil, 404, "budget_not_found"},
			{"budget of no workspace", "PUT", "/workspaces/nope/budgets/daily", map[string]any{"limit_usd": 1}, 404, "workspace_not_found"},
			{"delete a budget", "DELETE", "/workspaces/team-a/budgets/monthly", nil, 200, `"deleted":true`},
			{"deleted budget", "DELETE", "/workspaces/team-a/budgets/monthly", nil, 404, "budget_not_found"},
			{"delete the default", "DELETE", "/workspaces/default", nil, 409, "default_workspace"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				k := g.Admin
				if tt.name == "an inference key" {
					k = key
				}
				r := g.Do(t, tt.method, tt.path, k, tt.body)
				if r.Status != tt.status || !strings.Contains(string(r.Body), tt.contains) {
					t.Errorf("%d %s, want %d with %s", r.Status, r.Body, tt.status, tt.contains)
				}
			})
		}

		// A workspace with a key is not deleted; without, it goes, with its budgets.
		_, hash := g.Key(t, map[string]any{"workspace_id": id})
		if r := g.Do(t, "DELETE", "/workspaces/team-a", g.Admin, nil); r.Status != 409 || !strings.Contains(string(r.Body), "workspace_in_use") {
			t.Fatalf("delete with a key: %d %s", r.Status, r.Body)
		}
		if r := g.Do(t, "DELETE", "/keys/"+hash, g.Admin, nil); r.Status != 200 {
			t.Fatal(r.Status)
		}
		if r := g.Do(t, "DELETE", "/workspaces/team-a", g.Admin, nil); r.Status != 200 || string(r.Body) != `{"deleted":true}` {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if r := g.Do(t, "GET", "/workspaces/"+id, g.Admin, nil); r.Status != 404 {
			t.Fatalf("deleted workspace: %d", r.Status)
		}
	})
}

// TestWorkspaceBudgetHoldsAcrossGateways: a workspace's daily budget of $0.05, its key hammered at c=32 through
// two gateways on one PostgreSQL with per-second pricing: what the workspace spends never exceeds it, some calls
// are refused with 402 workspace_budget_reached, and the activity agrees with the records.
func TestWorkspaceBudgetHoldsAcrossGateways(t *testing.T) {
	t.Parallel()
	a, b, body := twoGateways(t)
	ws := a.Workspace(t, "budgeted")
	if r := a.Do(t, "PUT", "/workspaces/budgeted/budgets/daily", a.Admin, map[string]any{"limit_usd": 0.05}); r.Status != 200 {
		t.Fatalf("set budget: %d %s", r.Status, r.Body)
	}
	key, _ := a.Key(t, map[string]any{"workspace_id": ws})
	ok := hammer(t, []*harness.Gateway{a, b}, key, body, 96, 32)
	refused := speak(t, a, key, body)
	a.Stop()
	b.Stop()
	if refused.Status != 402 || !strings.Contains(string(refused.Body), "workspace_budget_reached") {
		t.Errorf("a call past the budget: %d %s", refused.Status, refused.Body)
	}

	db, err := gorm.Open(postgres.Open(a.DatabaseURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var spent, activity int64
	db.Raw("SELECT COALESCE(SUM(total_cost_micros), 0) FROM generations WHERE workspace_id = ?", ws).Scan(&spent)
	db.Raw("SELECT COALESCE(SUM(cost_micros), 0) FROM workspace_activity WHERE workspace_id = ?", ws).Scan(&activity)
	t.Logf("workspace budget $0.05: %d of 96 calls answered, $%.6f spent", ok, float64(spent)/1e6)
	if spent > 50_000 || activity != spent || ok == 0 || ok == 96 {
		t.Errorf("spent %d micro-dollars of 50,000 (activity %d) in %d of 96 calls", spent, activity, ok)
	}
}
