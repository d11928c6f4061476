package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
)

// GuardrailsHandler serves /guardrails (management keys).
type GuardrailsHandler struct{ g ports.GuardrailService }

func NewGuardrailsHandler(g ports.GuardrailService) *GuardrailsHandler {
	return &GuardrailsHandler{g: g}
}

type filterIO struct {
	Pattern string  `json:"pattern"`
	Action  string  `json:"action"`
	Label   *string `json:"label"`
}

type builtinIO struct {
	Slug      string  `json:"slug"`
	Action    string  `json:"action"`
	Label     *string `json:"label,omitempty"` // input: deprecated and ignored; output: system-assigned
	ScanScope *string `json:"scan_scope,omitempty"`
}

// guardrailResp is the reference's Guardrail; optional fields are present, null when not set.
type guardrailResp struct {
	ID                    string      `json:"id"`
	Name                  string      `json:"name"`
	Description           *string     `json:"description"`
	WorkspaceID           *string     `json:"workspace_id"`
	LimitUSD              *usd        `json:"limit_usd"`
	ResetInterval         *string     `json:"reset_interval"`
	AllowedModels         []string    `json:"allowed_models"`
	IgnoredModels         []string    `json:"ignored_models"`
	AllowedProviders      []string    `json:"allowed_providers"`
	IgnoredProviders      []string    `json:"ignored_providers"`
	AllowedDataRegions    []string    `json:"allowed_data_regions"`
	ContentFilters        []filterIO  `json:"content_filters"`
	ContentFilterBuiltins []builtinIO `json:"content_filter_builtins"`
	IncludeBYOKInBudgets  bool        `json:"include_byok_in_budgets"`
	CreatedAt             string      `json:"created_at"`
	UpdatedAt             *string     `json:"updated_at"`
}

func toGuardrail(g guardrail.Guardrail) guardrailResp {
	out := guardrailResp{ID: g.ID, Name: g.Name, Description: g.Description, WorkspaceID: &g.WorkspaceID,
		LimitUSD: usdPtr(g.LimitUSD), ResetInterval: limitReset(g.ResetInterval), AllowedModels: g.AllowedModels,
		IgnoredModels: g.IgnoredModels, AllowedProviders: g.AllowedProviders, IgnoredProviders: g.IgnoredProviders,
		AllowedDataRegions: g.AllowedDataRegions, IncludeBYOKInBudgets: g.IncludeBYOKInBudgets,
		CreatedAt: timestamp(g.CreatedAt), UpdatedAt: timestampPtr(g.UpdatedAt)}
	if g.ContentFilters != nil {
		out.ContentFilters = make([]filterIO, len(g.ContentFilters))
		for i, f := range g.ContentFilters {
			out.ContentFilters[i] = filterIO{Pattern: f.Pattern, Action: string(f.Action), Label: f.Label}
		}
	}
	if g.Builtins != nil {
		out.ContentFilterBuiltins = make([]builtinIO, len(g.Builtins))
		for i, b := range g.Builtins {
			label := b.Label()
			out.ContentFilterBuiltins[i] = builtinIO{Slug: b.Slug, Action: string(b.Action), Label: &label, ScanScope: b.ScanScope}
		}
	}
	return out
}

// guardrailReq is CreateGuardrail and UpdateGuardrail: every field tells absent (keep) from null (clear).
type guardrailReq struct {
	Name                  opt[string]      `json:"name"`
	Description           opt[string]      `json:"description"`
	LimitUSD              opt[usd]         `json:"limit_usd"`
	ResetInterval         opt[string]      `json:"reset_interval"`
	AllowedModels         opt[[]string]    `json:"allowed_models"`
	IgnoredModels         opt[[]string]    `json:"ignored_models"`
	AllowedProviders      opt[[]string]    `json:"allowed_providers"`
	IgnoredProviders      opt[[]string]    `json:"ignored_providers"`
	AllowedDataRegions    opt[[]string]    `json:"allowed_data_regions"`
	ContentFilters        opt[[]filterIO]  `json:"content_filters"`
	ContentFilterBuiltins opt[[]builtinIO] `json:"content_filter_builtins"`
	IncludeBYOKInBudgets  opt[bool]        `json:"include_byok_in_budgets"`
	WorkspaceID           *string          `json:"workspace_id"`
}

