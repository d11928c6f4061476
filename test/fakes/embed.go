package fakes

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// FakeDimensions is the length of a fake's vectors when the request asks for none.
const FakeDimensions = 8

// FakeVector is the vector the embeddings fakes make of an input (a text, or a token array as its JSON): dims
// numbers, each a float32 of its own, that tell inputs apart.
func FakeVector(input string, dims int) []float32 {
	var h uint32 = 2166136261 // FNV-1a
	for i := 0; i < len(input); i++ {
		h = (h ^ uint32(input[i])) * 16777619
	}
	v := make([]float32, dims)
	for i := range v {
		h = h*1664525 + 1013904223
		v[i] = float32(int32(h>>8)%2000) / 1000 // -2 to 2, three decimals
	}
	return v
}

// EmbedTokens is what the fakes count an input as: a token array its ids, a text its bytes / 4, rounded up.
func EmbedTokens(input json.RawMessage) int64 {
	var text string
	if json.Unmarshal(input, &text) == nil {
		return (int64(len(text)) + 3) / 4
	}
	var ids []int64
	_ = json.Unmarshal(input, &ids)
	return int64(len(ids))
}

// OpenAIInvalidEmbeddingsInput is OpenAI's refusal of an input it cannot take.
const OpenAIInvalidEmbeddingsInput = `{"error":{"message":"'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.","type":"invalid_request_error","param":null,"code":null}}`

// embeddings serves POST /v1/embeddings as OpenAI does: input a string, a token array, or a list of either; the
// vectors as floats, or base64 of little-endian float32s when encoding_format asks for it (unless FloatsOnly: an
// OpenAI-compatible host that answers floats whatever it is asked); usage.prompt_tokens. The step's Abort and
// HoldAfter cut or stall the answer.
func (o *OpenAI) embeddings(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	w.Header().Set("x-request-id", "req_fake_openai_embed")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Input) == 0 {
		jsonError(w, 400, OpenAIInvalidEmbeddingsInput)
		return
	}
	inputs, ok := openAIInputs(req.Input)
	if !ok || req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		jsonError(w, 400, OpenAIInvalidEmbeddingsInput)
		return
	}
	dims := FakeDimensions
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	var b strings.Builder
	b.WriteString(`{"object":"list","data":[`)
	var tokens int64
	for i, in := range inputs {
		tokens += EmbedTokens(in)
		if i > 0 {
			b.WriteByte(',')
		}
		v := FakeVector(string(in), dims)
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":`, i)
		if req.EncodingFormat == "base64" && !o.FloatsOnly {
			b.WriteString(`"` + Base64Vector(v) + `"`)
		} else {
			enc, _ := json.Marshal(v)
			b.Write(enc)
		}
		b.WriteByte('}')
	}
	if o.EmbedPromptTokens != nil {
		tokens = *o.EmbedPromptTokens
	}
	fmt.Fprintf(&b, `],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`, req.Model, tokens, tokens)
	w.Header().Set("Content-Type", "application/json")
	stream(w, r, strings.NewReader(b.String()), step)
}

// openAIInputs splits input into its inputs, each as its JSON: one string or token array, or a list of them.
func openAIInputs(raw json.RawMessage) ([]json.RawMessage, bool) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []json.RawMessage{raw}, text != ""
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		return []json.RawMessage{raw}, len(ids) > 0
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 || len(items) > 2048 {
		return nil, false
	}
	for _, it := range items {
		if EmbedTokens(it) == 0 {
			return nil, false
		}
	}
	return items, true
}

// Base64Vector is a vector as OpenAI's base64 encoding_format has it.
func Base64Vector(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// GeminiMaxBatch is the most requests batchEmbedContents takes.
const GeminiMaxBatch = 100

// batchEmbed serves :batchEmbedContents as Gemini does: each request's model must be the path's, its content's
// text parts are embedded (outputDimensionality long), and the answer is {embeddings: [{values}]}, with
// usageMetadata only when EmbedUsage is set.
func (g *Gemini) batchEmbed(w http.ResponseWriter, r *http.Request, body []byte) {
	model := strings.TrimSuffix(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], ":batchEmbedContents")
	var req struct {
		Requests []struct {
			Model   string `json:"model"`
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
			OutputDimensionality *int `json:"outputDimensionality"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		geminiInvalid(w, "Invalid JSON payload received.")
		return
	}
	if len(req.Requests) == 0 || len(req.Requests) > GeminiMaxBatch {
		geminiInvalid(w, "* BatchEmbedContentsRequest.requests: at most "+strconv.Itoa(GeminiMaxBatch)+" requests can be in one batch")
		return
	}
	type embedding struct {
		Values []float32 `json:"values"`
	}
	out := struct {
		Embeddings    []embedding    `json:"embeddings"`
		UsageMetadata map[string]any `json:"usageMetadata,omitempty"`
	}{}
	var tokens int64
	for i, q := range req.Requests {
		if q.Model != "models/"+model {
			geminiInvalid(w, fmt.Sprintf("* BatchEmbedContentsRequest.requests[%d].model: the model must be the batch's", i))
			return
		}
		var text strings.Builder
		for _, p := range q.Content.Parts {
			text.WriteString(p.Text)
		}
		if text.Len() == 0 {
			geminiInvalid(w, fmt.Sprintf("* BatchEmbedContentsRequest.requests[%d].content: contents is not specified", i))
			return
		}
		dims := FakeDimensions
		if q.OutputDimensionality != nil {
			dims = *q.OutputDimensionality
		}
		in, _ := json.Marshal(text.String())
		tokens += EmbedTokens(in)
		out.Embeddings = append(out.Embeddings, embedding{Values: FakeVector(string(in), dims)})
	}
	if g.EmbedUsage {
		out.UsageMetadata = map[string]any{"promptTokenCount": tokens, "totalTokenCount": tokens}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Goog-Request-Id", "fake-gemini-embed")
	_ = json.NewEncoder(w).Encode(out)
}
