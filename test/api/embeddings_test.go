package api_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// embedUpstreams are an OpenAI and a Gemini fake, and a config serving model "embed" from them in order, "embed-gemini"
// from Gemini alone, and a chat model.
type embedUpstreams struct {
	openai *fakes.OpenAI
	gemini *fakes.Gemini
}

// startEmbeddings starts the fakes and a gateway serving them (with extra settings), and makes an inference key.
func startEmbeddings(t *testing.T, extra string) (*embedUpstreams, *harness.Gateway, string) {
	u := &embedUpstreams{openai: fakes.NewOpenAI(t, "sk-up"), gemini: fakes.NewGemini(t, "g-up")}
	g := harness.Start(t, harness.WithConfig(u.config()+extra))
	key, _ := g.Key(t, nil)
	return u, g, key
}

func (u *embedUpstreams) config() string {
	return fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up, timeout: 5s}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-up, timeout: 5s}
models:
  - id: embed
    modality: embeddings
    endpoints:
      - {provider: openai, upstream_model: text-embedding-3-small, pricing: {per_million_prompt_tokens: 20}}
      - {provider: gemini, upstream_model: gemini-embedding-001, pricing: {per_million_prompt_tokens: 15}}
  - {id: embed-gemini, modality: embeddings, endpoints: [{provider: gemini, upstream_model: gemini-embedding-001, pricing: {per_million_prompt_tokens: 15}}]}
  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: gpt-4o-mini}]}
`, u.openai.BaseURL(), u.gemini.BaseURL())
}

// vectors reads an answer's vectors, as floats or base64.
func vectors(t *testing.T, r harness.Response) [][]float32 {
	t.Helper()
	var a struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &a); err != nil || a.Object != "list" {
		t.Fatalf("answer %d: %v: %s", r.Status, err, r.Body)
	}
	out := make([][]float32, len(a.Data))
	for i, d := range a.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Fatalf("data[%d] = %s %d", i, d.Object, d.Index)
		}
		var s string
		if json.Unmarshal(d.Embedding, &s) == nil {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("data[%d]: %v", i, err)
			}
			for j := 0; j+4 <= len(b); j += 4 {
				out[i] = append(out[i], math.Float32frombits(binary.LittleEndian.Uint32(b[j:])))
			}
		} else if err := json.Unmarshal(d.Embedding, &out[i]); err != nil {
			t.Fatalf("data[%d]: %v", i, err)
		}
	}
	return out
}

// TestEmbeddingsRecordsAndBills: floats and base64, whatever the upstream answered, the reference's shape, and a
// record with the upstream's tokens, the exact cost and the inputs kept.
func TestEmbeddingsRecordsAndBills(t *testing.T) {
	t.Parallel()
	u, g, key := startEmbeddings(t, "")
	for _, tc := range []struct {
		name       string
		format     string
		floatsOnly bool
	}{
		{"floats", "float", false},
		{"base64", "base64", false},
		{"base64 from an upstream that answers floats", "base64", true},
		{"floats by default", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u.openai.FloatsOnly = tc.floatsOnly
			body := map[string]any{"model": "embed", "input": []string{"hello world", "second input!"}, "user": "end-user"}
			if tc.format != "" {
				body["encoding_format"] = tc.format
			}
			r := g.Do(t, "POST", "/embeddings", key, body)
			if r.Status != 200 {
				t.Fatalf("POST /embeddings: %d %s", r.Status, r.Body)
			}
			got := vectors(t, r)
			for i, in := range []string{`"hello world"`, `"second input!"`} {
				if want := fakes.FakeVector(in, fakes.FakeDimensions); !slices.Equal(got[i], want) {
					t.Fatalf("vector %d = %v, want %v", i, got[i], want)
				}
			}
			isString := strings.Contains(string(r.Body), `"embedding":"`)
			if isString != (tc.format == "base64") {
				t.Fatalf("format %q answered %s", tc.format, r.Body)
			}
			a := r.JSON(t)
			usage := a["usage"].(map[string]any)
			// 3 + 4 tokens at $20 a million: $0.00014.
			if a["model"] != "embed" || a["provider"] != "openai" || a["id"] != r.Header.Get("X-Generation-Id") ||
				jsonString(usage["prompt_tokens"]) != "7" || jsonString(usage["total_tokens"]) != "7" || jsonString(usage["cost"]) != "0.00014" {
				t.Fatalf("answer %s", r.Body)
			}
			rec := generationOf(t, g, r)
			for k, v := range map[string]string{"api_type": "embeddings", "model": "embed", "provider_name": "openai", "total_cost": "0.00014",
				"tokens_prompt": "7", "tokens_completion": "0", "native_tokens_prompt": "7", "streamed": "false", "finish_reason": "stop",
				"upstream_id": "req_fake_openai_embed", "external_user": "end-user"} {
				if got := fmt.Sprint(jsonString(rec[k])); got != v && fmt.Sprint(rec[k]) != v {
					t.Errorf("record %s = %v, want %s", k, rec[k], v)
				}
			}
			content := g.Do(t, "GET", "/generation/content?id="+rec["id"].(string), g.Admin, nil).JSON(t)["data"].(map[string]any)
			msgs := content["input"].(map[string]any)["messages"].([]any)
			if len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "second input!" {
				t.Errorf("content input = %v", content["input"])
			}
		})
	}
}

