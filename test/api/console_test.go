package api_test

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// consoleNow is the clock of the console's tests: records are made in the hours and days before it.
var consoleNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// listed is one record the list tests write: its id and the fields the filters select by.
type listed struct {
	ago                            time.Duration
	ws, key, model, provider, sess string
	user, external                 string
	status                         int
}

// recordAll records entries for each, in the workspace each names ("a" or "b"), and waits until the recorder
// has written them all; it returns their ids in the order given.
func recordAll(t *testing.T, g *harness.Gateway, ws map[string]string, each []listed) []string {
	t.Helper()
	ids := make([]string, len(each))
	for i, l := range each {
		at := consoleNow.Add(-l.ago)
		ids[i] = generation.NewID(at, fmt.Sprintf("%06x", i))
		e := harness.GenerationEntry(ids[i], ws[l.ws], at)
		r := &e.Record
		r.KeyHash, r.Model, r.ProviderName, r.Status, r.ExternalUser = l.key, l.model, l.provider, l.status, l.external
		r.SessionID, r.UserID = nil, nil
		if l.sess != "" {
			r.SessionID = &l.sess
		}
		if l.user != "" {
			r.UserID = &l.user
		}
		g.App.Recorder.Record(context.Background(), e)
	}
	harness.Eventually(t, 5*time.Second, func() bool {
		return len(listIDs(t, g, g.Admin, "limit=500")) == len(each)
	})
	return ids
}

