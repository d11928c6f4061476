package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

const guardrailShape = `{allowed_data_regions:ADR,allowed_models:[string],allowed_providers:null,content_filter_builtins:[{action:string,label:string,slug:string}],
	content_filters:[{action:string,label:null,pattern:string}],created_at:string,description:DESC,id:string,ignored_models:null,
	ignored_providers:null,include_byok_in_budgets:boolean,limit_usd:number,name:string,reset_interval:string,updated_at:UPD,workspace_id:string}`

func guardrailOf(desc, upd, adr string) string {
	return strings.NewReplacer("DESC", desc, "UPD", upd, "ADR", adr).Replace(guardrailShape)
}

func members(t *testing.T, g *harness.Gateway, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		r := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": fmt.Sprintf("m%d-%s@example.com", i, t.Name()[len(t.Name())-3:])})
		if r.Status != 201 {
			t.Fatalf("add member: %d %s", r.Status, r.Body)
		}
		ids[i] = r.JSON(t)["data"].(map[string]any)["id"].(string)
	}
	return ids
}

func createGuardrail(t *testing.T, g *harness.Gateway, body string) string {
	t.Helper()
	r := g.Do(t, "POST", "/guardrails", g.Admin, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create guardrail: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)["data"].(map[string]any)["id"].(string)
}

