package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// TestEmbed: inputs go to batchEmbedContents in batches of at most 100, each request with the options under its
// content and outputDimensionality; the vectors come back in order, with the usage when Gemini sends one.
func TestEmbed(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	c := client(f, "g-key", fakes.Patient)
	dims := int64(3)
	for _, tc := range []struct {
		name    string
		inputs  int
		dims    *int64
		usage   bool
		batches int
	}{
		{"one", 1, nil, false, 1},
		{"a full batch, with usage", fakes.GeminiMaxBatch, &dims, true, 1},
		{"several batches", 2*fakes.GeminiMaxBatch + 1, nil, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.EmbedUsage = tc.usage
			f.Script()
			req := ports.EmbedRequest{UpstreamModel: "gemini-embedding-001", Dimensions: tc.dims,
				Options: map[string]any{"taskType": "RETRIEVAL_QUERY", "content": "smuggled"}}
			for i := range tc.inputs {
				req.Inputs = append(req.Inputs, embedding.Input{Text: fmt.Sprintf("text %d", i)})
			}
			got, err := c.Embed(context.Background(), req)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			n := fakes.FakeDimensions
			if tc.dims != nil {
				n = int(*tc.dims)
			}
			var tokens int64
			for i, in := range req.Inputs {
				q, _ := json.Marshal(in.Text)
				tokens += fakes.EmbedTokens(q)
				if want := fakes.FakeVector(string(q), n); !slices.Equal(got.Vectors[i], want) {
					t.Fatalf("vector %d = %v, want %v", i, got.Vectors[i], want)
				}
			}
			if len(got.Vectors) != tc.inputs || f.Calls() != tc.batches || got.UpstreamID != "fake-gemini-embed" {
				t.Fatalf("%d vectors in %d calls, id %q", len(got.Vectors), f.Calls(), got.UpstreamID)
			}
			if tc.usage != (got.PromptTokens != nil) || tc.usage && *got.PromptTokens != tokens {
				t.Fatalf("tokens %v, want %d (usage sent: %v)", got.PromptTokens, tokens, tc.usage)
			}
			var body struct {
				Requests []map[string]any `json:"requests"`
			}
			_ = json.Unmarshal(f.Requests()[0].Body, &body)
			first := body.Requests[0]
			if first["taskType"] != "RETRIEVAL_QUERY" || first["content"] == "smuggled" || (tc.dims != nil) != (first["outputDimensionality"] != nil) {
				t.Fatalf("request %v", first)
			}
		})
	}
}

// TestEmbedRefuses: Gemini embeds no token arrays, refused before a call (another endpoint may take them); its
// error answers are classified as every call's are.
func TestEmbedRefuses(t *testing.T) {
	t.Parallel()
	f := fakes.NewGemini(t, "g-key")
	_, err := client(f, "g-key", fakes.Patient).Embed(context.Background(),
		ports.EmbedRequest{UpstreamModel: "gemini-embedding-001", Inputs: []embedding.Input{{Tokens: []int64{1}}}})
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !ue.Retryable || f.Calls() != 0 {
		t.Fatalf("Embed of a token array = %v after %d calls, want a retryable refusal before any", err, f.Calls())
	}
	req := ports.EmbedRequest{UpstreamModel: "gemini-embedding-001", Inputs: []embedding.Input{{Text: "a"}}}
	fakes.CheckEmbedFailures(t, f.Fake, dial(f, "g-key"), req, []fakes.Failure{
		{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.GeminiRateLimited}, Kind: domain.KindRateLimited, Retryable: true,
			RetryAfter: 1500 * time.Millisecond},
		{Name: "daily quota", Step: fakes.Step{Status: 429, Body: fakes.GeminiDailyQuota}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.GeminiOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "no first byte in time", Step: fakes.Step{Hold: make(chan struct{})}, Kind: domain.KindTimeout, Retryable: true},
	})
}
