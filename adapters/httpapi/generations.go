package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// GenerationsHandler serves GET /generation, GET /generation/content, GET /generations and POST
// /generation/feedback.
type GenerationsHandler struct {
	gens     ports.GenerationService
	lister   ports.GenerationLister
	feedback ports.FeedbackService
}

func NewGenerationsHandler(g ports.GenerationService, list ports.GenerationLister, feedback ports.FeedbackService) *GenerationsHandler {
	return &GenerationsHandler{gens: g, lister: list, feedback: feedback}
}

// millis renders a duration as a JSON number of milliseconds, exact to the microsecond.
type millis time.Duration

func (m millis) MarshalJSON() ([]byte, error) {
	us := time.Duration(m).Microseconds()
	s := strconv.FormatInt(us/1000, 10)
	if frac := us % 1000; frac != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(1000+frac, 10)[1:], "0")
	}
	return []byte(s), nil
}

// generationResp is the spec's generation record plus every key the reference requires, null or not.
type generationResp struct {
	ID                           string             `json:"id"`
	RequestID                    string             `json:"request_id"`
	UpstreamID                   string             `json:"upstream_id"`
	APIType                      string             `json:"api_type"`
	AppID                        int64              `json:"app_id"`
	CacheDiscount                *usd               `json:"cache_discount"`
	Cancelled                    bool               `json:"cancelled"`
	CreatedAt                    string             `json:"created_at"`
	ExternalUser                 string             `json:"external_user"`
	FinishReason                 string             `json:"finish_reason"`
	NativeFinishReason           string             `json:"native_finish_reason"`
	GenerationTime               millis             `json:"generation_time"`
	Latency                      millis             `json:"latency"`
	ModerationLatency            millis             `json:"moderation_latency"`
	HTTPReferer                  string             `json:"http_referer"`
	Origin                       string             `json:"origin"`
	UserAgent                    string             `json:"user_agent"`
	IsBYOK                       bool               `json:"is_byok"`
	Model                        string             `json:"model"`
	ProviderName                 string             `json:"provider_name"`
	ProviderResponses            []providerResponse `json:"provider_responses"`
	Router                       string             `json:"router"`
	SessionID                    *string            `json:"session_id"`
	Streamed                     bool               `json:"streamed"`
	TokensPrompt                 int64              `json:"tokens_prompt"`
	TokensCompletion             int64              `json:"tokens_completion"`
	NativeTokensPrompt           int64              `json:"native_tokens_prompt"`
	NativeTokensCompletion       int64              `json:"native_tokens_completion"`
	NativeTokensCompletionImages int64              `json:"native_tokens_completion_images"`
	NativeTokensReasoning        int64              `json:"native_tokens_reasoning"`
	NativeTokensCached           int64              `json:"native_tokens_cached"`
	NumInputAudioPrompt          int64              `json:"num_input_audio_prompt"`
	NumMediaPrompt               int64              `json:"num_media_prompt"`
	NumMediaCompletion           int64              `json:"num_media_completion"`
	NumSearchResults             int64              `json:"num_search_results"`
	NumFetches                   int64              `json:"num_fetches"`
	TotalCost                    usd                `json:"total_cost"`
	UpstreamInferenceCost        usd                `json:"upstream_inference_cost"`
	Usage                        usd                `json:"usage"`
	DataRegion                   string             `json:"data_region"`
	PresetID                     *string            `json:"preset_id"`
	ServiceTier                  *string            `json:"service_tier"`
	WebSearchEngine              *string            `json:"web_search_engine"`
	WorkspaceID                  string             `json:"workspace_id"`
	ResponseCacheSourceID        *string            `json:"response_cache_source_id"`
	GuardrailFlags               []string           `json:"guardrail_flags"`
}

type providerResponse struct {
	ID             string `json:"id,omitempty"`
	EndpointID     string `json:"endpoint_id,omitempty"`
	ModelPermaslug string `json:"model_permaslug,omitempty"`
	ProviderName   string `json:"provider_name"`
	Latency        millis `json:"latency"`
	IsBYOK         bool   `json:"is_byok"`
	Status         *int   `json:"status"`
}

func toGeneration(r generation.Record) generationResp {
	responses := make([]providerResponse, len(r.Attempts))
	for i, a := range r.Attempts {
		responses[i] = providerResponse{ID: a.UpstreamID, EndpointID: a.EndpointID, ModelPermaslug: a.UpstreamModel,
			ProviderName: a.ProviderName, Latency: millis(a.Latency), IsBYOK: a.BYOK, Status: statusPtr(a.Status)}
	}
	c := r.Counts
	router := ""
	if r.Router != nil {
		router = *r.Router
	}
	flags := r.Flags
	if flags == nil {
		flags = []string{}
	}
	return generationResp{
		ID: r.ID, RequestID: r.RequestID, UpstreamID: r.UpstreamID, APIType: string(r.APIType),
		CacheDiscount: usdPtr(r.CacheDiscount), Cancelled: r.Cancelled, CreatedAt: timestamp(r.CreatedAt),
		ExternalUser: r.ExternalUser, FinishReason: r.FinishReason, NativeFinishReason: r.NativeFinishReason,
		GenerationTime: millis(r.GenerationTime), Latency: millis(r.Latency), ModerationLatency: millis(r.ModerationLatency),
		HTTPReferer: r.Referer, Origin: r.Origin, UserAgent: r.UserAgent, IsBYOK: r.BYOK, Model: r.Model,
		ProviderName: r.ProviderName, ProviderResponses: responses, Router: router, SessionID: r.SessionID,
		Streamed: r.Streamed, TokensPrompt: c.TokensPrompt, TokensCompletion: c.TokensCompletion,
		NativeTokensPrompt: c.NativeTokensPrompt, NativeTokensCompletion: c.NativeTokensCompletion,
		NativeTokensCompletionImages: c.NativeTokensCompletionImages, NativeTokensReasoning: c.NativeTokensReasoning,
		NativeTokensCached: c.NativeTokensCached, NumInputAudioPrompt: c.NumInputAudioPrompt,
		NumMediaPrompt: c.NumMediaPrompt, NumMediaCompletion: c.NumMediaCompletion, NumSearchResults: c.NumSearchResults,
		NumFetches: c.NumFetches, TotalCost: usd(r.TotalCost), UpstreamInferenceCost: usd(r.UpstreamCost),
		Usage: usd(r.TotalCost), DataRegion: r.DataRegion, PresetID: r.PresetID, ServiceTier: r.ServiceTier,
		WebSearchEngine: r.WebSearchEngine, WorkspaceID: r.WorkspaceID, GuardrailFlags: flags,
	}
}

