package openai

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/internal/vector"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.EmbeddingProvider = (*Client)(nil)

// Embed calls POST /embeddings. The vectors are asked for as base64, which every OpenAI-compatible host the
// openai clients talk to serves (it is their default) and which is a quarter of the bytes of JSON numbers; an
// upstream that answers with numbers anyway is read as well.
func (c *Client) Embed(ctx context.Context, r ports.EmbedRequest) (ports.Embeddings, error) {
	body, err := embedBody(r)
	if err != nil {
		return ports.Embeddings{}, upstream.Internal(err)
	}
	req, err := c.embeddings.Post(body, make(http.Header, 2))
	if err != nil {
		return ports.Embeddings{}, upstream.Internal(err)
	}
	resp, err := c.do(ctx, req)
	if err != nil {
		return ports.Embeddings{}, err
	}
	var out embedAnswer
	if err := upstream.DecodeAnswer(resp, upstream.MaxEmbeddingsAnswer, &out); err != nil {
		return ports.Embeddings{}, err
	}
	got := ports.Embeddings{Vectors: make([][]float32, len(out.Data)), UpstreamID: out.ID}
	if got.UpstreamID == "" {
		got.UpstreamID = resp.Header.Get("X-Request-Id")
	}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(out.Data) || got.Vectors[d.Index] != nil {
			return ports.Embeddings{}, malformed(resp.StatusCode, errBadIndex)
		}
		if got.Vectors[d.Index], err = decodeVector(d.Embedding); err != nil {
			return ports.Embeddings{}, malformed(resp.StatusCode, err)
		}
	}
	if out.Usage != nil && out.Usage.PromptTokens != nil {
		got.PromptTokens = out.Usage.PromptTokens
	}
	return got, nil
}

var (
	errBadIndex  = errors.New("an embedding's index is out of range or given twice")
	errNotFinite = errors.New("a base64 embedding holds a number that is not finite")
)

func malformed(status int, err error) error {
	return &ports.UpstreamError{Status: status, Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent a malformed answer", Err: err}
}

// embedAnswer is OpenAI's answer: each embedding a list of numbers, or the base64 of its little-endian float32s.
type embedAnswer struct {
	ID   string `json:"id"`
	Data []struct {
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens *int64 `json:"prompt_tokens"`
	} `json:"usage"`
}

// vector reads one embedding as the wire has it: a list of numbers, or a base64 string.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		v, err := vector.FromBase64(s)
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, errNotFinite // JSON, which the caller may ask for, has no such number
			}
		}
		return v, err
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("an embedding is null")
	}
	return v, nil
}

// embedBody is the request's body: the options the call's own fields do not name, then those fields, last (see
// object).
func embedBody(r ports.EmbedRequest) ([]byte, error) {
	size := 96 + len(r.UpstreamModel)
	input := make([]any, len(r.Inputs))
	for i, in := range r.Inputs {
		if in.Tokens != nil {
			input[i] = in.Tokens
			size += 12 * len(in.Tokens)
		} else {
			input[i] = in.Text
			size += len(in.Text) + 4
		}
	}
	o := newObject(size)
	o.add(options(r.Options, func(k string) bool {
		switch k {
		case "model", "input", "encoding_format":
			return true
		}
		return k == "dimensions" && r.Dimensions != nil
	}))
	o.add(embedFields{Model: r.UpstreamModel, Input: input, EncodingFormat: string(embedding.Base64), Dimensions: r.Dimensions})
	return o.bytes()
}

// embedFields are the fields of an embeddings call the gateway writes itself, last.
type embedFields struct {
	Model          string `json:"model"`
	Input          []any  `json:"input"`
	EncodingFormat string `json:"encoding_format"`
	Dimensions     *int64 `json:"dimensions,omitempty"`
}
