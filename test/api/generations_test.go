package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/test/harness"
)

const generationShape = `{data:{api_type:string,app_id:number,cache_discount:null,cancelled:boolean,created_at:string,
	data_region:string,external_user:string,finish_reason:string,generation_time:number,guardrail_flags:[string],
	http_referer:string,id:string,is_byok:boolean,latency:number,model:string,moderation_latency:number,
	native_finish_reason:string,native_tokens_cached:number,native_tokens_completion:number,
	native_tokens_completion_images:number,native_tokens_prompt:number,native_tokens_reasoning:number,
	num_fetches:number,num_input_audio_prompt:number,num_media_completion:number,num_media_prompt:number,
	num_search_results:number,origin:string,preset_id:null,provider_name:string,
	provider_responses:[{is_byok:boolean,latency:number,provider_name:string,status:number}|{endpoint_id:string,id:string,is_byok:boolean,latency:number,model_permaslug:string,provider_name:string,status:number}],
	request_id:string,response_cache_source_id:null,router:string,service_tier:null,session_id:string,streamed:boolean,
	tokens_completion:number,tokens_prompt:number,total_cost:number,upstream_id:string,upstream_inference_cost:number,
	usage:number,user_agent:string,web_search_engine:null,workspace_id:string}}`

func TestGenerationRead(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	otherWS := g.Workspace(t, "other")
	mine, _ := g.Key(t, nil)
	theirs, _ := g.Key(t, map[string]any{"workspace_id": otherWS})
	defaultWS := g.Do(t, "GET", "/key", mine, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)

	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	id := generation.NewID(at, "3f2a9c") // an id carries the time its record was made
	g.App.Recorder.Record(context.Background(), harness.GenerationEntry(id, defaultWS, at))
	took := harness.Eventually(t, time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+id, mine, nil).Status == 200 })
	t.Logf("readable %v after Record", took)

	r := g.Do(t, "GET", "/generation?id="+id, mine, nil)
	body := r.JSON(t)
	harness.AssertShape(t, body, generationShape)
	d := body["data"].(map[string]any)
	for k, want := range map[string]string{"latency": "12.345", "generation_time": "2000.5", "total_cost": "0.000165",
		"usage": "0.000165", "created_at": "2026-02-03T04:05:06.000Z", "tokens_prompt": "11", "session_id": "sess-1"} {
		if got := jsonString(d[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	prs := d["provider_responses"].([]any)
	if len(prs) != 2 || jsonString(prs[0].(map[string]any)["status"]) != "503" {
		t.Errorf("provider_responses = %v", prs)
	}
	if strings.Contains(string(r.Body), "busy") {
		t.Error("a raw upstream body leaked into the generation record")
	}

	tests := []struct {
		name, path, key string
		status          int
	}{
		{"management key sees every workspace", "/generation?id=" + id, g.Admin, 200},
		{"other workspace gets 404", "/generation?id=" + id, theirs, 404},
		{"unknown id gets 404", "/generation?id=gen-0-nope", mine, 404},
		{"missing id", "/generation", mine, 400},
		{"empty id", "/generation?id=", mine, 400},
		{"no key", "/generation?id=" + id, "", 401},
		{"content needs a management key", "/generation/content?id=" + id, mine, 403},
		{"content of unknown id", "/generation/content?id=gen-0-nope", g.Admin, 404},
		{"content missing id", "/generation/content", g.Admin, 400},
		{"content without key", "/generation/content?id=" + id, "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.Do(t, "GET", tt.path, tt.key, nil)
			if tt.status == 200 {
				if r.Status != 200 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				return
			}
			e := harness.AssertError(t, r, tt.status)
			if tt.status == 400 && !strings.Contains(e["message"].(string), "id") {
				t.Fatalf("400 does not name the parameter: %v", e["message"])
			}
		})
	}
	// 404 for another workspace is byte-identical to 404 for an id that does not exist.
	a := g.Do(t, "GET", "/generation?id="+id, theirs, nil).JSON(t)["error"]
	b := g.Do(t, "GET", "/generation?id=gen-0-nope", theirs, nil).JSON(t)["error"]
	if harness.Shape(a) != harness.Shape(b) || a.(map[string]any)["message"] != b.(map[string]any)["message"] {
		t.Fatalf("a foreign generation's 404 differs from a missing one's: %v vs %v", a, b)
	}

	c := g.Do(t, "GET", "/generation/content?id="+id, g.Admin, nil)
	harness.AssertShape(t, c.JSON(t), `{data:{error:null,input:{messages:[{content:string,role:string}]},output:{completion:string,reasoning:null}}}`)
}

func TestGenerationContentFailureAndPrompt(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	ws := g.Do(t, "GET", "/key", g.Admin, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)
	e := harness.GenerationEntry(generation.NewID(time.Now(), "fail1"), ws, time.Now())
	prompt, provider, raw := "A cat on a skateboard", "openai", `{"error":{"message":"boom"}}`
	e.Content.Input = generation.Input{Prompt: &prompt}
	e.Content.Failure = &generation.Failure{Message: "every provider failed", Status: 502, ProviderName: &provider, Raw: &raw,
		Previous: e.Record.Attempts[:1]}
	noContent := harness.GenerationEntry(generation.NewID(time.Now(), "nocontent"), ws, time.Now())
	noContent.Content = nil
	g.App.Recorder.Record(context.Background(), e)
	g.App.Recorder.Record(context.Background(), noContent)
	harness.Eventually(t, 5*time.Second, func() bool { // two workers: either record may land first
		return g.Do(t, "GET", "/generation?id="+noContent.Record.ID, g.Admin, nil).Status == 200 &&
			g.Do(t, "GET", "/generation?id="+e.Record.ID, g.Admin, nil).Status == 200
	})

	r := g.Do(t, "GET", "/generation/content?id="+e.Record.ID, g.Admin, nil)
	harness.AssertShape(t, r.JSON(t), `{data:{error:{message:string,previous_errors:[{code:number,message:string,provider_name:string,raw:string}],
		provider_name:string,raw:string,status:number},input:{prompt:string},output:{completion:string,reasoning:null}}}`)
	harness.AssertError(t, g.Do(t, "GET", "/generation/content?id="+noContent.Record.ID, g.Admin, nil), http.StatusNotFound)
}

// TestGenerationStoreContentOff checks generations.store_content: false keeps records but no content.
func TestGenerationStoreContentOff(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithConfig("generations:\n  store_content: false\n"))
	ws := g.Do(t, "GET", "/key", g.Admin, nil).JSON(t)["data"].(map[string]any)["workspace_id"].(string)
	e := harness.GenerationEntry(generation.NewID(time.Now(), "off"), ws, time.Now())
	g.App.Recorder.Record(context.Background(), e)
	harness.Eventually(t, 5*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+e.Record.ID, g.Admin, nil).Status == 200 })
	harness.AssertError(t, g.Do(t, "GET", "/generation/content?id="+e.Record.ID, g.Admin, nil), 404)
}

func jsonString(v any) string {
	switch v := v.(type) {
	case interface{ String() string }:
		return v.String()
	case string:
		return v
	case nil:
		return "null"
	}
	return "?"
}
