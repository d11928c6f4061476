package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// versionShape is a PresetVersion whose config has the given shape and whose system_prompt is sp.
func versionShape(config, sp string) string {
	return "{config:" + config + ",created_at:string,creator_id:string,id:string,preset_id:string,system_prompt:" + sp +
		",updated_at:string,version:number}"
}

// presetShape is a Preset; designated, when not empty, is the shape of an embedded designated_version.
func presetShape(designated, desc, sua string) string {
	s := "{created_at:string,creator_user_id:null,description:" + desc
	if designated != "" {
		s += ",designated_version:" + designated
	}
	return s + ",designated_version_id:string,id:string,name:string,slug:string,status:string,status_updated_at:" + sua +
		",updated_at:string,workspace_id:string}"
}

func TestPresetLifecycle(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	key, _ := g.Key(t, nil)

	// The SDK's chat body: stream:false and messages always present.
	r := g.Do(t, "POST", "/presets/support-bot/chat/completions", key, `{"model":"openai/gpt-4o","temperature":0.7,
		"max_tokens":256,"stream":false,"provider":{"order":["openai"]},
		"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`)
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	const config1 = "{max_tokens:number,model:string,provider:{order:[string]},temperature:number}"
	harness.AssertShape(t, r.JSON(t), "{data:"+presetShape(versionShape(config1, "string"), "null", "null")+"}")
	d := r.JSON(t)["data"].(map[string]any)
	v1 := d["designated_version"].(map[string]any)
	if jsonString(v1["version"]) != "1" || v1["system_prompt"] != "Be brief." || d["status"] != "active" || d["name"] != "support-bot" {
		t.Fatalf("first version: %s", r.Body)
	}
	if !strings.HasPrefix(v1["creator_id"].(string), "key:") {
		t.Fatalf("creator_id = %v", v1["creator_id"])
	}

	// The SDK's responses body: service_tier/store/stream injected.
	r = g.Do(t, "POST", "/presets/support-bot/responses", key, `{"model":"openai/gpt-4o-mini","instructions":"Be kind.",
		"input":"hello","service_tier":"auto","store":false,"stream":false,"top_p":0.9}`)
	d = r.JSON(t)["data"].(map[string]any)
	v2 := d["designated_version"].(map[string]any)
	if jsonString(v2["version"]) != "2" || v2["system_prompt"] != "Be kind." || d["designated_version_id"] != v2["id"] {
		t.Fatalf("second version: %s", r.Body)
	}
	for _, k := range []string{"input", "store", "stream", "instructions"} {
		if _, ok := v2["config"].(map[string]any)[k]; ok {
			t.Fatalf("request-only key %q kept in config: %v", k, v2["config"])
		}
	}
	// The messages body: system as text parts.
	r = g.Do(t, "POST", "/presets/support-bot/messages", key, `{"model":"anthropic/claude","max_tokens":100,
		"system":[{"type":"text","text":"Line one."},{"type":"text","text":"Line two."}],"messages":[{"role":"user","content":"x"}]}`)
	if v3 := r.JSON(t)["data"].(map[string]any)["designated_version"].(map[string]any); v3["system_prompt"] != "Line one.\nLine two." {
		t.Fatalf("third version: %s", r.Body)
	}

	get := g.Do(t, "GET", "/presets/support-bot", key, nil)
	if jsonString(get.JSON(t)["data"].(map[string]any)["designated_version"].(map[string]any)["version"]) != "3" {
		t.Fatalf("GET does not embed the designated version: %s", get.Body)
	}
	ver := g.Do(t, "GET", "/presets/support-bot/versions/1", key, nil)
	harness.AssertShape(t, ver.JSON(t), "{data:"+versionShape(config1, "string")+"}")
	if jsonString(ver.JSON(t)["data"].(map[string]any)["config"].(map[string]any)["temperature"]) != "0.7" {
		t.Fatalf("config numbers changed: %s", ver.Body)
	}

	list := g.Do(t, "GET", "/presets/support-bot/versions?limit=2&offset=1", key, nil).JSON(t)
	if jsonString(list["total_count"]) != "3" || len(list["data"].([]any)) != 2 ||
		jsonString(list["data"].([]any)[0].(map[string]any)["version"]) != "2" {
		t.Fatalf("versions page: %v", list)
	}

	// PATCH: set, clear, keep; status change stamps status_updated_at; designate by number.
	r = g.Do(t, "PATCH", "/presets/support-bot", key, `{"name":"Support Bot","description":"helps","status":"disabled","designated_version":1}`)
	d = r.JSON(t)["data"].(map[string]any)
	if r.Status != 200 || d["name"] != "Support Bot" || d["description"] != "helps" || d["status"] != "disabled" ||
		d["status_updated_at"] == nil || jsonString(d["designated_version"].(map[string]any)["version"]) != "1" {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	r = g.Do(t, "PATCH", "/presets/support-bot", key, `{"description":null}`)
	if d := r.JSON(t)["data"].(map[string]any); d["description"] != nil || d["name"] != "Support Bot" {
		t.Fatalf("patch null: %s", r.Body)
	}
	harness.AssertError(t, g.Do(t, "PATCH", "/presets/support-bot", key, `{"designated_version":9}`), 400)
	harness.AssertError(t, g.Do(t, "PATCH", "/presets/support-bot", key, `{"status":"deleted"}`), 400)
	g.Do(t, "PATCH", "/presets/support-bot", key, `{"status":"archived"}`)
	harness.AssertError(t, g.Do(t, "POST", "/presets/support-bot/chat/completions", key, `{"model":"x","messages":[]}`), 409)
}

func TestPresetErrors(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	key, _ := g.Key(t, nil)
	g.Do(t, "POST", "/presets/p1/chat/completions", key, `{"model":"m","messages":[]}`)
	tests := []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"GET", "/presets/p1/versions/abc", "", 400, "version"},
		{"GET", "/presets/p1/versions/-1", "", 400, "version"},
		{"GET", "/presets/p1/versions/1.5", "", 400, "version"},
		{"GET", "/presets/p1/versions/99", "", 404, ""},
		{"GET", "/presets/p1/versions/0", "", 404, ""},
		{"GET", "/presets/nope", "", 404, ""},
		{"GET", "/presets/nope/versions/1", "", 404, ""},
		{"GET", "/presets/nope/versions", "", 404, ""},
		{"GET", "/presets/Bad_Slug", "", 400, "slug"},
		{"POST", "/presets/Bad_Slug/chat/completions", `{"model":"m"}`, 400, "slug"},
		{"POST", "/presets/p2/chat/completions", `{"model":5}`, 400, "model"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","temperature":2.5}`, 400, "temperature"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","temperature":"hot"}`, 400, "temperature"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","messages":"hi"}`, 400, "messages"},
		// A configuration no call could use is refused when it is saved, naming its field, not at each call.
		{"POST", "/presets/p2/chat/completions", `{"model":"m","max_tokens":"x"}`, 400, "max_tokens"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","max_tokens":-5}`, 400, "max_tokens"},
		{"POST", "/presets/p2/chat/completions", `{"models":["a","b","c","d"]}`, 400, "models"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","provider":{"order":5}}`, 400, "provider"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","tools":[1]}`, 400, "tools"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","stop":[1]}`, 400, "stop"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","n":2}`, 400, "n"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","top_p":7}`, 400, "top_p"},
		{"POST", "/presets/p2/chat/completions", `{"model":"m","Model":"x"}`, 400, "Model"},
		{"POST", "/presets/p2/chat/completions", `[1,2]`, 400, ""},
		{"POST", "/presets/p2/chat/completions", `null`, 400, ""},
		{"POST", "/presets/p2/messages", `{"model":"m","system":5}`, 400, "system"},
		{"GET", "/presets?limit=0", "", 400, "limit"},
		{"GET", "/presets?limit=101", "", 400, "limit"},
		{"GET", "/presets?offset=x", "", 400, "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.body, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			e := harness.AssertError(t, g.Do(t, tt.method, tt.path, key, body), tt.status)
			if tt.field != "" && !strings.Contains(e["message"].(string), tt.field) {
				t.Fatalf("message %q does not name %q", e["message"], tt.field)
			}
		})
	}
	harness.AssertError(t, g.Do(t, "GET", "/presets/p1", "", nil), 401)
	// The spec's GET version answers data: PresetVersion; nothing was created by the failures above.
	if n := jsonString(g.Do(t, "GET", "/presets", key, nil).JSON(t)["total_count"]); n != "1" {
		t.Fatalf("failed creations left presets behind: total_count %s", n)
	}
}

func TestPresetListAndIsolation(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	other := g.Workspace(t, "team-b")
	keyA, _ := g.Key(t, nil)
	keyB, _ := g.Key(t, map[string]any{"workspace_id": other})
	for _, slug := range []string{"alpha", "beta", "gamma"} {
		g.Do(t, "POST", "/presets/"+slug+"/chat/completions", keyA, `{"model":"m","messages":[]}`)
	}
	g.Do(t, "POST", "/presets/alpha/chat/completions", keyA, `{"model":"m2","messages":[]}`) // alpha updated last

	list := g.Do(t, "GET", "/presets", keyA, nil)
	harness.AssertShape(t, list.JSON(t), "{data:["+presetShape("", "null", "null")+"],total_count:number}")
	var slugs []string
	for _, p := range list.JSON(t)["data"].([]any) {
		slugs = append(slugs, p.(map[string]any)["slug"].(string))
	}
	if strings.Join(slugs, ",") != "alpha,gamma,beta" {
		t.Fatalf("not most recently updated first: %v", slugs)
	}
	page := g.Do(t, "GET", "/presets?limit=2&offset=2", keyA, nil).JSON(t)
	if len(page["data"].([]any)) != 1 || jsonString(page["total_count"]) != "3" {
		t.Fatalf("last page: %v", page)
	}
	if past := g.Do(t, "GET", "/presets?offset=50", keyA, nil).JSON(t); len(past["data"].([]any)) != 0 || jsonString(past["total_count"]) != "3" {
		t.Fatalf("past the end: %v", past)
	}

	// Workspace B sees none of A's presets, and its own "alpha" is a different preset.
	harness.AssertError(t, g.Do(t, "GET", "/presets/alpha", keyB, nil), 404)
	if n := jsonString(g.Do(t, "GET", "/presets", keyB, nil).JSON(t)["total_count"]); n != "0" {
		t.Fatalf("workspace B lists %s presets", n)
	}
	rb := g.Do(t, "POST", "/presets/alpha/chat/completions", keyB, `{"model":"b","messages":[]}`)
	if v := rb.JSON(t)["data"].(map[string]any)["designated_version"].(map[string]any); jsonString(v["version"]) != "1" {
		t.Fatalf("B's alpha is not a new preset: %s", rb.Body)
	}
	// Management keys: the default workspace unless workspace_id names another; an inference key cannot escape.
	if m := g.Do(t, "GET", "/presets/alpha", g.Admin, nil).JSON(t)["data"].(map[string]any)["designated_version"].(map[string]any); jsonString(m["version"]) != "2" {
		t.Fatal("management key does not resolve in the default workspace")
	}
	if m := g.Do(t, "GET", "/presets/alpha?workspace_id="+other, g.Admin, nil).JSON(t)["data"].(map[string]any)["designated_version"].(map[string]any); jsonString(m["version"]) != "1" {
		t.Fatal("management key ignores workspace_id")
	}
	// An inference key may name its own workspace; another is a 400 naming workspace_id, as for the generations,
	// for reads and writes alike (a rename sent to another workspace used to rename the key's own preset).
	own := g.Do(t, "GET", "/presets/alpha", keyA, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)
	if n := jsonString(g.Do(t, "GET", "/presets?workspace_id="+own, keyA, nil).JSON(t)["total_count"]); n != "3" {
		t.Fatalf("an inference key naming its own workspace lists %s presets", n)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/presets", ""}, {"GET", "/presets/alpha", ""}, {"GET", "/presets/alpha/versions", ""},
		{"PATCH", "/presets/alpha", `{"name":"renamed"}`}, {"POST", "/presets/alpha/chat/completions", `{"model":"x","messages":[]}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := g.Do(t, c.method, c.path+"?workspace_id="+other, keyA, body)
		harness.AssertError(t, r, 400)
		if !strings.Contains(string(r.Body), "workspace_id") {
			t.Fatalf("%s %s: %s", c.method, c.path, r.Body)
		}
	}
	if name := g.Do(t, "GET", "/presets/alpha", keyA, nil).JSON(t)["data"].(map[string]any)["name"]; name == "renamed" {
		t.Fatal("a write naming another workspace changed the key's own preset")
	}
	harness.AssertError(t, g.Do(t, "GET", "/presets/alpha?workspace_id=nope", g.Admin, nil), 400)
}