func listIDs(t *testing.T, g *harness.Gateway, key, query string) []string {
	t.Helper()
	r := g.Do(t, "GET", "/generations?"+query, key, nil)
	if r.Status != 200 {
		t.Fatalf("GET /generations?%s: %d %s", query, r.Status, r.Body)
	}
	var ids []string
	for _, d := range r.JSON(t)["data"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	return ids
}

// The list of records: each filter alone and together, newest first; pages by cursor that add up to the whole
// list; a key that is not a management key sees its own workspace's; bad filters are 400s naming the field.
func TestGenerationList(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db, harness.WithClock(harness.NewClock(consoleNow)))
		ws := map[string]string{"a": g.Workspace(t, "list-a"), "b": g.Workspace(t, "list-b")}
		keyA, _ := g.Key(t, map[string]any{"workspace_id": ws["a"]})
		k1, k2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
		ids := recordAll(t, g, ws, []listed{
			{ago: 1 * time.Hour, ws: "a", key: k1, model: "m/x", provider: "p1", sess: "s1", user: "u1", external: "e1", status: 200},
			{ago: 2 * time.Hour, ws: "a", key: k2, model: "m/y", provider: "p2", sess: "s1", status: 200},
			{ago: 26 * time.Hour, ws: "a", key: k1, model: "m/x", provider: "p2", sess: "s2", user: "u1", status: 502},
			{ago: 50 * time.Hour, ws: "b", key: k2, model: "m/x", provider: "p1", external: "e1", status: 200},
			{ago: 8 * 24 * time.Hour, ws: "a", key: k1, model: "m/y", provider: "p1", status: 429},
			{ago: 9 * 24 * time.Hour, ws: "b", key: k1, model: "m/x", provider: "p1", status: 200},
		})
		at := func(ago time.Duration) string { return url.QueryEscape(consoleNow.Add(-ago).Format(time.RFC3339)) }
		for _, tt := range []struct {
			name, key, query string
			want             []int
		}{
			{"everything, newest first", g.Admin, "", []int{0, 1, 2, 3, 4, 5}},
			{"by key", g.Admin, "api_key_hash=" + k1, []int{0, 2, 4, 5}},
			{"by key over 7 days", g.Admin, "api_key_hash=" + k1 + "&from=" + at(7*24*time.Hour), []int{0, 2}},
			{"a time range", g.Admin, "from=" + at(30*time.Hour) + "&to=" + at(90*time.Minute), []int{1, 2}},
			{"by model", g.Admin, "model=m/y", []int{1, 4}},
			{"by provider", g.Admin, "provider=p2", []int{1, 2}},
			{"by status", g.Admin, "status=502", []int{2}},
			{"by session", g.Admin, "session_id=s1", []int{0, 1}},
			{"by member", g.Admin, "user_id=u1", []int{0, 2}},
			{"by the caller's user", g.Admin, "user=e1", []int{0, 3}},
			{"by workspace", g.Admin, "workspace_id=" + ws["b"], []int{3, 5}},
			{"filters together", g.Admin, "api_key_hash=" + k1 + "&model=m/x&provider=p1", []int{0, 5}},
			{"nothing matches", g.Admin, "model=none", nil},
			{"a workspace's key sees its workspace", keyA, "", []int{0, 1, 2, 4}},
			{"a workspace's key naming its own workspace", keyA, "workspace_id=" + ws["a"] + "&model=m/x", []int{0, 2}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				var want []string
				for _, i := range tt.want {
					want = append(want, ids[i])
				}
				if got := listIDs(t, g, tt.key, tt.query); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
				// The same list a page of one or two records at a time, by cursor.
				for _, size := range []int{1, 2} {
					var walked []string
					q := tt.query + fmt.Sprintf("&limit=%d", size)
					for pages := 0; ; pages++ {
						if pages > len(ids) {
							t.Fatalf("limit=%d: more pages than records", size)
						}
						body := g.Do(t, "GET", "/generations?"+q, tt.key, nil).JSON(t)
						for _, d := range body["data"].([]any) {
							walked = append(walked, d.(map[string]any)["id"].(string))
						}
						next, _ := body["next_cursor"].(string)
						if next == "" {
							break
						}
						q = tt.query + fmt.Sprintf("&limit=%d&cursor=%s", size, next)
					}
					if !slices.Equal(walked, want) {
						t.Errorf("limit=%d by cursor: got %v, want %v", size, walked, want)
					}
				}
			})
		}
		for _, tt := range []struct{ query, field string }{
			{"from=yesterday", "from"},
			{"to=2026-03-10", "to"},
			{"from=" + at(time.Hour) + "&to=" + at(2*time.Hour), "from"},
			{"api_key_hash=abc", "api_key_hash"},
			{"status=abc", "status"},
			{"status=99", "status"},
			{"limit=0", "limit"},
			{"limit=501", "limit"},
			{"cursor=not-a-cursor", "cursor"},
			{"workspace_id=" + "00000000-0000-0000-0000-000000000000", "workspace_id"},
		} {
			t.Run("bad "+tt.query, func(t *testing.T) {
				r := g.Do(t, "GET", "/generations?"+tt.query, g.Admin, nil)
				if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+tt.field+`"`) {
					t.Errorf("%d %s, want a 400 naming %s", r.Status, r.Body, tt.field)
				}
			})
		}
		if r := g.Do(t, "GET", "/generations?workspace_id="+ws["b"], keyA, nil); r.Status != 400 {
			t.Errorf("a workspace's key naming another workspace: %d %s, want 400", r.Status, r.Body)
		}
	})
}

