package account

import (
	"fmt"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

var (
	// ErrNoWorkspace answers a route that names a workspace in its path that does not exist (404); a workspace_id
	// in a body or a query that names none is ErrWorkspaceNotFound (400).
	ErrNoWorkspace = domain.E(domain.KindNotFound, "workspace_not_found", "workspace not found")
	// ErrWorkspaceInUse refuses to delete a workspace that still has keys, presets or guardrails: they would be
	// left without one, and a key's calls would be booked to a workspace that no longer exists.
	ErrWorkspaceInUse = domain.E(domain.KindConflict, "workspace_in_use",
		"the workspace still has API keys, presets or guardrails: delete them (or move the keys' calls elsewhere) first")
	ErrDefaultWorkspace = domain.E(domain.KindConflict, "default_workspace",
		"the default workspace cannot be deleted: keys created without a workspace belong to it")
	ErrNoBudget = domain.E(domain.KindNotFound, "budget_not_found", "the workspace has no budget for this interval")
)

// WorkspaceChange is a partial update of a workspace: nil fields are kept.
type WorkspaceChange struct {
	Name, Slug  *string
	Description domain.Patch[string]
}

// Apply validates the change and writes it into w.
func (c WorkspaceChange) Apply(w *Workspace, now time.Time) error {
	name, slug := w.Name, w.Slug
	if c.Name != nil {
		name = *c.Name
	}
	if c.Slug != nil {
		slug = *c.Slug
		if slug == "" {
			return domain.Invalid("slug", "must not be empty")
		}
	}
	if slug != w.Slug && w.Slug == DefaultWorkspaceSlug {
		return domain.Invalid("slug", "the default workspace keeps its slug")
	}
	v, err := NewWorkspace(w.ID, name, slug, w.CreatedAt)
	if err != nil {
		return err
	}
	if d := c.Description.Value; c.Description.Set && d != nil {
		if err := domain.CheckLength("description", *d, 500); err != nil {
			return err
		}
	}
	c.Description.Apply(&w.Description)
	w.Name, w.Slug = v.Name, v.Slug
	t := now.UTC()
	w.UpdatedAt = &t
	return nil
}

// WorkspaceRole is a member's role in a workspace.
type WorkspaceRole string

const (
	WorkspaceAdmin  WorkspaceRole = "admin"
	WorkspaceMember WorkspaceRole = "member"
)

// WorkspaceMembership is an organization member's place in a workspace.
type WorkspaceMembership struct {
	WorkspaceID, UserID string
	Role                WorkspaceRole
	CreatedAt           time.Time
}

// MaxBudget bounds a budget's limit: a billion dollars, far within int64 micros however calls add up.
const MaxBudget = domain.Micros(1_000_000_000 * 1_000_000)

// Budget is a workspace's spending limit over a reset interval: the calls of every key of the workspace together
// may spend Limit in each window (see domain.Interval), counted from the workspace's activity, and with the
// calls in flight held against it as key limits are.
type Budget struct {
	ID          string
	WorkspaceID string
	Interval    domain.Interval
	Limit       domain.Micros
	// IncludeBYOK counts the cost of calls made with the caller's own provider keys too.
	IncludeBYOK bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewBudget validates a budget to set.
func NewBudget(id, workspaceID, interval string, limit domain.Micros, includeBYOK bool, now time.Time) (Budget, error) {
	i, err := domain.ParseInterval(interval)
	if err != nil {
		return Budget{}, domain.Invalid("interval", err.Error())
	}
	if limit < 0 || limit > MaxBudget {
		return Budget{}, domain.Invalid("limit_usd", fmt.Sprintf("must be from 0 to %s", MaxBudget.Decimal()))
	}
	return Budget{ID: id, WorkspaceID: workspaceID, Interval: i, Limit: limit, IncludeBYOK: includeBYOK,
		CreatedAt: now.UTC(), UpdatedAt: now.UTC()}, nil
}
