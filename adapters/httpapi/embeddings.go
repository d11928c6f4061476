package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/embeddings"
	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
	"github.com/switchboard-ai/switchboard/adapters/internal/vector"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/ports"
)

// EmbeddingsHandler serves POST /embeddings.
type EmbeddingsHandler struct{ embeddings ports.EmbeddingService }

func NewEmbeddingsHandler(s ports.EmbeddingService) *EmbeddingsHandler {
	return &EmbeddingsHandler{embeddings: s}
}

func (h *EmbeddingsHandler) create(c *gin.Context) {
	raw, err := readSized(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		writeError(c, err)
		return
	}
	req, err := embeddings.Decode(raw)
	if err != nil {
		writeError(c, err)
		return
	}
	sink := &embeddingSink{c: c}
	id, err := h.embeddings.Embed(c.Request.Context(), principal(c), req, caller(c), sink)
	if err != nil && !sink.written {
		if id != "" {
			c.Header("X-Generation-Id", id)
		}
		writeError(c, err)
	}
}

// embeddingSink writes the answer in OpenAI's shape, with the reference's id, provider and usage.cost: each vector
// as JSON numbers (float32's shortest form) or as the base64 of its little-endian float32s, as the caller asked,
// whatever encoding the upstream used.
type embeddingSink struct {
	c       *gin.Context
	written bool
}

func (s *embeddingSink) Write(a ports.EmbeddingAnswer) error {
	s.written = true
	b := make([]byte, 0, answerSize(a))
	b = append(b, `{"object":"list","data":[`...)
	for i, v := range a.Vectors {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if a.Format == embedding.Base64 {
			b = append(b, '"')
			b = append(b, vector.Base64(v)...)
			b = append(b, '"')
		} else {
			b = appendFloats(b, v)
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = jsonenc.AppendString(b, a.Model)
	b = append(b, `,"id":`...)
	b = jsonenc.AppendString(b, a.GenerationID)
	b = append(b, `,"provider":`...)
	b = jsonenc.AppendString(b, a.Provider)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, a.PromptTokens, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, a.PromptTokens, 10)
	b = append(b, `,"cost":`...)
	b = append(b, a.Cost.Decimal()...)
	b = append(b, "}}"...)
	h := s.c.Writer.Header()
	h["Content-Type"] = jsonContent
	h.Set("X-Generation-Id", a.GenerationID)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	s.c.Writer.WriteHeader(http.StatusOK)
	_, err := s.c.Writer.Write(b)
	return err
}

// jsonContent is a JSON answer's Content-Type, one slice for every answer (which no one writes to).
var jsonContent = []string{"application/json; charset=utf-8"}

// answerSize is about the bytes of an answer: a number as JSON is at most 15 bytes ("-1.2345678e-38,"), as
// base64 under 6.
func answerSize(a ports.EmbeddingAnswer) int {
	n := 256 + len(a.Model) + len(a.Provider)
	for _, v := range a.Vectors {
		n += 64 + 15*len(v)
	}
	return n
}

// appendFloats appends v as a JSON array of numbers, each float32's shortest form. The adapters hand over finite
// numbers only: JSON has none other.
func appendFloats(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return append(b, ']')
}

// embeddingModels answers GET /embeddings/models: the catalog's embeddings models, in GET /models' shape.
func (h *ModelsHandler) embeddingModels(c *gin.Context) {
	h.page(c, func(m ports.ListedModel, _ modelOut) bool { return m.Model.Modality == catalog.Embeddings })
}