func statusPtr(s int) *int {
	if s == 0 {
		return nil
	}
	return &s
}

func (h *GenerationsHandler) get(c *gin.Context) {
	rec, err := h.gens.Generation(c.Request.Context(), principal(c), c.Query("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toGeneration(rec))
}

type contentResp struct {
	Input  any           `json:"input"`
	Output outputResp    `json:"output"`
	Error  *contentError `json:"error"`
}

type messageResp struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type outputResp struct {
	Completion string  `json:"completion"`
	Reasoning  *string `json:"reasoning"`
}

type contentError struct {
	Message        string           `json:"message"`
	Status         int              `json:"status"`
	ProviderName   *string          `json:"provider_name"`
	Raw            *string          `json:"raw"`
	PreviousErrors []contentAttempt `json:"previous_errors"`
}

type contentAttempt struct {
	Code         int     `json:"code"`
	Message      string  `json:"message"`
	ProviderName *string `json:"provider_name"`
	Raw          *string `json:"raw"`
}

func toContent(c generation.Content) contentResp {
	var in any
	if c.Input.Prompt != nil {
		in = gin.H{"prompt": *c.Input.Prompt}
	} else {
		msgs := make([]messageResp, len(c.Input.Messages))
		for i, m := range c.Input.Messages {
			msgs[i] = messageResp(m)
		}
		in = gin.H{"messages": msgs}
	}
	out := contentResp{Input: in, Output: outputResp(c.Output)}
	if f := c.Failure; f != nil {
		prev := make([]contentAttempt, len(f.Previous))
		for i, a := range f.Previous {
			code := a.Status
			if code == 0 {
				code = http.StatusBadGateway // no response came: a gateway-side failure of that attempt
			}
			prev[i] = contentAttempt{Code: code, Message: a.Error, ProviderName: nonEmptyPtr(a.ProviderName), Raw: nonEmptyPtr(a.Raw)}
		}
		out.Error = &contentError{Message: f.Message, Status: f.Status, ProviderName: f.ProviderName, Raw: f.Raw,
			PreviousErrors: prev}
	}
	return out
}

func nonEmptyPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h *GenerationsHandler) content(c *gin.Context) {
	content, err := h.gens.GenerationContent(c.Request.Context(), principal(c), c.Query("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toContent(content))
}

// listFilter reads the list's filters from the query; a malformed one is a 400 naming it.
func listFilter(c *gin.Context) (ports.GenerationFilter, error) {
	f := ports.GenerationFilter{WorkspaceID: c.Query("workspace_id"), Model: c.Query("model"),
		ProviderName: c.Query("provider"), SessionID: c.Query("session_id"), UserID: c.Query("user_id"),
		ExternalUser: c.Query("user")}
	var err error
	for _, t := range [...]struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if raw := c.Query(t.name); raw != "" {
			if *t.dst, err = time.Parse(time.RFC3339Nano, raw); err != nil {
				return f, domain.Invalid(t.name, "must be a time in RFC 3339, such as 2026-01-02T15:04:05Z")
			}
		}
	}
	if f.KeyHash, err = keyHashQuery(c, "api_key_hash"); err != nil {
		return f, err
	}
	if f.Status, err = queryInt(c, "status", 0, 100, 599); err != nil {
		return f, err
	}
	if f.Limit, err = queryInt(c, "limit", generation.DefaultPage, 1, generation.MaxPage); err != nil {
		return f, err
	}
	if raw := c.Query("cursor"); raw != "" {
		cur, err := generation.ParseCursor(raw)
		if err != nil {
			return f, err
		}
		f.After = &cur
	}
	return f, nil
}

// list serves GET /generations (ours): a page of records, newest first, and the cursor of the next page.
func (h *GenerationsHandler) list(c *gin.Context) {
	f, err := listFilter(c)
	if err != nil {
		writeError(c, err)
		return
	}
	page, err := h.lister.ListGenerations(c.Request.Context(), principal(c), f)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]generationResp, len(page.Records))
	for i, r := range page.Records {
		out[i] = toGeneration(r)
	}
	var next *string
	if page.Next != nil {
		s := page.Next.String()
		next = &s
	}
	c.JSON(http.StatusOK, gin.H{"data": out, "next_cursor": next})
}

// submitFeedback serves POST /generation/feedback: {data: {success: true}}.
func (h *GenerationsHandler) submitFeedback(c *gin.Context) {
	var req struct {
		GenerationID *string `json:"generation_id"`
		Category     *string `json:"category"`
		Comment      *string `json:"comment"`
	}
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.Category == nil {
		writeError(c, domain.Invalid("category", "is required"))
		return
	}
	if err := h.feedback.SubmitFeedback(c.Request.Context(), principal(c), deref(req.GenerationID), *req.Category, req.Comment); err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, gin.H{"success": true})
}