// patch checks what only the wire can get wrong and returns the change to apply to a guardrail's fields.
func (r guardrailReq) patch() (func(*guardrail.Spec), error) {
	if _, err := r.Name.keep("name"); err != nil {
		return nil, err
	}
	if _, err := r.IncludeBYOKInBudgets.keep("include_byok_in_budgets"); err != nil {
		return nil, err
	}
	var interval *domain.Interval
	if r.ResetInterval.val != nil {
		i, err := parseInterval("reset_interval", r.ResetInterval.val)
		if err != nil {
			return nil, err
		}
		interval = &i
	}
	return func(s *guardrail.Spec) {
		if r.Name.val != nil {
			s.Name = *r.Name.val
		}
		r.Description.patch().Apply(&s.Description)
		if r.LimitUSD.set {
			s.LimitUSD = (*domain.Micros)(r.LimitUSD.val)
		}
		if r.ResetInterval.set {
			s.ResetInterval = domain.IntervalNone
			if interval != nil {
				s.ResetInterval = *interval
			}
		}
		for _, l := range []struct {
			src opt[[]string]
			dst *[]string
		}{{r.AllowedModels, &s.AllowedModels}, {r.IgnoredModels, &s.IgnoredModels}, {r.AllowedProviders, &s.AllowedProviders},
			{r.IgnoredProviders, &s.IgnoredProviders}, {r.AllowedDataRegions, &s.AllowedDataRegions}} {
			if l.src.set {
				*l.dst = derefList(l.src.val)
			}
		}
		if r.ContentFilters.set {
			s.ContentFilters = nil
			if r.ContentFilters.val != nil {
				s.ContentFilters = make([]guardrail.ContentFilter, len(*r.ContentFilters.val))
				for i, f := range *r.ContentFilters.val {
					s.ContentFilters[i] = guardrail.ContentFilter{Pattern: f.Pattern, Action: guardrail.Action(f.Action), Label: f.Label}
				}
			}
		}
		if r.ContentFilterBuiltins.set {
			s.Builtins = nil
			if r.ContentFilterBuiltins.val != nil {
				s.Builtins = make([]guardrail.Builtin, len(*r.ContentFilterBuiltins.val))
				for i, b := range *r.ContentFilterBuiltins.val {
					s.Builtins[i] = guardrail.Builtin{Slug: b.Slug, Action: guardrail.Action(b.Action), ScanScope: b.ScanScope}
				}
			}
		}
		if r.IncludeBYOKInBudgets.val != nil {
			s.IncludeBYOKInBudgets = *r.IncludeBYOKInBudgets.val
		}
	}, nil
}

func derefList(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

func (h *GuardrailsHandler) create(c *gin.Context) {
	var req guardrailReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.Name.val == nil {
		writeError(c, domain.Invalid("name", "is required"))
		return
	}
	patch, err := req.patch()
	if err != nil {
		writeError(c, err)
		return
	}
	var spec guardrail.Spec
	patch(&spec)
	ws := ""
	if req.WorkspaceID != nil {
		ws = *req.WorkspaceID
	}
	g, err := h.g.Create(c.Request.Context(), principal(c), ws, spec)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusCreated, toGuardrail(g))
}

func (h *GuardrailsHandler) list(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]guardrail.Guardrail, int, error) {
		return h.g.List(c.Request.Context(), c.Query("workspace_id"), p)
	}, toGuardrail)
}

func (h *GuardrailsHandler) get(c *gin.Context) {
	g, err := h.g.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toGuardrail(g))
}

