package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// WorkspacesHandler serves /workspaces (management keys).
type WorkspacesHandler struct{ ws ports.WorkspaceService }

func NewWorkspacesHandler(ws ports.WorkspaceService) *WorkspacesHandler {
	return &WorkspacesHandler{ws: ws}
}

// workspaceResp is the reference's Workspace; settings Switchboard does not have are answered with their
// neutral values.
type workspaceResp struct {
	ID                              string   `json:"id"`
	Name                            string   `json:"name"`
	Slug                            string   `json:"slug"`
	Description                     *string  `json:"description"`
	CreatedAt                       string   `json:"created_at"`
	CreatedBy                       *string  `json:"created_by"`
	UpdatedAt                       *string  `json:"updated_at"`
	DefaultGuardrailID              string   `json:"default_guardrail_id"`
	DefaultImageModel               *string  `json:"default_image_model"`
	DefaultProviderSort             *string  `json:"default_provider_sort"`
	DefaultTextModel                *string  `json:"default_text_model"`
	IOLoggingAPIKeyIDs              []int    `json:"io_logging_api_key_ids"`
	IOLoggingSamplingRate           float64  `json:"io_logging_sampling_rate"`
	IsDataDiscountLoggingEnabled    bool     `json:"is_data_discount_logging_enabled"`
	IsObservabilityBroadcastEnabled bool     `json:"is_observability_broadcast_enabled"`
	IsObservabilityIOLoggingEnabled bool     `json:"is_observability_io_logging_enabled"`
	DisabledServerTools             []string `json:"disabled_server_tools"`
}

func toWorkspace(w account.Workspace) workspaceResp {
	return workspaceResp{ID: w.ID, Name: w.Name, Slug: w.Slug, CreatedAt: timestamp(w.CreatedAt)}
}

func (h *WorkspacesHandler) create(c *gin.Context) {
	var req struct {
		Name *string `json:"name"`
		Slug *string `json:"slug"`
	}
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.Name == nil {
		writeError(c, domain.Invalid("name", "is required"))
		return
	}
	slug := ""
	if req.Slug != nil {
		slug = *req.Slug
	}
	ws, err := h.ws.CreateWorkspace(c.Request.Context(), *req.Name, slug)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusCreated, toWorkspace(ws))
}

func (h *WorkspacesHandler) list(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]account.Workspace, int, error) {
		return h.ws.ListWorkspaces(c.Request.Context(), p)
	}, toWorkspace)
}
