package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

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
		if d.Embedding == nil {
			return ports.Embeddings{}, malformed(resp.StatusCode, errNotNumbers)
		}
		got.Vectors[d.Index] = d.Embedding
	}
	if out.Usage != nil && out.Usage.PromptTokens != nil {
		got.PromptTokens = out.Usage.PromptTokens
	}
	return got, nil
}

var (
	errBadIndex   = errors.New("an embedding's index is out of range or given twice")
	errNotFinite  = errors.New("a base64 embedding holds a number that is not finite")
	errNotNumbers = errors.New("an embedding is neither a list of numbers nor base64")
)

func malformed(status int, err error) error {
	return &ports.UpstreamError{Status: status, Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent a malformed answer", Err: err}
}

// embedAnswer is OpenAI's answer: each embedding a list of numbers, or the base64 of its little-endian float32s.
type embedAnswer struct {
	ID   string `json:"id"`
	Data []struct {
		Index     int        `json:"index"`
		Embedding wireVector `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens *int64 `json:"prompt_tokens"`
	} `json:"usage"`
}

// wireVector is one embedding as the wire has it: a list of numbers, or the base64 of its float32s. It is read by
// hand from the answer encoding/json has checked: decoded again by encoding/json, each vector's bytes were checked
// and copied twice more, most of the gateway's time on a call (its CPU profile).
type wireVector []float32

func (v *wireVector) UnmarshalJSON(raw []byte) error {
	switch raw[0] {
	case '"':
		text := raw[1 : len(raw)-1]
		if bytes.IndexByte(text, '\\') >= 0 { // base64 has no escapes, but JSON allows \/ for its slashes
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			text = []byte(s)
		}
		f, err := vector.FromBase64(text)
		if err != nil {
			return err
		}
		for _, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return errNotFinite // JSON, which the caller may ask for, has no such number
			}
		}
		*v = f
	case '[':
		items := bytes.TrimSpace(raw[1 : len(raw)-1])
		f := make([]float32, 0, bytes.Count(items, comma)+1)
		for len(items) > 0 {
			var item []byte
			item, items, _ = bytes.Cut(items, comma)
			x, err := strconv.ParseFloat(string(bytes.TrimSpace(item)), 32) // a JSON number, or no number
			if err != nil {
				return errNotNumbers
			}
			f = append(f, float32(x))
		}
		*v = f
	default: // null
		return errNotNumbers
	}
	return nil
}

var comma = []byte(",")

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
