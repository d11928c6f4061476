package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// ActivityHandler serves GET /activity (management keys): usage by day and endpoint, from the activity
// aggregates.
type ActivityHandler struct{ activity ports.ActivityService }

func NewActivityHandler(a ports.ActivityService) *ActivityHandler {
	return &ActivityHandler{activity: a}
}

// activityItem is the reference's ActivityItem. workspace_id is there with group_by=workspace, and api_key_hash
// (ours) with group_by=key.
type activityItem struct {
	Date               string  `json:"date"`
	Model              string  `json:"model"`
	ModelPermaslug     string  `json:"model_permaslug"`
	EndpointID         string  `json:"endpoint_id"`
	ProviderName       string  `json:"provider_name"`
	Usage              usd     `json:"usage"`
	BYOKUsageInference usd     `json:"byok_usage_inference"`
	Requests           int64   `json:"requests"`
	PromptTokens       int64   `json:"prompt_tokens"`
	CompletionTokens   int64   `json:"completion_tokens"`
	ReasoningTokens    int64   `json:"reasoning_tokens"`
	WorkspaceID        *string `json:"workspace_id,omitempty"`
	APIKeyHash         *string `json:"api_key_hash,omitempty"`
}

// activityGroups are the group_by values: the reference's workspace, and key (ours).
var activityGroups = map[string]ports.ActivityGroup{"": 0, "workspace": ports.ByWorkspace, "key": ports.ByKey}

func (h *ActivityHandler) get(c *gin.Context) {
	extra, ok := activityGroups[c.Query("group_by")]
	if !ok {
		writeError(c, domain.Invalid("group_by", "must be workspace or key"))
		return
	}
	q := ports.ActivityQuery{ActivityFilter: ports.ActivityFilter{WorkspaceID: c.Query("workspace_id"),
		UserID: c.Query("user_id"), GroupBy: ports.ByDay | ports.ByModel | ports.ByProvider | ports.ByEndpoint | extra}}
	var err error
	if q.KeyHash, err = keyHashQuery(c, "api_key_hash"); err != nil {
		writeError(c, err)
		return
	}
	if raw := c.Query("date"); raw != "" {
		if q.Date, err = time.Parse(time.DateOnly, raw); err != nil {
			writeError(c, domain.Invalid("date", "must be a UTC day, YYYY-MM-DD"))
			return
		}
	}
	rows, err := h.activity.Activity(c.Request.Context(), principal(c), q)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]activityItem, len(rows))
	for i, r := range rows {
		out[i] = toActivityItem(r, extra)
	}
	data(c, http.StatusOK, out)
}

func toActivityItem(r generation.Activity, extra ports.ActivityGroup) activityItem {
	it := activityItem{Date: r.Day.Format(time.DateOnly), Model: r.Model, ModelPermaslug: r.Model, EndpointID: r.EndpointID,
		ProviderName: r.ProviderName, Usage: usd(r.Cost), BYOKUsageInference: usd(r.BYOKCost), Requests: r.Requests,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, ReasoningTokens: r.ReasoningTokens}
	switch extra {
	case ports.ByWorkspace:
		it.WorkspaceID = &r.WorkspaceID
	case ports.ByKey:
		it.APIKeyHash = &r.KeyHash
	}
	return it
}

// keyHashQuery reads an optional query parameter that names a key by its hash: a malformed one is a 400 naming
// the parameter.
func keyHashQuery(c *gin.Context, name string) (string, error) {
	v := c.Query(name)
	if v != "" && !isKeyHash(v) {
		return "", domain.Invalid(name, "must be a key's hash: 64 lowercase hexadecimal digits")
	}
	return v, nil
}
