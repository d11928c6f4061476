package api_test

import (
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

func TestModelsAndProviders(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithSQLite(), harness.WithConfig(`
providers:
  - {slug: local, kind: espeak}
  - {slug: oa, kind: openai, base_url: http://127.0.0.1:1, api_key: sk-x}
  - {slug: spare, kind: openai, base_url: http://127.0.0.1:1, api_key: sk-y}
models:
  - {id: gpt, modality: chat, endpoints: [{provider: oa, upstream_model: gpt-4o, pricing: {per_million_prompt_tokens: 2.5, per_million_completion_tokens: 10}}, {provider: spare, upstream_model: gpt-4o}]}
  - {id: say, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 15}}]}
`))
	key, _ := g.Key(t, nil)

	r := g.Do(t, "GET", "/models", key, nil)
	if r.Status != 200 {
		t.Fatalf("GET /models: %d %s", r.Status, r.Body)
	}
	v := r.JSON(t)
	harness.AssertShape(t, v["data"].([]any)[0], `{architecture:{input_modalities:[string],modality:string,output_modalities:[string]},`+
		`canonical_slug:string,context_length:null,created:number,default_parameters:null,description:string,`+
		`endpoints:[{provider:string}],id:string,links:{details:string},name:string,per_request_limits:null,`+
		`pricing:{completion:string,prompt:string},supported_parameters:[],supported_voices:null,`+
		`top_provider:{context_length:null,is_moderated:boolean,max_completion_tokens:null}}`)
	gpt := v["data"].([]any)[0].(map[string]any)
	if p := gpt["pricing"].(map[string]any); p["prompt"] != "0.0000025" || p["completion"] != "0.00001" {
		t.Errorf("chat pricing %v, want USD per token", p)
	}
	if say := v["data"].([]any)[1].(map[string]any); say["pricing"].(map[string]any)["prompt"] != "0.000015" {
		t.Errorf("speech pricing %v, want USD per character", say["pricing"])
	}
	if v["total_count"].(interface{ String() string }).String() != "2" {
		t.Errorf("total_count %v", v["total_count"])
	}

	r = g.Do(t, "GET", "/models?limit=1&output_modalities=text,audio", key, nil)
	v = r.JSON(t)
	if n := len(v["data"].([]any)); n != 1 || v["links"].(map[string]any)["next"] != "/api/v1/models?limit=1&offset=1&output_modalities=text%2Caudio" {
		t.Errorf("first page of 1: %d models, links %v", n, v["links"])
	}
	for _, q := range []string{"limit=0", "limit=x", "offset=-1"} {
		harness.AssertError(t, g.Do(t, "GET", "/models?"+q, key, nil), 400)
	}
	harness.AssertError(t, g.Do(t, "GET", "/models", "", nil), 401)

	r = g.Do(t, "GET", "/providers", g.Admin, nil)
	harness.AssertShape(t, r.JSON(t), `{data:[{name:string,privacy_policy_url:null,slug:string,status_page_url:null,terms_of_service_url:null}]}`)
	var slugs []string
	for _, p := range r.JSON(t)["data"].([]any) {
		slugs = append(slugs, p.(map[string]any)["slug"].(string))
	}
	if len(slugs) != 3 || slugs[0] != "oa" || slugs[1] != "spare" || slugs[2] != "local" {
		t.Errorf("providers %v, want those of the catalog in order", slugs)
	}
}
