package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/harness"
)

const keyInfoShape = `{byok_usage:number,byok_usage_daily:number,byok_usage_monthly:number,byok_usage_weekly:number,
	created_at:string,creator_user_id:null,disabled:boolean,expires_at:null,external_user:null,hash:string,
	include_byok_in_limit:boolean,is_management_key:boolean,label:string,limit:null,limit_remaining:null,limit_reset:null,
	name:string,requests_per_minute:null,tokens_per_day:null,tokens_per_minute:null,updated_at:null,usage:number,usage_daily:number,usage_monthly:number,
	usage_weekly:number,workspace_id:string}`

func TestKeysLifecycle(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)

	r := g.Do(t, "POST", "/keys", g.Admin, map[string]any{"name": "app"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	created := r.JSON(t)
	harness.AssertShape(t, created, `{data:`+keyInfoShape+`,key:string}`)
	secret := created["key"].(string)
	hash := created["data"].(map[string]any)["hash"].(string)
	if !strings.HasPrefix(secret, "sk-sb-v1-") || len(secret) != len("sk-sb-v1-")+64 {
		t.Fatalf("secret %q is not a 256-bit sk-sb-v1- key", secret)
	}
	if strings.Contains(string(g.Do(t, "GET", "/keys/"+hash, g.Admin, nil).Body), secret) {
		t.Fatal("the secret is shown again after creation")
	}

	list := g.Do(t, "GET", "/keys", g.Admin, nil)
	harness.AssertShape(t, list.JSON(t), `{data:[`+keyInfoShape+`]}`)
	if n := len(list.JSON(t)["data"].([]any)); n != 2 {
		t.Fatalf("list has %d keys, want 2 (admin and app)", n)
	}

	// PATCH: a value sets, null clears, an absent key keeps.
	r = g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"limit": 12.5, "limit_reset": "daily", "name": "renamed"})
	d := r.JSON(t)["data"].(map[string]any)
	if r.Status != 200 || d["limit"].(interface{ String() string }).String() != "12.5" || d["limit_reset"] != "daily" ||
		d["name"] != "renamed" || d["updated_at"] == nil || d["limit_remaining"].(interface{ String() string }).String() != "12.5" {
		t.Fatalf("patch set: %d %s", r.Status, r.Body)
	}
	r = g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"limit": null}`)
	d = r.JSON(t)["data"].(map[string]any)
	if d["limit"] != nil || d["limit_reset"] != "daily" || d["name"] != "renamed" {
		t.Fatalf("patch null/absent: %s", r.Body)
	}

	// The key works until it is disabled.
	if r := g.Do(t, "GET", "/key", secret, nil); r.Status != 200 {
		t.Fatalf("GET /key with the new key: %d %s", r.Status, r.Body)
	}
	g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"disabled": true})
	harness.AssertError(t, g.Do(t, "GET", "/key", secret, nil), 401)
	if n := len(g.Do(t, "GET", "/keys", g.Admin, nil).JSON(t)["data"].([]any)); n != 1 {
		t.Fatalf("disabled keys are listed by default (%d keys)", n)
	}
	if n := len(g.Do(t, "GET", "/keys?include_disabled=true", g.Admin, nil).JSON(t)["data"].([]any)); n != 2 {
		t.Fatalf("include_disabled=true lists %d keys, want 2", n)
	}

	r = g.Do(t, "DELETE", "/keys/"+hash, g.Admin, nil)
	if r.Status != 200 || string(r.Body) != `{"deleted":true}` {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	harness.AssertError(t, g.Do(t, "DELETE", "/keys/"+hash, g.Admin, nil), 404)
	harness.AssertError(t, g.Do(t, "GET", "/keys/"+hash, g.Admin, nil), 404)
}

func TestCurrentKey(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	secret, _ := g.Key(t, map[string]any{"limit": 3, "limit_reset": "monthly", "expires_at": "2099-01-01T00:00:00.000Z"})
	r := g.Do(t, "GET", "/key", secret, nil)
	harness.AssertShape(t, r.JSON(t), `{data:{allowed_data_regions:[],byok_usage:number,byok_usage_daily:number,
		byok_usage_monthly:number,byok_usage_weekly:number,creator_user_id:null,expires_at:string,
		free_model_daily_requests:{limit:number,remaining:number,used:number},include_byok_in_limit:boolean,
		is_free_tier:boolean,is_management_key:boolean,is_provisioning_key:boolean,label:string,limit:number,
		limit_remaining:number,limit_reset:string,organization_id:string,rate_limit:{interval:string,note:string,requests:number},
		usage:number,usage_daily:number,usage_monthly:number,usage_weekly:number,workspace_id:string}}`)
	if d := r.JSON(t)["data"].(map[string]any); d["expires_at"] != "2099-01-01T00:00:00.000Z" || d["is_management_key"] != false {
		t.Fatalf("GET /key: %s", r.Body)
	}
	if d := g.Do(t, "GET", "/key", g.Admin, nil).JSON(t)["data"].(map[string]any); d["is_management_key"] != true {
		t.Fatal("a management key is not reported as one")
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	clock := harness.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := harness.Start(t, harness.WithClock(clock))
	inference, _ := g.Key(t, nil)
	expiring, _ := g.Key(t, map[string]any{"expires_at": "2026-01-01T00:01:00Z"})
	clock.Advance(2 * time.Minute)

	tests := []struct {
		name   string
		header string
		method string
		path   string
		status int
	}{
		{"no header", "", "GET", "/keys", 401},
		{"not bearer", "Basic " + g.Admin, "GET", "/keys", 401},
		{"empty bearer", "Bearer ", "GET", "/keys", 401},
		{"unknown key", "Bearer sk-sb-v1-0000", "GET", "/keys", 401},
		{"expired key", "Bearer " + expiring, "GET", "/key", 401},
		{"inference key on management route", "Bearer " + inference, "GET", "/keys", 403},
		{"inference key on members", "Bearer " + inference, "GET", "/organization/members", 403},
		{"lowercase scheme", "bearer " + g.Admin, "GET", "/keys", 200},
		{"management key", "Bearer " + g.Admin, "GET", "/keys", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.Do(t, tt.method, tt.path, "", nil, "Authorization", tt.header)
			if tt.status == 200 {
				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				return
			}
			harness.AssertError(t, r, tt.status)
		})
	}
}

func TestKeyValidation(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	_, hash := g.Key(t, nil)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   string // in error.message
	}{
		{"malformed json", "POST", "/keys", `{"name":`, 400, "malformed JSON"},
		{"syntax error", "POST", "/keys", `{"name" "x"}`, 400, "malformed JSON at byte"},
		{"empty body", "POST", "/keys", ``, 400, "must be a JSON object"},
		{"array body", "POST", "/keys", `[1]`, 400, "JSON object"},
		{"trailing data", "POST", "/keys", `{"name":"a"} {}`, 400, "unexpected data"},
		{"missing name", "POST", "/keys", `{}`, 400, "name: is required"},
		{"blank name", "POST", "/keys", `{"name":"  "}`, 400, "name:"},
		{"name wrong type", "POST", "/keys", `{"name":5}`, 400, "name: must be a string"},
		{"negative limit", "POST", "/keys", `{"name":"a","limit":-1}`, 400, "limit:"},
		{"limit as string", "POST", "/keys", `{"name":"a","limit":"5"}`, 400, "limit:"},
		{"bad limit_reset", "POST", "/keys", `{"name":"a","limit_reset":"hourly"}`, 400, "limit_reset:"},
		{"expires_at without seconds", "POST", "/keys", `{"name":"a","expires_at":"2030-01-01T00:00Z"}`, 400, "expires_at:"},
		{"expires_at in the past", "POST", "/keys", `{"name":"a","expires_at":"2001-01-01T00:00:00Z"}`, 400, "expires_at:"},
		{"unknown workspace", "POST", "/keys", `{"name":"a","workspace_id":"nope"}`, 400, "workspace_id"},
		{"oversized body", "POST", "/keys", `{"name":"` + strings.Repeat("a", 11<<20) + `"}`, 413, "larger than"},
		{"patch bad type", "PATCH", "/keys/" + strings.Repeat("0", 64), `{"disabled":"yes"}`, 400, "disabled: must be a boolean"},
		{"patch negative rate limit", "PATCH", "/keys/" + hash, `{"requests_per_minute":-1}`, 400, "requests_per_minute:"},
		// past what the column holds (PostgreSQL's integer): a 400, not a 500
		{"patch huge rate limit", "PATCH", "/keys/" + hash, `{"requests_per_minute":2147483648}`, 400, "requests_per_minute:"},
		{"patch unknown key", "PATCH", "/keys/" + strings.Repeat("0", 64), `{"disabled":true}`, 404, "not found"},
		{"bad include_disabled", "GET", "/keys?include_disabled=maybe", ``, 400, "include_disabled"},
		{"bad offset", "GET", "/keys?offset=-1", ``, 400, "offset"},
		{"unknown route", "GET", "/nope", ``, 404, "no such route"},
		{"wrong method", "PUT", "/keys", ``, 405, "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			e := harness.AssertError(t, g.Do(t, tt.method, tt.path, g.Admin, body), tt.status)
			if !strings.Contains(e["message"].(string), tt.want) {
				t.Fatalf("message %q does not contain %q", e["message"], tt.want)
			}
		})
	}
}

func TestMembers(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	r := g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "ada@example.com", "first_name": "Ada", "role": "org:admin"})
	if r.Status != 201 {
		t.Fatalf("add member: %d %s", r.Status, r.Body)
	}
	harness.AssertShape(t, r.JSON(t), `{data:{created_at:string,email:string,first_name:string,id:string,last_name:null,role:string}}`)
	harness.AssertError(t, g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "ada@example.com"}), 409)
	harness.AssertError(t, g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "nope"}), 400)
	harness.AssertError(t, g.Do(t, "POST", "/organization/members", g.Admin, map[string]any{"email": "b@example.com", "role": "owner"}), 400)
	list := g.Do(t, "GET", "/organization/members?limit=10", g.Admin, nil)
	harness.AssertShape(t, list.JSON(t), `{data:[{created_at:string,email:string,first_name:string,id:string,last_name:null,role:string}],total_count:number}`)
	harness.AssertError(t, g.Do(t, "GET", "/organization/members?limit=0", g.Admin, nil), 400)
}

func TestHealthAndRequestID(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	if r := g.Do(t, "GET", "/healthz", "", nil); r.Status != 200 {
		t.Fatalf("healthz: %d", r.Status)
	}
	if r := g.Do(t, "GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	r := g.Do(t, "GET", "/keys", "", nil, "X-Request-Id", "abc-123")
	if r.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("X-Request-Id not echoed: %q", r.Header.Get("X-Request-Id"))
	}
	r = g.Do(t, "GET", "/keys", "", nil, "X-Request-Id", "bad id\twith junk")
	if id := r.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req-") {
		t.Fatalf("an insane X-Request-Id was echoed or none made: %q", id)
	}
}