func TestGuardrailCRUD(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	r := g.Do(t, "POST", "/guardrails", g.Admin, `{"name":"team","description":"d","limit_usd":12.5,"reset_interval":"weekly",
		"allowed_models":["openai/*"],"content_filters":[{"pattern":"secret","action":"block"}],
		"content_filter_builtins":[{"slug":"email","action":"redact","label":"ignored"}]}`)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	harness.AssertShape(t, r.JSON(t), "{data:"+guardrailOf("string", "null", "null")+"}")
	d := r.JSON(t)["data"].(map[string]any)
	id := d["id"].(string)
	if jsonString(d["limit_usd"]) != "12.5" || d["content_filter_builtins"].([]any)[0].(map[string]any)["label"] != "[EMAIL]" {
		t.Fatalf("create: %s", r.Body)
	}

	harness.AssertShape(t, g.Do(t, "GET", "/guardrails/"+id, g.Admin, nil).JSON(t), "{data:"+guardrailOf("string", "null", "null")+"}")
	list := g.Do(t, "GET", "/guardrails?limit=10", g.Admin, nil).JSON(t)
	if jsonString(list["total_count"]) != "1" {
		t.Fatalf("list: %v", list)
	}

	// PATCH: null clears, absent keeps, arrays are replaced wholesale.
	r = g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"description":null,"allowed_data_regions":["eu","us"]}`)
	harness.AssertError(t, r, 400) // "eu" is not a region: nothing changes
	r = g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"description":null,"allowed_data_regions":["europe"]}`)
	harness.AssertShape(t, r.JSON(t), "{data:"+guardrailOf("null", "string", "[string]")+"}")
	if d := r.JSON(t)["data"].(map[string]any); d["name"] != "team" || jsonString(d["limit_usd"]) != "12.5" {
		t.Fatalf("absent fields changed: %s", r.Body)
	}
	harness.AssertError(t, g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"reset_interval":null}`), 400) // limit needs it
	harness.AssertError(t, g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"name":null}`), 400)
	r = g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"limit_usd":null,"reset_interval":null,"content_filters":null}`)
	if d := r.JSON(t)["data"].(map[string]any); r.Status != 200 || d["limit_usd"] != nil || d["content_filters"] != nil {
		t.Fatalf("clearing: %d %s", r.Status, r.Body)
	}

	r = g.Do(t, "DELETE", "/guardrails/"+id, g.Admin, nil)
	if r.Status != 200 || string(r.Body) != `{"deleted":true}` {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	harness.AssertError(t, g.Do(t, "GET", "/guardrails/"+id, g.Admin, nil), 404)
	harness.AssertError(t, g.Do(t, "DELETE", "/guardrails/"+id, g.Admin, nil), 404)
	harness.AssertError(t, g.Do(t, "PATCH", "/guardrails/"+id, g.Admin, `{"name":"x"}`), 404)
}

func TestGuardrailValidation(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	inference, _ := g.Key(t, nil)
	tests := []struct {
		body  string
		field string
	}{
		{`{}`, "name"},
		{`{"name":"x","limit_usd":5}`, "reset_interval"},
		{`{"name":"x","limit_usd":5,"reset_interval":"hourly"}`, "reset_interval"},
		{`{"name":"x","limit_usd":"5","reset_interval":"daily"}`, "limit_usd"},
		{`{"name":"x","content_filters":[{"pattern":"(","action":"block"}]}`, "content_filters[0].pattern"},
		{`{"name":"x","content_filters":[{"pattern":"` + strings.Repeat("a", 1001) + `","action":"block"}]}`, "content_filters[0].pattern"},
		{`{"name":"x","content_filters":[{"pattern":"a","action":"delete"}]}`, "content_filters[0].action"},
		{`{"name":"x","content_filter_builtins":[{"slug":"dna","action":"block"}]}`, "content_filter_builtins[0].slug"},
		{`{"name":"x","allowed_models":"all"}`, "allowed_models"},
		{`{"name":"x","workspace_id":"nope"}`, "workspace_id"},
		{`{"name":"x","include_byok_in_budgets":null}`, "include_byok_in_budgets"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			e := harness.AssertError(t, g.Do(t, "POST", "/guardrails", g.Admin, tt.body), 400)
			if !strings.Contains(e["message"].(string), tt.field) {
				t.Fatalf("message %q does not name %s", e["message"], tt.field)
			}
		})
	}
	harness.AssertError(t, g.Do(t, "POST", "/guardrails", inference, `{"name":"x"}`), 403)
	harness.AssertError(t, g.Do(t, "POST", "/guardrails", "", `{"name":"x"}`), 401)
	if n := jsonString(g.Do(t, "GET", "/guardrails", g.Admin, nil).JSON(t)["total_count"]); n != "0" {
		t.Fatalf("failed creations left %s guardrails", n)
	}
}

func TestAssignMembers(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	inference, _ := g.Key(t, nil)
	ids := members(t, g, 4)
	a := createGuardrail(t, g, `{"name":"a"}`)
	b := createGuardrail(t, g, `{"name":"b"}`)
	assign := func(gr string, body any) harness.Response {
		return g.Do(t, "POST", "/guardrails/"+gr+"/assignments/members", g.Admin, body)
	}
	count := func(r harness.Response) string {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("assign: %d %s", r.Status, r.Body)
		}
		harness.AssertShape(t, r.JSON(t), "{assigned_count:number}")
		return jsonString(r.JSON(t)["assigned_count"])
	}

	if n := count(assign(a, map[string]any{"member_user_ids": []string{ids[0], ids[1], ids[1]}})); n != "2" {
		t.Fatalf("first assignment counted %s, want 2 (duplicates count once)", n)
	}
	if n := count(assign(a, map[string]any{"member_user_ids": []string{ids[1], ids[0]}})); n != "0" {
		t.Fatalf("repeating counted %s, want 0", n)
	}
	if n := count(assign(b, map[string]any{"member_user_ids": []string{ids[1], ids[2]}})); n != "2" {
		t.Fatalf("move + new counted %s, want 2", n)
	}
	listA := g.Do(t, "GET", "/guardrails/"+a+"/assignments/members", g.Admin, nil)
	harness.AssertShape(t, listA.JSON(t), `{data:[{assigned_by:null,created_at:string,guardrail_id:string,id:string,organization_id:string,user_id:string}],total_count:number}`)
	if got := listA.JSON(t)["data"].([]any); len(got) != 1 || got[0].(map[string]any)["user_id"] != ids[0] {
		t.Fatalf("a member holds two guardrails: %s", listA.Body)
	}
	if all := g.Do(t, "GET", "/guardrails/assignments/members", g.Admin, nil).JSON(t); jsonString(all["total_count"]) != "3" {
		t.Fatalf("all assignments: %v", all)
	}

	// All or nothing: one unknown member and nobody is assigned; the 400 lists the unknown ids.
	e := harness.AssertError(t, assign(a, map[string]any{"member_user_ids": []string{ids[3], "user_ghost", "user_phantom"}}), 400)
	if msg := e["message"].(string); !strings.Contains(msg, "user_ghost") || !strings.Contains(msg, "user_phantom") {
		t.Fatalf("400 does not list the unknown ids: %s", msg)
	}
	if n := count(assign(a, map[string]any{"member_user_ids": []string{ids[3]}})); n != "1" {
		t.Fatal("a refused call assigned someone")
	}

	r := g.Do(t, "POST", "/guardrails/"+b+"/assignments/members/remove", g.Admin, map[string]any{"member_user_ids": []string{ids[1], ids[0]}})
	if r.Status != 200 || jsonString(r.JSON(t)["unassigned_count"]) != "1" {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}

	tests := []struct {
		name   string
		gr     string
		key    string
		body   string
		status int
	}{
		{"missing field", a, g.Admin, `{}`, 400},
		{"empty list", a, g.Admin, `{"member_user_ids":[]}`, 400},
		{"empty id", a, g.Admin, `{"member_user_ids":[""]}`, 400},
		{"not an array", a, g.Admin, `{"member_user_ids":"user_1"}`, 400},
		{"numbers", a, g.Admin, `{"member_user_ids":[1]}`, 400},
		{"null", a, g.Admin, `{"member_user_ids":null}`, 400},
		{"malformed", a, g.Admin, `{"member_user_ids":[`, 400},
		{"unknown guardrail", "00000000-0000-4000-8000-000000000000", g.Admin, `{"member_user_ids":["x"]}`, 404},
		{"inference key", a, inference, `{"member_user_ids":["x"]}`, 403},
		{"no key", a, "", `{"member_user_ids":["x"]}`, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := harness.AssertError(t, g.Do(t, "POST", "/guardrails/"+tt.gr+"/assignments/members", tt.key, tt.body), tt.status)
			if tt.status == 400 && !strings.Contains(e["message"].(string), "member_user_ids") && tt.name != "malformed" {
				t.Fatalf("400 does not name member_user_ids: %v", e["message"])
			}
		})
	}
}

func TestAssignKeys(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	_, h1 := g.Key(t, map[string]any{"name": "one"})
	_, h2 := g.Key(t, map[string]any{"name": "two"})
	a := createGuardrail(t, g, `{"name":"a"}`)
	b := createGuardrail(t, g, `{"name":"b"}`)
	r := g.Do(t, "POST", "/guardrails/"+a+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{h1, h2}})
	if r.Status != 200 || jsonString(r.JSON(t)["assigned_count"]) != "2" {
		t.Fatalf("assign keys: %d %s", r.Status, r.Body)
	}
	r = g.Do(t, "POST", "/guardrails/"+b+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{h2}})
	if jsonString(r.JSON(t)["assigned_count"]) != "1" {
		t.Fatalf("move key: %s", r.Body)
	}
	list := g.Do(t, "GET", "/guardrails/"+b+"/assignments/keys", g.Admin, nil)
	harness.AssertShape(t, list.JSON(t), `{data:[{assigned_by:null,created_at:string,guardrail_id:string,id:string,key_hash:string,key_label:string,key_name:string}],total_count:number}`)
	if d := list.JSON(t)["data"].([]any)[0].(map[string]any); d["key_name"] != "two" {
		t.Fatalf("key assignment: %s", list.Body)
	}
	e := harness.AssertError(t, g.Do(t, "POST", "/guardrails/"+a+"/assignments/keys", g.Admin, map[string]any{"key_hashes": []string{"nope"}}), 400)
	if !strings.Contains(e["message"].(string), "nope") {
		t.Fatalf("unknown hash not listed: %v", e["message"])
	}
	// Deleting a key drops its assignment.
	g.Do(t, "DELETE", "/keys/"+h2, g.Admin, nil)
	if n := jsonString(g.Do(t, "GET", "/guardrails/assignments/keys", g.Admin, nil).JSON(t)["total_count"]); n != "1" {
		t.Fatalf("assignments after deleting a key: %s", n)
	}
	r = g.Do(t, "POST", "/guardrails/"+a+"/assignments/keys/remove", g.Admin, map[string]any{"key_hashes": []string{h1}})
	if jsonString(r.JSON(t)["unassigned_count"]) != "1" {
		t.Fatalf("remove keys: %s", r.Body)
	}
	harness.AssertError(t, g.Do(t, "GET", "/guardrails/nope/assignments/keys", g.Admin, nil), 404)
}

// TestConcurrentAssignments runs 20 assignment calls at once over overlapping members: the counts add up to the
// number of distinct members and each member holds exactly one row.
func TestConcurrentAssignments(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		ids := members(t, g, 10)
		gr := createGuardrail(t, g, `{"name":"busy"}`)
		const calls = 20
		var wg sync.WaitGroup
		counts := make([]int64, calls)
		for c := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				subset := []string{ids[c%10], ids[(c+3)%10], ids[(c+7)%10]} // every member appears in several calls
				r := g.Do(t, "POST", "/guardrails/"+gr+"/assignments/members", g.Admin, map[string]any{"member_user_ids": subset})
				if r.Status != 200 {
					t.Errorf("call %d: %d %s", c, r.Status, r.Body)
					return
				}
				counts[c], _ = r.JSON(t)["assigned_count"].(interface{ Int64() (int64, error) }).Int64()
			}()
		}
		wg.Wait()
		var sum int64
		for _, n := range counts {
			sum += n
		}
		if sum != 10 {
			t.Fatalf("assigned_count sums to %d over 20 calls, want 10 (one per distinct member)", sum)
		}
		if n := jsonString(g.Do(t, "GET", "/guardrails/"+gr+"/assignments/members?limit=100", g.Admin, nil).JSON(t)["total_count"]); n != "10" {
			t.Fatalf("%s assignment rows, want 10", n)
		}
	})
}
