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
	return workspaceResp{ID: w.ID, Name: w.Name, Slug: w.Slug, Description: w.Description, CreatedAt: timestamp(w.CreatedAt),
		UpdatedAt: timestampPtr(w.UpdatedAt)}
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

// The routes of one workspace name it by its id or its slug (:workspace).

func (h *WorkspacesHandler) get(c *gin.Context) {
	ws, err := h.ws.Workspace(c.Request.Context(), c.Param("workspace"))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toWorkspace(ws))
}

// update takes name, slug and description; the reference's other settings (default models, logging, server
// tools) are features Switchboard does not have, and are ignored as unknown fields are.
func (h *WorkspacesHandler) update(c *gin.Context) {
	var req struct {
		Name        *string     `json:"name"`
		Slug        *string     `json:"slug"`
		Description opt[string] `json:"description"`
	}
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	ws, err := h.ws.UpdateWorkspace(c.Request.Context(), c.Param("workspace"),
		account.WorkspaceChange{Name: req.Name, Slug: req.Slug, Description: req.Description.patch()})
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toWorkspace(ws))
}

func (h *WorkspacesHandler) delete(c *gin.Context) {
	if err := h.ws.DeleteWorkspace(c.Request.Context(), c.Param("workspace")); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deleted": true})
}

// workspaceMemberResp is the reference's WorkspaceMember; its id is the membership's, workspace and member.
type workspaceMemberResp struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
	Role        string `json:"role"`
	CreatedAt   string `json:"created_at"`
}

func toWorkspaceMember(m account.WorkspaceMembership) workspaceMemberResp {
	return workspaceMemberResp{ID: m.WorkspaceID + ":" + m.UserID, WorkspaceID: m.WorkspaceID, UserID: m.UserID,
		Role: string(m.Role), CreatedAt: timestamp(m.CreatedAt)}
}

func (h *WorkspacesHandler) members(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]account.WorkspaceMembership, int, error) {
		return h.ws.WorkspaceMembers(c.Request.Context(), c.Param("workspace"), p)
	}, toWorkspaceMember)
}

type userIDsReq struct {
	UserIDs []string `json:"user_ids"`
}

func (h *WorkspacesHandler) addMembers(c *gin.Context) {
	var req userIDsReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	added, err := h.ws.AddWorkspaceMembers(c.Request.Context(), c.Param("workspace"), req.UserIDs)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]workspaceMemberResp, len(added))
	for i, m := range added {
		out[i] = toWorkspaceMember(m)
	}
	c.JSON(http.StatusOK, gin.H{"added_count": len(added), "data": out})
}

func (h *WorkspacesHandler) removeMembers(c *gin.Context) {
	var req userIDsReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	n, err := h.ws.RemoveWorkspaceMembers(c.Request.Context(), c.Param("workspace"), req.UserIDs)
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"removed_count": n})
}

// budgetResp is the reference's WorkspaceBudget.
type budgetResp struct {
	ID            string `json:"id"`
	WorkspaceID   string `json:"workspace_id"`
	LimitUSD      usd    `json:"limit_usd"`
	ResetInterval string `json:"reset_interval"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
}

func toBudget(b account.Budget) budgetResp {
	return budgetResp{ID: b.ID, WorkspaceID: b.WorkspaceID, LimitUSD: usd(b.Limit), ResetInterval: string(b.Interval),
		CreatedAt: timestamp(b.CreatedAt), UpdatedAt: timestamp(b.UpdatedAt)}
}

// oneBudget answers a budget with include_byok_in_budgets beside it, as the reference does.
func oneBudget(c *gin.Context, b account.Budget) {
	c.JSON(http.StatusOK, gin.H{"data": toBudget(b), "include_byok_in_budgets": b.IncludeBYOK})
}

func (h *WorkspacesHandler) budgets(c *gin.Context) {
	all, err := h.ws.WorkspaceBudgets(c.Request.Context(), c.Param("workspace"))
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]budgetResp, len(all))
	for i, b := range all {
		out[i] = toBudget(b)
	}
	data(c, http.StatusOK, out)
}

func (h *WorkspacesHandler) budget(c *gin.Context) {
	b, err := h.ws.WorkspaceBudget(c.Request.Context(), c.Param("workspace"), c.Param("interval"))
	if err != nil {
		writeError(c, err)
		return
	}
	oneBudget(c, b)
}

func (h *WorkspacesHandler) setBudget(c *gin.Context) {
	var req struct {
		LimitUSD    *usd  `json:"limit_usd"`
		IncludeBYOK *bool `json:"include_byok_in_budgets"`
	}
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.LimitUSD == nil {
		writeError(c, domain.Invalid("limit_usd", "is required"))
		return
	}
	b, err := h.ws.SetWorkspaceBudget(c.Request.Context(), c.Param("workspace"), c.Param("interval"),
		domain.Micros(*req.LimitUSD), req.IncludeBYOK != nil && *req.IncludeBYOK)
	if err != nil {
		writeError(c, err)
		return
	}
	oneBudget(c, b)
}

func (h *WorkspacesHandler) deleteBudget(c *gin.Context) {
	if err := h.ws.DeleteWorkspaceBudget(c.Request.Context(), c.Param("workspace"), c.Param("interval")); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deleted": true})
}
