package e2e_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// embeddingsSuite is the suite TestEmbeddingsClients runs against a gateway of its own.
const embeddingsSuite = "embeddings.test.mjs"

// TestEmbeddingsClients runs the openai package, the reference SDK and the AI SDK's embedMany against the gateway,
// before OpenAI and Gemini fakes (one that always fails, one that refuses the input).
func TestEmbeddingsClients(t *testing.T) {
	t.Parallel()
	oa, gm := fakes.NewOpenAI(t, "sk-embed"), fakes.NewGemini(t, "g-embed")
	broken, refusing := fakes.NewOpenAI(t, "sk-embed"), fakes.NewOpenAI(t, "sk-embed")
	broken.Default = fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded}
	refusing.Default = fakes.Step{Status: 400, Body: fakes.OpenAIInvalidEmbeddingsInput}
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-embed}
  - {slug: gemini, kind: google-ai-studio, base_url: %s, api_key: g-embed}
  - {slug: broken, kind: openai, base_url: %s, api_key: sk-embed}
  - {slug: refusing, kind: openai, base_url: %s, api_key: sk-embed}
models:
  - {id: embed/openai, modality: embeddings, endpoints: [{provider: openai, upstream_model: text-embedding-3-small, pricing: {per_million_prompt_tokens: 0.02}}]}
  - {id: embed/gemini, modality: embeddings, endpoints: [{provider: gemini, upstream_model: gemini-embedding-001, pricing: {per_million_prompt_tokens: 0.15}}]}
  - id: embed/failover
    modality: embeddings
    endpoints:
      - {provider: broken, upstream_model: text-embedding-3-small, pricing: {per_million_prompt_tokens: 0.02}}
      - {provider: gemini, upstream_model: gemini-embedding-001, pricing: {per_million_prompt_tokens: 0.15}}
  - {id: embed/refusing, modality: embeddings, endpoints: [{provider: refusing, upstream_model: text-embedding-3-small, pricing: {per_million_prompt_tokens: 0.02}}]}
`, oa.BaseURL(), gm.BaseURL(), broken.BaseURL(), refusing.BaseURL())))
	key, _ := g.Key(t, nil)
	vectors := map[string][]float32{}
	for _, in := range []string{"The quick brown fox", "jumps over the lazy dog", "Ünïcödé and emoji 🦊"} {
		q, _ := json.Marshal(in)
		vectors[in] = fakes.FakeVector(string(q), fakes.FakeDimensions)
	}
	expected, _ := json.Marshal(vectors)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_KEY": key, "SB_EMBED_VECTORS": string(expected)},
		func(f string) bool { return f == embeddingsSuite })

	// The openai package asked for base64 by default and the gateway asked its upstream for base64 every time.
	for _, r := range oa.Requests() {
		var body struct {
			EncodingFormat string `json:"encoding_format"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.EncodingFormat != "base64" {
			t.Fatalf("upstream request %s", r.Body)
		}
	}
	if oa.Calls() != 3 || broken.Calls() != 1 || refusing.Calls() != 1 {
		t.Fatalf("calls: openai %d, broken %d, refusing %d", oa.Calls(), broken.Calls(), refusing.Calls())
	}
}