// /activity: today and the 30 days before it by day, model and endpoint, from the aggregates; one day with
// date; a row per workspace or per key when asked; management keys only.
func TestActivity(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db, harness.WithClock(harness.NewClock(consoleNow)))
		ws := map[string]string{"a": g.Workspace(t, "act-a"), "b": g.Workspace(t, "act-b")}
		key, _ := g.Key(t, nil)
		k1, k2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
		recordAll(t, g, ws, []listed{
			{ago: time.Hour, ws: "a", key: k1, model: "m/x", provider: "p1", status: 200},
			{ago: 2 * time.Hour, ws: "b", key: k2, model: "m/x", provider: "p1", status: 200},
			{ago: 3 * time.Hour, ws: "a", key: k1, model: "m/y", provider: "p1", status: 200},
			{ago: 3 * 24 * time.Hour, ws: "a", key: k2, model: "m/x", provider: "p1", status: 200},
			{ago: 40 * 24 * time.Hour, ws: "a", key: k1, model: "m/x", provider: "p1", status: 200}, // before the window
		})
		// Every entry is harness.GenerationEntry's: 11 prompt tokens, $0.000165, answered by openai/tts-1.
		type row struct{ date, model, extra, requests string }
		rows := func(query, extraField string) []row {
			r := g.Do(t, "GET", "/activity?"+query, g.Admin, nil)
			if r.Status != 200 {
				t.Fatalf("GET /activity?%s: %d %s", query, r.Status, r.Body)
			}
			var out []row
			for _, d := range r.JSON(t)["data"].([]any) {
				m := d.(map[string]any)
				if m["endpoint_id"] != "openai/tts-1" || m["provider_name"] != "p1" || m["model_permaslug"] != m["model"] {
					t.Errorf("row %v", m)
				}
				extra, _ := m[extraField].(string)
				out = append(out, row{m["date"].(string), m["model"].(string), extra, jsonString(m["requests"])})
			}
			return out
		}
		for _, tt := range []struct {
			name, query, extra string
			want               []row
		}{
			{"the window", "", "", []row{{"2026-03-07", "m/x", "", "1"}, {"2026-03-10", "m/x", "", "2"}, {"2026-03-10", "m/y", "", "1"}}},
			{"one day", "date=2026-03-10", "", []row{{"2026-03-10", "m/x", "", "2"}, {"2026-03-10", "m/y", "", "1"}}},
			{"one key", "api_key_hash=" + k2, "", []row{{"2026-03-07", "m/x", "", "1"}, {"2026-03-10", "m/x", "", "1"}}},
			{"one workspace", "workspace_id=" + ws["b"], "", []row{{"2026-03-10", "m/x", "", "1"}}},
			{"by workspace", "date=2026-03-10&group_by=workspace", "workspace_id",
				[]row{{"2026-03-10", "m/x", ws["a"], "1"}, {"2026-03-10", "m/y", ws["a"], "1"}, {"2026-03-10", "m/x", ws["b"], "1"}}},
			{"by key", "date=2026-03-10&group_by=key", "api_key_hash",
				[]row{{"2026-03-10", "m/x", k1, "1"}, {"2026-03-10", "m/x", k2, "1"}, {"2026-03-10", "m/y", k1, "1"}}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				// The aggregates come by date, then workspace or key, then model.
				slices.SortStableFunc(tt.want, func(a, b row) int {
					return cmp.Or(strings.Compare(a.date, b.date), strings.Compare(a.extra, b.extra), strings.Compare(a.model, b.model))
				})
				if got := rows(tt.query, tt.extra); !slices.Equal(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			})
		}
		for _, tt := range []struct{ query, field string }{
			{"date=yesterday", "date"},
			{"date=2026-02-07", "date"}, // 31 days before today
			{"date=2026-03-11", "date"},
			{"group_by=model", "group_by"},
			{"api_key_hash=xyz", "api_key_hash"},
			{"workspace_id=00000000-0000-0000-0000-000000000000", "workspace_id"},
		} {
			r := g.Do(t, "GET", "/activity?"+tt.query, g.Admin, nil)
			if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+tt.field+`"`) {
				t.Errorf("%s: %d %s, want a 400 naming %s", tt.query, r.Status, r.Body, tt.field)
			}
		}
		if r := g.Do(t, "GET", "/activity?date=2026-02-08", g.Admin, nil); r.Status != 200 {
			t.Errorf("the 30th day before today: %d %s", r.Status, r.Body)
		}
		if r := g.Do(t, "GET", "/activity", key, nil); r.Status != 403 {
			t.Errorf("an inference key: %d, want 403", r.Status)
		}
	})
}

