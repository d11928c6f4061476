package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// The pages of the gateway's configuration that operators change: presets and guardrails.

func (h *Handler) presets(w http.ResponseWriter, r *http.Request, s *session) {
	scope := ports.PresetScope{By: s.By, WorkspaceID: r.URL.Query().Get("workspace")}
	list, more, err := listAt(r, "offset", nil, func(p ports.Page) ([]preset.Preset, int, error) { return h.Presets.List(r.Context(), scope, p) })
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, http.StatusOK, "presets", s, map[string]any{"Presets": list, "More": more, "Workspace": r.URL.Query().Get("workspace")})
}

// preset shows a preset's versions, the newest 100 unless ?versions= pages to others, and the line difference
// between two of them (?a=&b=, by number; the last two shown by default).
func (h *Handler) preset(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	scope := ports.PresetScope{By: s.By, WorkspaceID: q.Get("workspace"), Slug: r.PathValue("slug")}
	p, current, err := h.Presets.Get(r.Context(), scope)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	versions, more, err := listAt(r, "versions", lastPage, func(p ports.Page) ([]preset.Version, int, error) {
		return h.Presets.Versions(r.Context(), scope, p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	data := map[string]any{"P": p, "Current": current, "Versions": versions, "More": more, "Workspace": q.Get("workspace")}
	if n := len(versions); n > 0 {
		a, b := versions[max(n-2, 0)].Number, versions[n-1].Number
		for _, f := range []struct {
			field string
			dst   *int
		}{{"a", &a}, {"b", &b}} {
			if v := q.Get(f.field); v != "" {
				if *f.dst, err = strconv.Atoi(v); err != nil {
					h.fail(w, r, s, domain.Invalid(f.field, "must be a version number"))
					return
				}
			}
		}
		va, err := h.Presets.Version(r.Context(), scope, a)
		if err != nil {
			h.fail(w, r, s, err)
			return
		}
		vb, err := h.Presets.Version(r.Context(), scope, b)
		if err != nil {
			h.fail(w, r, s, err)
			return
		}
		data["A"], data["B"], data["Diff"] = a, b, lineDiff(versionText(va), versionText(vb))
	}
	h.render(w, r, http.StatusOK, "preset", s, data)
}

// versionText is a version as the diff compares it: its system prompt, then its configuration, one field a line
// (JSON, keys sorted).
func versionText(v preset.Version) string {
	var b strings.Builder
	b.WriteString("system prompt:\n")
	if v.SystemPrompt != nil {
		b.WriteString(*v.SystemPrompt)
	}
	b.WriteString("\nconfiguration:\n")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the page escapes it: the diff shows "<", not "\u003c"
	enc.SetIndent("", "  ")
	if err := enc.Encode(v.Config); err != nil { // a stored configuration is JSON: it was read from JSON
		b.WriteString(err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// workspaces lists the organization's workspaces, with the form that creates one.
func (h *Handler) workspaces(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderWorkspaces(w, r, s, http.StatusOK, "")
}

func (h *Handler) renderWorkspaces(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	list, more, err := listAt(r, "offset", nil, func(p ports.Page) ([]account.Workspace, int, error) {
		return h.Workspaces.ListWorkspaces(r.Context(), p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, status, "workspaces", s, map[string]any{"Workspaces": list, "More": more, "Error": msg})
}

func (h *Handler) createWorkspace(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := h.Workspaces.CreateWorkspace(r.Context(), r.PostForm.Get("name"), r.PostForm.Get("slug")); err != nil {
		h.formError(w, r, s, err, func(status int, msg string) { h.renderWorkspaces(w, r, s, status, msg) })
		return
	}
	http.Redirect(w, r, "/console/workspaces", http.StatusSeeOther)
}

// workspace is one workspace's page: rename or delete it, its budgets and its members.
func (h *Handler) workspace(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderWorkspace(w, r, s, http.StatusOK, "")
}

func (h *Handler) renderWorkspace(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	ctx, ref := r.Context(), r.PathValue("id")
	ws, err := h.Workspaces.Workspace(ctx, ref)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	budgets, err := h.Workspaces.WorkspaceBudgets(ctx, ws.ID)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	members, more, err := listAt(r, "members", nil, func(p ports.Page) ([]account.WorkspaceMembership, int, error) {
		return h.Workspaces.WorkspaceMembers(ctx, ws.ID, p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, status, "workspace", s, map[string]any{"W": ws, "Budgets": budgets, "Members": members, "More": more,
		"Intervals": resets[1:], "Error": msg})
}

// updateWorkspace applies one of the workspace page's forms: action "rename", "delete", "set_budget",
// "delete_budget", "add_members" or "remove_members". A refusal (a workspace that still holds keys cannot be
// deleted: 409) is shown on the page with its status.
func (h *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request, s *session) {
	f, ref, ctx := r.PostForm, r.PathValue("id"), r.Context()
	back := "/console/workspaces/" + url.PathEscape(ref)
	var err error
	switch f.Get("action") {
	case "rename":
		name := f.Get("name")
		_, err = h.Workspaces.UpdateWorkspace(ctx, ref, account.WorkspaceChange{Name: &name})
	case "delete":
		if err = h.Workspaces.DeleteWorkspace(ctx, ref); err == nil {
			back = "/console/workspaces"
		}
	case "set_budget":
		var limit *domain.Micros
		if limit, err = usdField(f, "limit"); err == nil && limit == nil {
			err = domain.Invalid("limit", "is required: an amount in dollars, such as 12.50")
		}
		if err == nil {
			_, err = h.Workspaces.SetWorkspaceBudget(ctx, ref, f.Get("interval"), *limit, f.Get("include_byok") == "on")
		}
	case "delete_budget":
		err = h.Workspaces.DeleteWorkspaceBudget(ctx, ref, f.Get("interval"))
	case "add_members":
		_, err = h.Workspaces.AddWorkspaceMembers(ctx, ref, lines(f, "members"))
	case "remove_members":
		_, err = h.Workspaces.RemoveWorkspaceMembers(ctx, ref, f["member"])
	default:
		err = domain.Invalid("action", "must be rename, delete, set_budget, delete_budget, add_members or remove_members")
	}
	if err != nil {
		h.formError(w, r, s, err, func(status int, msg string) { h.renderWorkspace(w, r, s, status, msg) })
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func (h *Handler) guardrails(w http.ResponseWriter, r *http.Request, s *session) {
	list, more, err := listAt(r, "offset", nil, func(p ports.Page) ([]guardrail.Guardrail, int, error) {
		return h.Guardrails.List(r.Context(), "", p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, http.StatusOK, "guardrails", s, map[string]any{"Guardrails": list, "More": more})
}

func (h *Handler) guardrail(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderGuardrail(w, r, s, http.StatusOK, "")
}

func (h *Handler) renderGuardrail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	id := r.PathValue("id")
	g, err := h.Guardrails.Get(r.Context(), id)
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	keys, moreKeys, err := listAt(r, "keys", nil, func(p ports.Page) ([]ports.KeyAssignment, int, error) {
		return h.Guardrails.KeyAssignments(r.Context(), id, p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	members, moreMembers, err := listAt(r, "members", nil, func(p ports.Page) ([]ports.MemberAssignment, int, error) {
		return h.Guardrails.MemberAssignments(r.Context(), id, p)
	})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	all, err := h.Keys.ListKeys(r.Context(), ports.KeyFilter{})
	if err != nil {
		h.fail(w, r, s, err)
		return
	}
	h.render(w, r, status, "guardrail", s, map[string]any{"G": g, "KeyAssignments": keys, "MemberAssignments": members,
		"MoreKeys": moreKeys, "MoreMembers": moreMembers,
		"Keys": all, "Resets": resets, "Error": msg})
}

// updateGuardrail applies one of the guardrail page's forms: action "edit" (name, description, budget, allowed
// models and providers), or assigning or unassigning keys (by hash) and members (by id).
func (h *Handler) updateGuardrail(w http.ResponseWriter, r *http.Request, s *session) {
	f, id, ctx := r.PostForm, r.PathValue("id"), r.Context()
	var err error
	switch f.Get("action") {
	case "edit":
		var limit *domain.Micros
		var reset domain.Interval
		if limit, err = usdField(f, "limit"); err == nil {
			reset, err = resetField(f)
		}
		if err == nil {
			_, err = h.Guardrails.Update(ctx, id, func(sp *guardrail.Spec) {
				sp.Name, sp.LimitUSD, sp.ResetInterval = f.Get("name"), limit, reset
				sp.Description = nil
				if d := strings.TrimSpace(f.Get("description")); d != "" {
					sp.Description = &d
				}
				sp.AllowedModels, sp.AllowedProviders = lines(f, "allowed_models"), lines(f, "allowed_providers")
			})
		}
	case "assign_keys":
		_, err = h.Guardrails.AssignKeys(ctx, s.By, id, f["key"])
	case "unassign_keys":
		_, err = h.Guardrails.UnassignKeys(ctx, id, f["key"])
	case "assign_members":
		_, err = h.Guardrails.AssignMembers(ctx, s.By, id, lines(f, "members"))
	case "unassign_members":
		_, err = h.Guardrails.UnassignMembers(ctx, id, f["member"])
	default:
		err = domain.Invalid("action", "must be edit, assign_keys, unassign_keys, assign_members or unassign_members")
	}
	if err != nil {
		h.formError(w, r, s, err, func(status int, msg string) { h.renderGuardrail(w, r, s, status, msg) })
		return
	}
	http.Redirect(w, r, "/console/guardrails/"+url.PathEscape(id), http.StatusSeeOther)
}

// lines reads a text field of one entry a line (or separated by commas), without empty entries; nil when empty.
func lines(f url.Values, field string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(f.Get(field), func(r rune) bool { return r == '\n' || r == ',' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
