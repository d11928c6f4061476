package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/ports"
)

// ModelsHandler lists the catalog in the reference's shapes: GET /models and GET /providers.
type ModelsHandler struct{ catalog ports.CatalogService }

func NewModelsHandler(c ports.CatalogService) *ModelsHandler { return &ModelsHandler{catalog: c} }

type modelOut struct {
	ID                  string         `json:"id"`
	CanonicalSlug       string         `json:"canonical_slug"`
	Name                string         `json:"name"`
	Created             int64          `json:"created"`
	Description         string         `json:"description"`
	ContextLength       *int           `json:"context_length"`
	Architecture        architecture   `json:"architecture"`
	Pricing             modelPricing   `json:"pricing"`
	TopProvider         topProvider    `json:"top_provider"`
	PerRequestLimits    *struct{}      `json:"per_request_limits"`
	SupportedParameters []string       `json:"supported_parameters"`
	SupportedVoices     []string       `json:"supported_voices"`
	DefaultParameters   *struct{}      `json:"default_parameters"`
	Links               modelLinks     `json:"links"`
	Endpoints           []endpointInfo `json:"endpoints"`
}

type architecture struct {
	Modality         string   `json:"modality"`
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
}

// modelPricing is in USD per unit, as decimal strings: prompt is per prompt token (chat), per input token
// (embeddings) or per input character (text to speech); completion per completion token. Prices per second (video, some speech) are not among the
// reference's fields: they are 0 here, and GET /videos/models lists video's.
type modelPricing struct {
	Prompt     string `json:"prompt"`
	Completion string `json:"completion"`
}

type topProvider struct {
	ContextLength       *int `json:"context_length"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	IsModerated         bool `json:"is_moderated"`
}

type modelLinks struct {
	Details string `json:"details"`
}

// endpointInfo is the gateway's own addition: the providers that serve the model, in the order they are tried.
type endpointInfo struct {
	Provider string `json:"provider"`
}

// modalities are how the reference names what each modality takes and gives.
var modalities = map[catalog.Modality]architecture{
	catalog.Chat:  {Modality: "text->text", InputModalities: []string{"text"}, OutputModalities: []string{"text"}},
	catalog.TTS:   {Modality: "text->audio", InputModalities: []string{"text"}, OutputModalities: []string{"audio"}},
	catalog.Video: {Modality: "text->video", InputModalities: []string{"text"}, OutputModalities: []string{"video"}},
	catalog.Embeddings: {Modality: "text->embeddings", InputModalities: []string{"text"},
		OutputModalities: []string{"embeddings"}},
}

func toModelOut(m ports.ListedModel) modelOut {
	out := modelOut{ID: m.Model.ID, CanonicalSlug: m.Model.ID, Name: m.Model.ID, Created: m.Created.Unix(),
		Architecture: modalities[m.Model.Modality], Pricing: modelPricing{Prompt: "0", Completion: "0"},
		SupportedParameters: []string{}, Endpoints: []endpointInfo{}}
	for _, e := range m.Model.Endpoints {
		out.Endpoints = append(out.Endpoints, endpointInfo{Provider: e.Provider})
	}
	if len(m.Model.Endpoints) > 0 { // the price of the first endpoint, the one tried first
		p := m.Model.Endpoints[0].Pricing
		switch {
		case p.PerMillionChars != nil:
			out.Pricing.Prompt = perUnit(*p.PerMillionChars)
		case p.PerMillionPromptTokens != nil:
			out.Pricing.Prompt = perUnit(*p.PerMillionPromptTokens)
		}
		if p.PerMillionCompletionTokens != nil {
			out.Pricing.Completion = perUnit(*p.PerMillionCompletionTokens)
		}
	}
	return out
}

// perUnit is a price per million units as USD per unit, exactly.
func perUnit(perMillion domain.Micros) string {
	const scale = int64(1_000_000 * domain.MicrosPerUSD)
	u := int64(perMillion)
	s := fmt.Sprint(u / scale)
	if frac := u % scale; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%012d", frac), "0")
	}
	return s
}

// list answers GET /models: {data, links: {next}, total_count}, paged by offset and limit (default 500, as the
// SDK's), filtered by output_modalities (comma-separated, e.g. "audio,video"; "all" for every one). Other
// reference filters are accepted and ignored.
func (h *ModelsHandler) list(c *gin.Context) {
	var want []string
	if raw := c.Query("output_modalities"); raw != "" && raw != "all" {
		want = strings.Split(raw, ",")
	}
	h.page(c, func(_ ports.ListedModel, out modelOut) bool {
		return want == nil || slices.ContainsFunc(out.Architecture.OutputModalities, func(o string) bool { return slices.Contains(want, o) })
	})
}

// page answers a list of the catalog's models that keep keeps, paged by offset and limit (GET /models' shape).
func (h *ModelsHandler) page(c *gin.Context, keep func(m ports.ListedModel, out modelOut) bool) {
	limit, err := queryInt(c, "limit", 500, 1, 1000)
	if err != nil {
		writeError(c, err)
		return
	}
	offset, err := queryInt(c, "offset", 0, 0, 1<<31-1)
	if err != nil {
		writeError(c, err)
		return
	}
	models := []modelOut{}
	for _, m := range h.catalog.Models() {
		if out := toModelOut(m); keep(m, out) {
			models = append(models, out)
		}
	}
	total := len(models)
	page := models[min(offset, total):min(offset+limit, total)]
	var next *string
	if offset+len(page) < total {
		q := c.Request.URL.Query()
		q.Set("offset", fmt.Sprint(offset+len(page)))
		q.Set("limit", fmt.Sprint(limit))
		u := c.Request.URL.Path + "?" + q.Encode()
		next = &u
	}
	c.JSON(http.StatusOK, gin.H{"data": page, "links": gin.H{"next": next}, "total_count": total})
}

type providerOut struct {
	Name              string  `json:"name"`
	Slug              string  `json:"slug"`
	PrivacyPolicyURL  *string `json:"privacy_policy_url"`
	TermsOfServiceURL *string `json:"terms_of_service_url"`
	StatusPageURL     *string `json:"status_page_url"`
}

// providers answers GET /providers: the configured providers that serve some model, named by their slugs.
func (h *ModelsHandler) providers(c *gin.Context) {
	out := []providerOut{}
	for _, slug := range h.catalog.Providers() {
		out = append(out, providerOut{Name: slug, Slug: slug})
	}
	data(c, http.StatusOK, out)
}