// TestPresetConcurrentVersions fires 50 concurrent creations at one new slug: exactly versions 1..50, on both
// dialects.
func TestPresetConcurrentVersions(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db)
		key, _ := g.Key(t, nil)
		const n = 50
		var wg sync.WaitGroup
		statuses := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = g.Do(t, "POST", "/presets/busy/chat/completions", key, fmt.Sprintf(`{"model":"m%d","messages":[]}`, i)).Status
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != 200 {
				t.Fatalf("call %d answered %d", i, s)
			}
		}
		r := g.Do(t, "GET", "/presets/busy/versions?limit=100", key, nil).JSON(t)
		var got []int
		models := map[string]bool{}
		for _, v := range r["data"].([]any) {
			vm := v.(map[string]any)
			n, _ := vm["version"].(interface{ Int64() (int64, error) }).Int64()
			got = append(got, int(n))
			models[vm["config"].(map[string]any)["model"].(string)] = true
		}
		sort.Ints(got)
		if len(got) != n || got[0] != 1 || got[n-1] != n || len(models) != n {
			t.Fatalf("versions %v (%d distinct configs), want exactly 1..%d", got, len(models), n)
		}
		for i := range got {
			if got[i] != i+1 {
				t.Fatalf("gap or duplicate: %v", got)
			}
		}
	})
}