func (h *GuardrailsHandler) update(c *gin.Context) {
	var req guardrailReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	patch, err := req.patch()
	if err != nil {
		writeError(c, err)
		return
	}
	g, err := h.g.Update(c.Request.Context(), c.Param("id"), patch)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toGuardrail(g))
}

func (h *GuardrailsHandler) delete(c *gin.Context) {
	if err := h.g.Delete(c.Request.Context(), c.Param("id")); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deleted": true})
}

type memberAssignmentResp struct {
	ID             string  `json:"id"`
	UserID         string  `json:"user_id"`
	OrganizationID string  `json:"organization_id"`
	GuardrailID    string  `json:"guardrail_id"`
	CreatedAt      string  `json:"created_at"`
	AssignedBy     *string `json:"assigned_by"`
}

type keyAssignmentResp struct {
	ID          string  `json:"id"`
	KeyHash     string  `json:"key_hash"`
	KeyName     string  `json:"key_name"`
	KeyLabel    string  `json:"key_label"`
	GuardrailID string  `json:"guardrail_id"`
	CreatedAt   string  `json:"created_at"`
	AssignedBy  *string `json:"assigned_by"`
}

func (h *GuardrailsHandler) memberAssignments(c *gin.Context) {
	org := principal(c).OrganizationID
	listPage(c, func(p ports.Page) ([]ports.MemberAssignment, int, error) {
		return h.g.MemberAssignments(c.Request.Context(), c.Param("id"), p)
	}, func(a ports.MemberAssignment) memberAssignmentResp {
		return memberAssignmentResp{ID: a.ID, UserID: a.UserID, OrganizationID: org, GuardrailID: a.GuardrailID,
			CreatedAt: timestamp(a.CreatedAt), AssignedBy: a.AssignedBy}
	})
}

func (h *GuardrailsHandler) keyAssignments(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]ports.KeyAssignment, int, error) {
		return h.g.KeyAssignments(c.Request.Context(), c.Param("id"), p)
	}, func(a ports.KeyAssignment) keyAssignmentResp {
		return keyAssignmentResp{ID: a.ID, KeyHash: a.KeyHash, KeyName: a.KeyName, KeyLabel: a.KeyLabel,
			GuardrailID: a.GuardrailID, CreatedAt: timestamp(a.CreatedAt), AssignedBy: a.AssignedBy}
	})
}

type bulkReq struct {
	MemberUserIDs *[]string `json:"member_user_ids"`
	KeyHashes     *[]string `json:"key_hashes"`
}

// bulk answers a bulk (un)assignment: the ids come in field, the count goes out in countKey, at the top level.
func (h *GuardrailsHandler) bulk(field, countKey string, op func(c *gin.Context, ids []string) (int, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req bulkReq
		if err := bindFields(c, &req); err != nil {
			writeError(c, err)
			return
		}
		ids := req.KeyHashes
		if field == "member_user_ids" {
			ids = req.MemberUserIDs
		}
		if ids == nil {
			writeError(c, domain.Invalid(field, "is required: an array of ids"))
			return
		}
		n, err := op(c, *ids)
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{countKey: n})
	}
}

func (h *GuardrailsHandler) assignMembers(c *gin.Context, ids []string) (int, error) {
	return h.g.AssignMembers(c.Request.Context(), principal(c), c.Param("id"), ids)
}

func (h *GuardrailsHandler) unassignMembers(c *gin.Context, ids []string) (int, error) {
	return h.g.UnassignMembers(c.Request.Context(), c.Param("id"), ids)
}

func (h *GuardrailsHandler) assignKeys(c *gin.Context, ids []string) (int, error) {
	return h.g.AssignKeys(c.Request.Context(), principal(c), c.Param("id"), ids)
}

func (h *GuardrailsHandler) unassignKeys(c *gin.Context, ids []string) (int, error) {
	return h.g.UnassignKeys(c.Request.Context(), c.Param("id"), ids)
}
