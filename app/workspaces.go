package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// The workspace use cases: a workspace, its members and its budgets, for management keys. A workspace is named
// by its id or its slug.

func (a *Accounts) Workspace(ctx context.Context, ref string) (account.Workspace, error) {
	return a.dir.WorkspaceByRef(ctx, ref)
}

func (a *Accounts) UpdateWorkspace(ctx context.Context, ref string, change account.WorkspaceChange) (account.Workspace, error) {
	now := a.env.Now()
	return a.dir.UpdateWorkspace(ctx, ref, func(w *account.Workspace) error { return change.Apply(w, now) })
}

// DeleteWorkspace refuses the default workspace, and any workspace that still has keys, presets or guardrails
// (account.ErrWorkspaceInUse): the reference deletes a workspace with its keys, which here would orphan the
// records, presets and guardrails that name it, so the operator deletes or disables those first, knowingly.
func (a *Accounts) DeleteWorkspace(ctx context.Context, ref string) error {
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	if err != nil {
		return err
	}
	if w.Slug == account.DefaultWorkspaceSlug {
		return account.ErrDefaultWorkspace
	}
	if err := a.dir.DeleteWorkspace(ctx, w.ID); err != nil {
		return err
	}
	a.workspaceChanged(ctx, w.ID)
	return nil
}

func (a *Accounts) WorkspaceMembers(ctx context.Context, ref string, p ports.Page) ([]account.WorkspaceMembership, int, error) {
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	return a.dir.WorkspaceMembers(ctx, w.ID, p)
}

// AddWorkspaceMembers adds organization members to the workspace (as members; an organization admin as an
// admin), and returns the memberships it added: those already there are left as they are. Every id must name
// an organization member.
func (a *Accounts) AddWorkspaceMembers(ctx context.Context, ref string, userIDs []string) ([]account.WorkspaceMembership, error) {
	w, ids, err := a.memberIDs(ctx, ref, userIDs)
	if err != nil {
		return nil, err
	}
	unknown, err := a.members.UnknownMembers(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		return nil, domain.Invalid("user_ids", "not organization members: "+strings.Join(unknown, ", "))
	}
	admins, err := a.admins(ctx)
	if err != nil {
		return nil, err
	}
	now := a.env.Now()
	ms := make([]account.WorkspaceMembership, len(ids))
	for i, id := range ids {
		role := account.WorkspaceMember
		if admins[id] {
			role = account.WorkspaceAdmin
		}
		ms[i] = account.WorkspaceMembership{WorkspaceID: w.ID, UserID: id, Role: role, CreatedAt: now}
	}
	return a.dir.AddWorkspaceMembers(ctx, ms)
}

// admins are the organization's admins, by id.
func (a *Accounts) admins(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	for p := (ports.Page{Limit: 1000}); ; p.Offset += p.Limit {
		ms, total, err := a.members.ListMembers(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("list members: %w", err)
		}
		for _, m := range ms {
			if m.Role == account.RoleAdmin {
				out[m.ID] = true
			}
		}
		if p.Offset+len(ms) >= total || len(ms) == 0 {
			return out, nil
		}
	}
}

// RemoveWorkspaceMembers returns how many of the members were in the workspace.
func (a *Accounts) RemoveWorkspaceMembers(ctx context.Context, ref string, userIDs []string) (int, error) {
	w, ids, err := a.memberIDs(ctx, ref, userIDs)
	if err != nil {
		return 0, err
	}
	return a.dir.RemoveWorkspaceMembers(ctx, w.ID, ids)
}

// memberIDs reads the workspace and checks a list of member ids: at least one, each once.
func (a *Accounts) memberIDs(ctx context.Context, ref string, userIDs []string) (account.Workspace, []string, error) {
	if len(userIDs) == 0 {
		return account.Workspace{}, nil, domain.Invalid("user_ids", "must name at least one member")
	}
	seen := map[string]bool{}
	var ids []string
	for _, id := range userIDs {
		if id == "" {
			return account.Workspace{}, nil, domain.Invalid("user_ids", "must not hold an empty id")
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	return w, ids, err
}

func (a *Accounts) WorkspaceBudgets(ctx context.Context, ref string) ([]account.Budget, error) {
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	return a.budgets.WorkspaceBudgets(ctx, w.ID)
}

func (a *Accounts) WorkspaceBudget(ctx context.Context, ref, interval string) (account.Budget, error) {
	i, err := parseBudgetInterval(interval)
	if err != nil {
		return account.Budget{}, err
	}
	all, err := a.WorkspaceBudgets(ctx, ref)
	if err != nil {
		return account.Budget{}, err
	}
	for _, b := range all {
		if b.Interval == i {
			return b, nil
		}
	}
	return account.Budget{}, account.ErrNoBudget
}

func parseBudgetInterval(s string) (domain.Interval, error) {
	i, err := domain.ParseInterval(s)
	if err != nil {
		return "", domain.Invalid("interval", err.Error())
	}
	return i, nil
}

// SetWorkspaceBudget creates or changes the workspace's budget for the interval; every replica reads the
// workspace's budgets again at once.
func (a *Accounts) SetWorkspaceBudget(ctx context.Context, ref, interval string, limit domain.Micros, includeBYOK bool) (account.Budget, error) {
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	if err != nil {
		return account.Budget{}, err
	}
	b, err := account.NewBudget(a.env.NewID(), w.ID, interval, limit, includeBYOK, a.env.Now())
	if err != nil {
		return account.Budget{}, err
	}
	if b, err = a.budgets.SetWorkspaceBudget(ctx, b); err != nil {
		return account.Budget{}, err
	}
	a.workspaceChanged(ctx, w.ID)
	return b, nil
}

func (a *Accounts) DeleteWorkspaceBudget(ctx context.Context, ref, interval string) error {
	i, err := parseBudgetInterval(interval)
	if err != nil {
		return err
	}
	w, err := a.dir.WorkspaceByRef(ctx, ref)
	if err != nil {
		return err
	}
	if err := a.budgets.DeleteWorkspaceBudget(ctx, w.ID, i); err != nil {
		return err
	}
	a.workspaceChanged(ctx, w.ID)
	return nil
}

// ActiveBudgets are the workspace's budgets as inference admission reads them: cached, and dropped by every
// replica when they change.
func (a *Accounts) ActiveBudgets(ctx context.Context, workspaceID string) ([]account.Budget, error) {
	return a.budgetCache.get(ctx, workspaceID)
}

// workspaceChanged runs after a change to a workspace's budgets is committed, as keyChanged does for a key.
func (a *Accounts) workspaceChanged(ctx context.Context, id string) {
	a.budgetCache.forget(id)
	a.changes.Notify(ctx, ports.Change{Kind: ports.WorkspaceChanged, ID: id})
}
