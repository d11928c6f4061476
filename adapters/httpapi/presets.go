package httpapi

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/adapters/inbound/messages"
	"github.com/switchboard-ai/switchboard/adapters/inbound/responses"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// PresetsHandler serves /presets.
type PresetsHandler struct{ presets ports.PresetService }

func NewPresetsHandler(p ports.PresetService) *PresetsHandler { return &PresetsHandler{presets: p} }

type presetResp struct {
	ID                  string  `json:"id"`
	Name                string  `json:"name"`
	Slug                string  `json:"slug"`
	Description         *string `json:"description"`
	Status              string  `json:"status"`
	StatusUpdatedAt     *string `json:"status_updated_at"`
	CreatedAt           string  `json:"created_at"`
	UpdatedAt           string  `json:"updated_at"`
	CreatorUserID       *string `json:"creator_user_id"`
	WorkspaceID         *string `json:"workspace_id"`
	DesignatedVersionID *string `json:"designated_version_id"`
}

type presetWithVersion struct {
	presetResp
	DesignatedVersion *versionResp `json:"designated_version"`
}

type versionResp struct {
	ID           string         `json:"id"`
	PresetID     string         `json:"preset_id"`
	Version      int            `json:"version"`
	Config       map[string]any `json:"config"`
	SystemPrompt *string        `json:"system_prompt"`
	CreatorID    string         `json:"creator_id"`
	CreatedAt    string         `json:"created_at"`
	UpdatedAt    string         `json:"updated_at"`
}

func toPreset(p preset.Preset) presetResp {
	return presetResp{ID: p.ID, Name: p.Name, Slug: p.Slug, Description: p.Description, Status: string(p.Status),
		StatusUpdatedAt: timestampPtr(p.StatusUpdatedAt), CreatedAt: timestamp(p.CreatedAt), UpdatedAt: timestamp(p.UpdatedAt),
		CreatorUserID: p.CreatorUserID, WorkspaceID: &p.WorkspaceID, DesignatedVersionID: p.DesignatedVersionID}
}

func toVersion(v preset.Version) versionResp {
	created := timestamp(v.CreatedAt)
	return versionResp{ID: v.ID, PresetID: v.PresetID, Version: v.Number, Config: v.Config, SystemPrompt: v.SystemPrompt,
		CreatorID: v.CreatorID, CreatedAt: created, UpdatedAt: created} // versions never change
}

func toPresetWithVersion(p preset.Preset, v *preset.Version) presetWithVersion {
	out := presetWithVersion{presetResp: toPreset(p)}
	if v != nil {
		vr := toVersion(*v)
		out.DesignatedVersion = &vr
	}
	return out
}

func scope(c *gin.Context) ports.PresetScope {
	return ports.PresetScope{By: principal(c), WorkspaceID: c.Query("workspace_id"), Slug: c.Param("slug")}
}

func (h *PresetsHandler) list(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]preset.Preset, int, error) {
		return h.presets.List(c.Request.Context(), scope(c), p)
	}, toPreset)
}

func (h *PresetsHandler) get(c *gin.Context) {
	p, v, err := h.presets.Get(c.Request.Context(), scope(c))
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toPresetWithVersion(p, v))
}

func (h *PresetsHandler) versions(c *gin.Context) {
	listPage(c, func(p ports.Page) ([]preset.Version, int, error) {
		return h.presets.Versions(c.Request.Context(), scope(c), p)
	}, toVersion)
}

func (h *PresetsHandler) version(c *gin.Context) {
	raw := c.Param("version")
	number, ok := decimal(raw, 9)
	if !ok {
		writeError(c, domain.Invalid("version", fmt.Sprintf("%q must be a version number: 1 to 9 decimal digits", raw)))
		return
	}
	v, err := h.presets.Version(c.Request.Context(), scope(c), number)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toVersion(v))
}

// createFrom answers POST /presets/{slug}/<src>: the request body's configuration becomes the next version.
func (h *PresetsHandler) createFrom(src preset.Source) gin.HandlerFunc {
	return func(c *gin.Context) {
		var body map[string]any
		if err := bindFields(c, &body); err != nil {
			writeError(c, err)
			return
		}
		if body == nil {
			writeError(c, errNoBody)
			return
		}
		p, v, err := h.presets.CreateVersion(c.Request.Context(), scope(c), ports.PresetBody{Source: src, Fields: body,
			Check: configChecks[src]})
		if err != nil {
			writeError(c, err)
			return
		}
		data(c, http.StatusOK, toPresetWithVersion(p, &v))
	}
}

// configChecks check the configuration of a preset saved from a body of each wire format, as a call would read its
// fields.
var configChecks = map[preset.Source]func(map[string]any) error{preset.ChatCompletions: chatcompletions.CheckConfig,
	preset.Messages: messages.CheckConfig, preset.Responses: responses.CheckConfig}

// updatePresetReq is UpdatePreset: null clears the description and is a 400 on the fields that cannot be cleared.
type updatePresetReq struct {
	Name              opt[string] `json:"name"`
	Description       opt[string] `json:"description"`
	Status            opt[string] `json:"status"`
	DesignatedVersion opt[int]    `json:"designated_version"`
}

func (r updatePresetReq) change() (ports.PresetVersionChange, error) {
	change := ports.PresetVersionChange{Change: preset.Change{Description: r.Description.patch()}}
	var err error
	if change.Name, err = r.Name.keep("name"); err != nil {
		return change, err
	}
	if change.DesignatedVersion, err = r.DesignatedVersion.keep("designated_version"); err != nil {
		return change, err
	}
	status, err := r.Status.keep("status")
	if err != nil {
		return change, err
	}
	if status != nil {
		st := preset.Status(*status)
		change.Status = &st
	}
	return change, nil
}

func (h *PresetsHandler) update(c *gin.Context) {
	var req updatePresetReq
	if err := bindFields(c, &req); err != nil {
		writeError(c, err)
		return
	}
	change, err := req.change()
	if err != nil {
		writeError(c, err)
		return
	}
	p, v, err := h.presets.Update(c.Request.Context(), scope(c), change)
	if err != nil {
		writeError(c, err)
		return
	}
	data(c, http.StatusOK, toPresetWithVersion(p, v))
}
