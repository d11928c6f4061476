package api_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// The OpenAPI document names every mounted route and no other, is a valid OpenAPI 3.1 document, and describes
// real responses: a sample of them validates against its schemas.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithSQLite(), harness.WithConfig(`
providers:
  - {slug: local, kind: espeak}
models:
  - {id: say, modality: tts, endpoints: [{provider: local, pricing: {per_million_characters: 15}}]}
`))
	r := g.Do(t, "GET", "/openapi.json", "", nil)
	if r.Status != 200 {
		t.Fatalf("GET /openapi.json: %d %s", r.Status, r.Body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("not a valid OpenAPI document: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Servers[0].URL != "/api/v1" {
		t.Errorf("openapi %q, server %q", doc.OpenAPI, doc.Servers[0].URL)
	}

	mounted := map[string]bool{}
	for _, rt := range g.App.Server.Routes() {
		path := strings.TrimPrefix(rt.Path, "/api/v1")
		mounted[rt.Method+" "+path] = true
		if item := doc.Paths.Value(path); item == nil || item.GetOperation(rt.Method) == nil {
			t.Errorf("%s %s is mounted but not in the OpenAPI document", rt.Method, rt.Path)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !mounted[method+" "+path] {
				t.Errorf("the OpenAPI document names %s %s, which is not mounted", method, path)
			}
		}
	}

	key, hash := g.Key(t, nil)
	for _, tt := range []struct {
		method, template, path, key string
		body                        any
	}{
		{"GET", "/key", "/key", key, nil},
		{"GET", "/keys", "/keys", g.Admin, nil},
		{"POST", "/keys", "/keys", g.Admin, map[string]any{"name": "sample"}},
		{"GET", "/keys/{hash}", "/keys/" + hash, g.Admin, nil},
		{"PATCH", "/keys/{hash}", "/keys/" + hash, g.Admin, map[string]any{"limit": 5}},
		{"GET", "/keys/{hash}", "/keys/" + strings.Repeat("0", 64), g.Admin, nil},
		{"GET", "/keys", "/keys", "", nil},
		{"GET", "/keys", "/keys", key, nil},
		{"GET", "/credits", "/credits", g.Admin, nil},
		{"GET", "/models", "/models", key, nil},
		{"GET", "/providers", "/providers", key, nil},
		{"GET", "/models/count", "/models/count", key, nil},
		{"GET", "/models/{author}/{slug}/endpoints", "/models/local/none/endpoints", key, nil},
		{"POST", "/generation/feedback", "/generation/feedback", key, map[string]any{"generation_id": "gen-0-nope", "category": "other"}},
		{"POST", "/generation/feedback", "/generation/feedback", key, map[string]any{"category": "x"}},
		{"GET", "/workspaces", "/workspaces", g.Admin, nil},
		{"POST", "/workspaces", "/workspaces", g.Admin, map[string]any{"name": "Sample", "slug": "sample"}},
		{"GET", "/workspaces/{workspace}", "/workspaces/sample", g.Admin, nil},
		{"PATCH", "/workspaces/{workspace}", "/workspaces/sample", g.Admin, map[string]any{"description": "d"}},
		{"DELETE", "/workspaces/{workspace}", "/workspaces/default", g.Admin, nil},
		{"PUT", "/workspaces/{workspace}/budgets/{interval}", "/workspaces/sample/budgets/daily", g.Admin, map[string]any{"limit_usd": 1}},
		{"GET", "/workspaces/{workspace}/budgets/{interval}", "/workspaces/sample/budgets/weekly", g.Admin, nil},
		{"GET", "/workspaces/{workspace}/budgets", "/workspaces/sample/budgets", g.Admin, nil},
		{"GET", "/workspaces/{workspace}/members", "/workspaces/sample/members", g.Admin, nil},
		{"GET", "/organization/members", "/organization/members", g.Admin, nil},
		{"POST", "/organization/members", "/organization/members", g.Admin, map[string]any{"email": "a@example.com"}},
		{"POST", "/audio/speech", "/audio/speech", key, map[string]any{"model": "say", "input": "hi"}},
		{"POST", "/presets/{slug}/chat/completions", "/presets/sample/chat/completions", key, map[string]any{"model": "say", "messages": []any{}}},
		{"GET", "/presets", "/presets", key, nil},
		{"GET", "/presets/{slug}", "/presets/sample", key, nil},
		{"GET", "/presets/{slug}/versions", "/presets/sample/versions", key, nil},
		{"POST", "/guardrails", "/guardrails", g.Admin, map[string]any{"name": "cap", "limit_usd": 1}},
		{"GET", "/guardrails", "/guardrails", g.Admin, nil},
		{"GET", "/videos/models", "/videos/models", key, nil},
		{"GET", "/embeddings/models", "/embeddings/models", key, nil},
		{"POST", "/embeddings", "/embeddings", key, map[string]any{"model": "say", "input": "hi"}},
		{"GET", "/videos/{jobId}", "/videos/gen-vid-0-missing", key, nil},
		{"GET", "/generation", "/generation?id=gen-0-missing", key, nil},
		{"GET", "/generations", "/generations?limit=2", key, nil},
		{"GET", "/generations", "/generations?status=1", key, nil},
		{"GET", "/activity", "/activity", g.Admin, nil},
		{"GET", "/activity", "/activity?group_by=workspace", g.Admin, nil},
		{"GET", "/healthz", "/healthz", "", nil},
		{"GET", "/readyz", "/readyz", "", nil},
	} {
		r := g.Do(t, tt.method, tt.path, tt.key, tt.body)
		op := doc.Paths.Value(tt.template).GetOperation(tt.method)
		resp := op.Responses.Value(strconv.Itoa(r.Status))
		if resp == nil {
			t.Errorf("%s %s answered %d, which the document does not list", tt.method, tt.path, r.Status)
			continue
		}
		mt := resp.Value.Content.Get("application/json")
		if mt == nil {
			t.Errorf("%s %s %d: the document has no JSON schema for it", tt.method, tt.path, r.Status)
			continue
		}
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s %s %d does not match its schema: %v\n%s", tt.method, tt.path, r.Status, err, r.Body)
		}
	}
}

// Every route that takes a body answers one over server.max_body_bytes with 413, before it reads the key or the
// route's parameters: the document lists that answer, in the envelope, for each of them.
func TestOpenAPIListsTheBodyLimit(t *testing.T) {
	t.Parallel()
	g := harness.Start(t, harness.WithSQLite(), harness.WithConfig("server: {max_body_bytes: 1024}\n"))
	r := g.Do(t, "GET", "/openapi.json", "", nil)
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	params := strings.NewReplacer("{hash}", strings.Repeat("0", 64), "{id}", "00000000-0000-0000-0000-000000000000",
		"{slug}", "sample", "{jobId}", "gen-vid-0-missing", "{version}", "1", "{workspace}", "default", "{interval}", "daily")
	oversized := `{"name": "` + strings.Repeat("a", 2048) + `"}`
	for _, rt := range g.App.Server.Routes() {
		if rt.Method != "POST" && rt.Method != "PATCH" && rt.Method != "PUT" {
			continue
		}
		path := strings.TrimPrefix(rt.Path, "/api/v1")
		r := g.Do(t, rt.Method, params.Replace(path), g.Admin, oversized)
		if r.Status != 413 {
			t.Errorf("%s %s with %d bytes: %d, want 413", rt.Method, path, len(oversized), r.Status)
			continue
		}
		resp := doc.Paths.Value(path).GetOperation(rt.Method).Responses.Value("413")
		if resp == nil || resp.Value.Content.Get("application/json") == nil {
			t.Errorf("%s %s answers 413, which the document does not list", rt.Method, path)
			continue
		}
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatalf("%s %s: %v", rt.Method, path, err)
		}
		if err := resp.Value.Content.Get("application/json").Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s %s 413 does not match its schema: %v", rt.Method, path, err)
		}
	}
}
