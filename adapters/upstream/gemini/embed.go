package gemini

import (
	"context"
	"net/url"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.EmbeddingProvider = (*Client)(nil)

// maxBatch is the most requests Gemini takes in one batchEmbedContents call: more inputs go in several calls, one
// after the other.
const maxBatch = 100

// Embed calls batchEmbedContents, each input a request of its own with provider.options (taskType, title...) laid
// under its content and outputDimensionality. Gemini embeds text only: token arrays are refused before any call.
// Its answer has no usage unless it sends usageMetadata; a call without it is billed at the gateway's estimate.
func (c *Client) Embed(ctx context.Context, r ports.EmbedRequest) (ports.Embeddings, error) {
	for _, in := range r.Inputs {
		if in.Tokens != nil {
			return ports.Embeddings{}, upstream.Unfit("input: google-ai-studio embeds text only, not token arrays")
		}
	}
	u := c.cfg.BaseURL + "/models/" + url.PathEscape(r.UpstreamModel) + ":batchEmbedContents"
	out := ports.Embeddings{Vectors: make([][]float32, 0, len(r.Inputs))}
	var tokens int64
	counted := true
	for start := 0; start < len(r.Inputs); start += maxBatch {
		batch := r.Inputs[start:min(start+maxBatch, len(r.Inputs))]
		reqs := make([]map[string]any, len(batch))
		for i, in := range batch {
			fields := map[string]any{"model": "models/" + r.UpstreamModel,
				"content": map[string]any{"parts": []any{map[string]any{"text": in.Text}}}}
			if r.Dimensions != nil {
				fields["outputDimensionality"] = *r.Dimensions
			}
			reqs[i] = upstream.Merge(r.Options, fields)
		}
		req, err := upstream.NewJSONRequest(ctx, u, map[string]any{"requests": reqs})
		if err != nil {
			return ports.Embeddings{}, upstream.Internal(err)
		}
		resp, err := c.call(req)
		if err != nil {
			return ports.Embeddings{}, err
		}
		var got struct {
			Embeddings []struct {
				Values []float32 `json:"values"`
			} `json:"embeddings"`
			UsageMetadata *struct {
				PromptTokenCount *int64 `json:"promptTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := upstream.DecodeAnswer(resp, upstream.MaxEmbeddingsAnswer, &got); err != nil {
			return ports.Embeddings{}, err
		}
		if out.UpstreamID == "" {
			out.UpstreamID = resp.Header.Get("X-Goog-Request-Id")
		}
		if len(got.Embeddings) != len(batch) {
			return ports.Embeddings{}, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
				Reason: "the provider answered with another number of embeddings than inputs"}
		}
		for _, e := range got.Embeddings {
			out.Vectors = append(out.Vectors, e.Values)
		}
		if got.UsageMetadata != nil && got.UsageMetadata.PromptTokenCount != nil {
			tokens += *got.UsageMetadata.PromptTokenCount
		} else {
			counted = false
		}
	}
	if counted {
		out.PromptTokens = &tokens
	}
	return out, nil
}