// GET /models/count and /models/{author}/{slug}/endpoints in the reference's shapes; POST /generation/feedback
// from the generation's own key or a management key, stored; any other key is told the generation does not exist.
func TestModelEndpointsAndFeedback(t *testing.T) {
	t.Parallel()
	harness.Dialects(t, func(t *testing.T, db harness.Option) {
		g := harness.Start(t, db, harness.WithClock(harness.NewClock(consoleNow)), harness.WithConfig(`
providers:
  - {slug: local, kind: espeak}
models:
  - {id: local/say, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 15}}]}
  - {id: local/speak, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 30}}]}
`))
		key, hash := g.Key(t, nil)
		other, _ := g.Key(t, nil)
		if r := g.Do(t, "GET", "/models/count", key, nil); r.Status != 200 || string(r.Body) != `{"data":{"count":2}}` {
			t.Errorf("count: %d %s", r.Status, r.Body)
		}
		if r := g.Do(t, "GET", "/models/count?output_modalities=video", key, nil); string(r.Body) != `{"data":{"count":0}}` {
			t.Errorf("count of video models: %s", r.Body)
		}
		r := g.Do(t, "GET", "/models/local/say/endpoints", key, nil)
		harness.AssertShape(t, r.JSON(t), `{data:{architecture:{input_modalities:[string],instruct_type:null,modality:string,output_modalities:[string],tokenizer:null},created:number,description:string,
			endpoints:[{context_length:number,latency_last_30m:null,max_completion_tokens:null,max_prompt_tokens:null,model_id:string,model_name:string,
			name:string,pricing:{completion:string,prompt:string},provider_name:string,quantization:null,status:number,supported_parameters:[],
			supports_implicit_caching:boolean,supports_tool_choice:{auto:boolean,function:boolean,none:boolean,required:boolean},
			supports_voice_cloning:boolean,tag:string,throughput_last_30m:null,uptime_last_1d:null,uptime_last_30m:null,uptime_last_5m:null}],
			id:string,name:string}}`)
		if !strings.Contains(string(r.Body), `"prompt":"0.000015"`) || !strings.Contains(string(r.Body), `"provider_name":"local"`) {
			t.Errorf("endpoints: %s", r.Body)
		}
		if r := g.Do(t, "GET", "/models/local/none/endpoints", key, nil); r.Status != 404 {
			t.Errorf("unknown model: %d %s", r.Status, r.Body)
		}

		id := generation.NewID(consoleNow, "fb0001")
		e := harness.GenerationEntry(id, "", consoleNow)
		e.Record.KeyHash = hash
		e.Record.WorkspaceID = g.Do(t, "GET", "/key", key, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)
		g.App.Recorder.Record(context.Background(), e)
		harness.Eventually(t, 5*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+id, key, nil).Status == 200 })
		for _, tt := range []struct {
			name, key string
			body      map[string]any
			status    int
			contains  string
		}{
			{"its own key", key, map[string]any{"generation_id": id, "category": "latency", "comment": "slow"}, 200, `{"data":{"success":true}}`},
			{"a management key", g.Admin, map[string]any{"generation_id": id, "category": "other"}, 200, `{"data":{"success":true}}`},
			{"another key", other, map[string]any{"generation_id": id, "category": "other"}, 404, ""},
			{"unknown generation", key, map[string]any{"generation_id": "gen-0-nope", "category": "other"}, 404, ""},
			{"bad category", key, map[string]any{"generation_id": id, "category": "rude"}, 400, `"field":"category"`},
			{"no category", key, map[string]any{"generation_id": id}, 400, `"field":"category"`},
			{"no generation", key, map[string]any{"category": "other"}, 400, `"field":"generation_id"`},
			{"a long comment", key, map[string]any{"generation_id": id, "category": "other", "comment": strings.Repeat("x", 4001)}, 400, `"field":"comment"`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := g.Do(t, "POST", "/generation/feedback", tt.key, tt.body)
				if r.Status != tt.status || !strings.Contains(string(r.Body), tt.contains) {
					t.Errorf("%d %s, want %d %s", r.Status, r.Body, tt.status, tt.contains)
				}
			})
		}
		store, closeDB, err := gormstore.Open(context.Background(), gormstore.Config{URL: g.DatabaseURL}, harness.Logger())
		if err != nil {
			t.Fatal(err)
		}
		defer closeDB()
		var kept []struct{ Category, KeyHash string }
		store.Raw("SELECT category, key_hash FROM generation_feedback WHERE generation_id = ? ORDER BY category", id).Scan(&kept)
		if len(kept) != 2 || kept[0].Category != "latency" || kept[0].KeyHash != hash || kept[1].Category != "other" {
			t.Errorf("feedback kept: %+v", kept)
		}
	})
}