// TestEmbeddingsUsageBilling: the upstream's count of the input tokens is billed when it is plausible, up to twice
// the inputs' worst case (a token a byte: 11 for "hello world") plus 4,096; past it, or none, the call is billed at
// the gateway's estimate (3 tokens, four bytes a token), the record keeps the upstream's count as its native one and
// is flagged usage_implausible, and the metric counts it. $20 a million tokens.
func TestEmbeddingsUsageBilling(t *testing.T) {
	t.Parallel()
	u, g, key := startEmbeddings(t, "")
	for _, tc := range []struct {
		reported             int64
		cost, billed, native string
		flagged              bool
	}{
		{3, "0.00006", "3", "3", false},
		{4118, "0.08236", "4118", "4118", false},
		{4119, "0.00006", "3", "4119", true},
		{0, "0.00006", "3", "0", true},
		{-5, "0.00006", "3", "-5", true},
	} {
		u.openai.EmbedPromptTokens = &tc.reported
		r := g.Do(t, "POST", "/embeddings", key, map[string]any{"model": "embed", "input": "hello world"})
		if r.Status != 200 {
			t.Fatalf("reported %d: %d %s", tc.reported, r.Status, r.Body)
		}
		rec := generationOf(t, g, r)
		flags := fmt.Sprint(rec["guardrail_flags"])
		if jsonString(rec["total_cost"]) != tc.cost || jsonString(rec["tokens_prompt"]) != tc.billed ||
			jsonString(rec["native_tokens_prompt"]) != tc.native || strings.Contains(flags, "usage_implausible") != tc.flagged ||
			jsonString(r.JSON(t)["usage"].(map[string]any)["prompt_tokens"]) != tc.billed {
			t.Fatalf("reported %d: record %v, answer %s", tc.reported, rec, r.Body)
		}
	}
	if n, _ := value(scrape(t, g), "switchboard_upstream_implausible_usage_total", map[string]string{"provider": "openai", "model": "embed"}); n != 3 {
		t.Fatalf("switchboard_upstream_implausible_usage_total = %v, want 3", n)
	}
}

