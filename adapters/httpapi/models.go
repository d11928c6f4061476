package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

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
	// InputCacheRead and InputCacheWrite are the prices of a token read from and written to the prompt cache (a
	// 5-minute write), where they are set.
	InputCacheRead  string `json:"input_cache_read,omitempty"`
	InputCacheWrite string `json:"input_cache_write,omitempty"`
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
		out.Pricing = endpointPricing(m.Model.Endpoints[0].Pricing)
	}
	return out
}

// endpointPricing is an endpoint's price in the reference's fields.
func endpointPricing(p catalog.Pricing) modelPricing {
	out := modelPricing{Prompt: "0", Completion: "0"}
	switch {
	case p.PerMillionChars != nil:
		out.Prompt = perUnit(*p.PerMillionChars)
	case p.PerMillionPromptTokens != nil:
		out.Prompt = perUnit(*p.PerMillionPromptTokens)
	}
	if p.PerMillionCompletionTokens != nil {
		out.Completion = perUnit(*p.PerMillionCompletionTokens)
	}
	if p.PerMillionCacheReadTokens != nil {
		out.InputCacheRead = perUnit(*p.PerMillionCacheReadTokens)
	}
	if p.PerMillionCacheWriteTokens != nil {
		out.InputCacheWrite = perUnit(*p.PerMillionCacheWriteTokens)
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
	if c.GetHeader("anthropic-version") != "" {
		h.anthropicList(c)
		return
	}
	h.page(c, outputModalities(c))
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
	models := h.models(keep)
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

// anthropicModel is a model in Anthropic's list (GET /v1/models), which Claude Code's model discovery reads.
type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// anthropicList answers GET /models as Anthropic's API does, for a caller that says its anthropic-version: the
// chat models (the ones /messages serves) and their aliases, a page of limit (1 to 1000, 20 by default) after
// after_id, with has_more, first_id and last_id.
func (h *ModelsHandler) anthropicList(c *gin.Context) {
	limit, err := queryInt(c, "limit", 20, 1, 1000)
	if err != nil {
		writeError(c, err)
		return
	}
	all := []anthropicModel{}
	for _, m := range h.catalog.Models() {
		if m.Model.Modality != catalog.Chat {
			continue
		}
		created := m.Created.UTC().Format(time.RFC3339)
		for _, id := range append([]string{m.Model.ID}, m.Model.Aliases...) {
			all = append(all, anthropicModel{Type: "model", ID: id, DisplayName: m.Model.ID, CreatedAt: created})
		}
	}
	if after := c.Query("after_id"); after != "" {
		i := slices.IndexFunc(all, func(m anthropicModel) bool { return m.ID == after })
		all = all[i+1:] // none after an id not listed: from the start
	}
	page := all[:min(limit, len(all))]
	out := gin.H{"data": page, "has_more": len(page) < len(all), "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = page[0].ID, page[len(page)-1].ID
	}
	c.JSON(http.StatusOK, out)
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

// models are the catalog's models, in its order, that keep keeps.
func (h *ModelsHandler) models(keep func(m ports.ListedModel, out modelOut) bool) []modelOut {
	models := []modelOut{}
	for _, m := range h.catalog.Models() {
		if out := toModelOut(m); keep(m, out) {
			models = append(models, out)
		}
	}
	return models
}

// outputModalities keeps the models of the output modalities the query's output_modalities names (comma-separated,
// e.g. "audio,video"), every one when it names none or "all".
func outputModalities(c *gin.Context) func(ports.ListedModel, modelOut) bool {
	var want []string
	if raw := c.Query("output_modalities"); raw != "" && raw != "all" {
		want = strings.Split(raw, ",")
	}
	return func(_ ports.ListedModel, out modelOut) bool {
		return want == nil || slices.ContainsFunc(out.Architecture.OutputModalities, func(o string) bool { return slices.Contains(want, o) })
	}
}

// count answers GET /models/count: {data: {count}}, filtered as the list is.
func (h *ModelsHandler) count(c *gin.Context) {
	data(c, http.StatusOK, gin.H{"count": len(h.models(outputModalities(c)))})
}

// modelEndpoints is the reference's ListEndpointsResponse: a model and the endpoints that serve it.
type modelEndpoints struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Created      int64            `json:"created"`
	Description  string           `json:"description"`
	Architecture endpointsArch    `json:"architecture"`
	Endpoints    []publicEndpoint `json:"endpoints"`
}

type endpointsArch struct {
	architecture
	InstructType *string `json:"instruct_type"`
	Tokenizer    *string `json:"tokenizer"`
}

// publicEndpoint is the reference's PublicEndpoint. What the configuration does not say (context, quantization,
// tool choice) is 0, null or false; status, uptime, latency and throughput are this replica's measures of the
// endpoint (routing health), null until it has made calls to it.
type publicEndpoint struct {
	Name                    string       `json:"name"`
	ModelID                 string       `json:"model_id"`
	ModelName               string       `json:"model_name"`
	ContextLength           int          `json:"context_length"`
	Pricing                 modelPricing `json:"pricing"`
	ProviderName            string       `json:"provider_name"`
	Tag                     string       `json:"tag"`
	Quantization            *string      `json:"quantization"`
	MaxCompletionTokens     *int         `json:"max_completion_tokens"`
	MaxPromptTokens         *int         `json:"max_prompt_tokens"`
	SupportedParameters     []string     `json:"supported_parameters"`
	Status                  int          `json:"status"`
	UptimeLast5m            *float64     `json:"uptime_last_5m"`
	UptimeLast30m           *float64     `json:"uptime_last_30m"`
	UptimeLast1d            *float64     `json:"uptime_last_1d"`
	LatencyLast30m          *percentiles `json:"latency_last_30m"`
	ThroughputLast30m       *percentiles `json:"throughput_last_30m"`
	SupportsImplicitCaching bool         `json:"supports_implicit_caching"`
	SupportsToolChoice      toolChoice   `json:"supports_tool_choice"`
	SupportsVoiceCloning    bool         `json:"supports_voice_cloning"`
}

type percentiles struct {
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

type toolChoice struct {
	Auto     bool `json:"auto"`
	Function bool `json:"function"`
	None     bool `json:"none"`
	Required bool `json:"required"`
}

// breakerStatus is the reference's endpoint status for a breaker's state: 0 serving, -1 probing after failures,
// -2 skipped for now.
var breakerStatus = map[string]int{"closed": 0, "half_open": -1, "open": -2}

func toPublicEndpoint(m ports.ListedModel, e ports.ModelEndpoint) publicEndpoint {
	out := publicEndpoint{Name: e.Endpoint.Upstream().ID(), ModelID: m.Model.ID, ModelName: m.Model.ID,
		Pricing: endpointPricing(e.Endpoint.Pricing), ProviderName: e.Endpoint.Provider, Tag: e.Endpoint.Provider,
		SupportedParameters: []string{}}
	if p := e.Endpoint.Parameters; p != nil {
		out.SupportedParameters = append(out.SupportedParameters, *p...)
	}
	if !e.Known {
		return out
	}
	h := e.Health
	out.Status = breakerStatus[h.Breaker]
	if h.Attempts > 0 {
		up := 100 * (1 - h.ErrorRate)
		out.UptimeLast30m = &up
	}
	if f := h.Figures; f.LatencyKnown { // seconds to the first token or byte, in milliseconds as the reference's
		out.LatencyLast30m = &percentiles{f.Latency.P50 * 1000, f.Latency.P75 * 1000, f.Latency.P90 * 1000, f.Latency.P99 * 1000}
	}
	if f := h.Figures; f.ThroughputKnown {
		out.ThroughputLast30m = &percentiles{f.Throughput.P50, f.Throughput.P75, f.Throughput.P90, f.Throughput.P99}
	}
	return out
}

// endpoints answers GET /models/{author}/{slug}/endpoints.
func (h *ModelsHandler) endpoints(c *gin.Context) {
	m, eps, err := h.catalog.ModelEndpoints(c.Param("author") + "/" + c.Param("slug"))
	if err != nil {
		writeError(c, err)
		return
	}
	out := modelEndpoints{ID: m.Model.ID, Name: m.Model.ID, Created: m.Created.Unix(),
		Architecture: endpointsArch{architecture: modalities[m.Model.Modality]}, Endpoints: make([]publicEndpoint, len(eps))}
	for i, e := range eps {
		out.Endpoints[i] = toPublicEndpoint(m, e)
	}
	data(c, http.StatusOK, out)
}