// TestEmbeddingsFailsOver: an OpenAI endpoint that fails before answering hands the call to Gemini, whose floats go
// back as the base64 the caller asked for; Gemini's missing usage is billed at the gateway's estimate.
func TestEmbeddingsFailsOver(t *testing.T) {
	t.Parallel()
	u, g, key := startEmbeddings(t, "")
	u.openai.Script(fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded})
	r := g.Do(t, "POST", "/embeddings", key, map[string]any{"model": "embed", "input": "hello world", "encoding_format": "base64",
		"dimensions": 4})
	if r.Status != 200 {
		t.Fatalf("POST /embeddings: %d %s", r.Status, r.Body)
	}
	if got, want := vectors(t, r)[0], fakes.FakeVector(`"hello world"`, 4); !slices.Equal(got, want) {
		t.Fatalf("vector %v, want %v", got, want)
	}
	rec := generationOf(t, g, r)
	var order []string
	for _, p := range rec["provider_responses"].([]any) {
		pm := p.(map[string]any)
		order = append(order, fmt.Sprintf("%s:%v", pm["provider_name"], jsonString(pm["status"])))
	}
	// "hello world" is 11 bytes: 3 tokens at four bytes a token, $15 a million.
	if strings.Join(order, ",") != "openai:503,gemini:200" || rec["provider_name"] != "gemini" ||
		jsonString(rec["tokens_prompt"]) != "3" || jsonString(rec["total_cost"]) != "0.000045" {
		t.Fatalf("attempts %v, record %v", order, rec)
	}
	// An answer with an empty vector is a provider's failure too: no model's embedding has no dimension.
	u.openai.Script(fakes.Step{Status: 200, Body: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[]}],"model":"m",` +
		`"usage":{"prompt_tokens":3,"total_tokens":3}}`})
	r = g.Do(t, "POST", "/embeddings", key, map[string]any{"model": "embed", "input": "hello world", "dimensions": 4})
	if r.Status != 200 || len(vectors(t, r)[0]) != 4 {
		t.Fatalf("an empty vector was delivered: %d %s", r.Status, r.Body)
	}
	if rec := generationOf(t, g, r); rec["provider_name"] != "gemini" {
		t.Fatalf("record %v", rec)
	}
}

// TestEmbeddingsRefuses: a request the gateway cannot serve is a 4xx in the envelope naming the field, and every
// call that named a model it may use leaves a record.
func TestEmbeddingsRefuses(t *testing.T) {
	t.Parallel()
	u, g, key := startEmbeddings(t, "")
	for _, tc := range []struct {
		name   string
		body   any
		status int
		field  string
		record bool
	}{
		{"no input", map[string]any{"model": "embed"}, 400, "input", false},
		{"an empty string", map[string]any{"model": "embed", "input": []string{"a", ""}}, 400, "input[1]", false},
		{"a NUL", map[string]any{"model": "embed", "input": "a\u0000b"}, 400, "input", false},
		{"a negative token", map[string]any{"model": "embed", "input": [][]int{{1}, {2, -3}}}, 400, "input[1][1]", false},
		{"too many inputs", map[string]any{"model": "embed", "input": make([]string, 2049)}, 400, "input", false},
		{"a bad format", map[string]any{"model": "embed", "input": "a", "encoding_format": "int8"}, 400, "encoding_format", false},
		{"a chat model", map[string]any{"model": "chat", "input": "a"}, 400, "model", false},
		{"an unknown model", map[string]any{"model": "nope", "input": "a"}, 404, "", false},
		{"token arrays to a provider of text alone", map[string]any{"model": "embed-gemini", "input": []int{1, 2}}, 400, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.Do(t, "POST", "/embeddings", key, tc.body)
			e := harness.AssertError(t, r, tc.status)
			if tc.field != "" && fmt.Sprint(e["metadata"].(map[string]any)["field"]) != tc.field {
				t.Fatalf("error %v, want one naming %s", e, tc.field)
			}
			if tc.record {
				rec := generationOf(t, g, r)
				if jsonString(rec["total_cost"]) != "0" || rec["api_type"] != "embeddings" {
					t.Fatalf("record %v", rec)
				}
			}
		})
	}
	if u.gemini.Calls() != 0 || u.openai.Calls() != 0 {
		t.Fatalf("upstreams called %d and %d times, want never", u.openai.Calls(), u.gemini.Calls())
	}
}

// TestEmbeddingsModels: GET /embeddings/models lists the embeddings models alone, and GET /models lists them as
// text->embeddings, priced per input token.
func TestEmbeddingsModels(t *testing.T) {
	t.Parallel()
	_, g, key := startEmbeddings(t, "")
	var ids []string
	for _, m := range g.Do(t, "GET", "/embeddings/models", key, nil).JSON(t)["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, ",") != "embed,embed-gemini" {
		t.Fatalf("GET /embeddings/models: %v", ids)
	}
	all := g.Do(t, "GET", "/models?output_modalities=embeddings", key, nil).JSON(t)["data"].([]any)
	m := all[0].(map[string]any)
	if len(all) != 2 || m["architecture"].(map[string]any)["modality"] != "text->embeddings" ||
		m["pricing"].(map[string]any)["prompt"] != "0.00002" {
		t.Fatalf("GET /models: %v", all)
	}
}

// TestEmbeddingsCountTokens: an embeddings call spends its key's token limits, as a chat call does.
func TestEmbeddingsCountTokens(t *testing.T) {
	t.Parallel()
	_, g, key := startEmbeddings(t, "limits: {tokens_per_minute: 10}\n")
	body := map[string]any{"model": "embed", "input": strings.Repeat("word ", 10)} // 13 tokens
	if r := g.Do(t, "POST", "/embeddings", key, body); r.Status != 200 {
		t.Fatalf("first call: %d %s", r.Status, r.Body)
	}
	harness.Eventually(t, 5*time.Second, func() bool {
		return g.Do(t, "POST", "/embeddings", key, body).Status == 429
	})
}
