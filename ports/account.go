package ports

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
)

// Directory is the organization and its workspaces.
type Directory interface {
	Organization(ctx context.Context) (account.Organization, error)
	DefaultWorkspace(ctx context.Context) (account.Workspace, error)
	// Workspace returns account.ErrWorkspaceNotFound for an unknown id.
	Workspace(ctx context.Context, id string) (account.Workspace, error)
	// CreateWorkspace returns account.ErrWorkspaceExists for a taken slug.
	CreateWorkspace(ctx context.Context, ws account.Workspace) error
	ListWorkspaces(ctx context.Context, p Page) ([]account.Workspace, int, error)
	// WorkspaceByRef returns the workspace whose id or slug ref is, or account.ErrNoWorkspace.
	WorkspaceByRef(ctx context.Context, ref string) (account.Workspace, error)
	// UpdateWorkspace applies change to the stored workspace (id or slug) inside one transaction.
	UpdateWorkspace(ctx context.Context, ref string, change func(*account.Workspace) error) (account.Workspace, error)
	// DeleteWorkspace deletes the workspace with its memberships and budgets, or answers
	// account.ErrWorkspaceInUse while it has keys, presets or guardrails.
	DeleteWorkspace(ctx context.Context, id string) error
	WorkspaceMembers(ctx context.Context, id string, p Page) ([]account.WorkspaceMembership, int, error)
	// AddWorkspaceMembers adds the memberships not there yet and returns those it added.
	AddWorkspaceMembers(ctx context.Context, ms []account.WorkspaceMembership) ([]account.WorkspaceMembership, error)
	// RemoveWorkspaceMembers returns how many of the members were in the workspace (and are no longer).
	RemoveWorkspaceMembers(ctx context.Context, id string, userIDs []string) (int, error)
}

// WorkspaceBudgetStore keeps workspaces' budgets and holds the calls in flight against them.
type WorkspaceBudgetStore interface {
	// WorkspaceBudgets are the workspace's budgets, the shortest interval first.
	WorkspaceBudgets(ctx context.Context, workspaceID string) ([]account.Budget, error)
	// SetWorkspaceBudget creates the budget of b's interval or changes its limit (keeping its id and creation).
	SetWorkspaceBudget(ctx context.Context, b account.Budget) (account.Budget, error)
	// DeleteWorkspaceBudget returns account.ErrNoBudget when there is none for the interval.
	DeleteWorkspaceBudget(ctx context.Context, workspaceID string, i domain.Interval) error
	// ReserveWorkspace holds amount (until expires, or until the call's generation entry is written) against
	// every one of budgets at once, when for each the workspace's spend in its current window plus the holds in
	// flight plus amount stay within its limit; Left is then the tightest budget's.
	ReserveWorkspace(ctx context.Context, id, workspaceID string, budgets []account.Budget, amount domain.Micros,
		now, expires time.Time) (Reservation, error)
}

// KeyFilter narrows a key listing.
type KeyFilter struct {
	WorkspaceID     string
	IncludeDisabled bool
	Offset          int
}

type KeyStore interface {
	CreateKey(ctx context.Context, k account.Key) error
	// Key returns account.ErrKeyNotFound for an unknown hash.
	Key(ctx context.Context, hash string) (account.Key, error)
	ListKeys(ctx context.Context, f KeyFilter) ([]account.Key, error)
	// UpdateKey applies change to the stored key inside one transaction.
	UpdateKey(ctx context.Context, hash string, change func(*account.Key) error) (account.Key, error)
	DeleteKey(ctx context.Context, hash string) error
	HasManagementKey(ctx context.Context) (bool, error)
}

// UsageStore keeps what each key spent, by UTC day.
type UsageStore interface {
	// Usage returns the spend of each key in hashes as of now (keys without spend are absent).
	Usage(ctx context.Context, hashes []string, now time.Time) (map[string]account.Usage, error)
	AddUsage(ctx context.Context, hash string, at time.Time, amount domain.Micros) error
	// ReserveUsage holds amount (until expires, or until the call's generation entry is written) against the
	// key's limit, when its usage on days from since plus the holds in flight plus amount stay within limit.
	ReserveUsage(ctx context.Context, id, hash string, since time.Time, limit, amount domain.Micros, now, expires time.Time) (Reservation, error)
}

type MemberStore interface {
	CreateMember(ctx context.Context, m account.Member) error
	ListMembers(ctx context.Context, p Page) ([]account.Member, int, error)
	// UnknownMembers returns the ids in ids that are not members, in the order given.
	UnknownMembers(ctx context.Context, ids []string) ([]string, error)
}

// KeyView is a key with its spend.
type KeyView struct {
	account.Key
	Usage account.Usage
}

// KeyService is the API-key use case.
type KeyService interface {
	CreateKey(ctx context.Context, by account.Principal, spec account.KeySpec) (KeyView, string, error)
	ListKeys(ctx context.Context, f KeyFilter) ([]KeyView, error)
	GetKey(ctx context.Context, hash string) (KeyView, error)
	UpdateKey(ctx context.Context, hash string, change account.KeyChange) (KeyView, error)
	DeleteKey(ctx context.Context, hash string) error
}

// Authenticator turns a bearer secret into the calling principal, or account.ErrUnauthenticated.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (account.Principal, error)
}

// WorkspaceService is the workspace use case: a workspace is named by its id or its slug (ref).
type WorkspaceService interface {
	CreateWorkspace(ctx context.Context, name, slug string) (account.Workspace, error)
	ListWorkspaces(ctx context.Context, p Page) ([]account.Workspace, int, error)
	Workspace(ctx context.Context, ref string) (account.Workspace, error)
	UpdateWorkspace(ctx context.Context, ref string, change account.WorkspaceChange) (account.Workspace, error)
	DeleteWorkspace(ctx context.Context, ref string) error
	WorkspaceMembers(ctx context.Context, ref string, p Page) ([]account.WorkspaceMembership, int, error)
	AddWorkspaceMembers(ctx context.Context, ref string, userIDs []string) ([]account.WorkspaceMembership, error)
	RemoveWorkspaceMembers(ctx context.Context, ref string, userIDs []string) (int, error)
	WorkspaceBudgets(ctx context.Context, ref string) ([]account.Budget, error)
	// WorkspaceBudget returns account.ErrNoBudget when the workspace has none for the interval.
	WorkspaceBudget(ctx context.Context, ref, interval string) (account.Budget, error)
	SetWorkspaceBudget(ctx context.Context, ref, interval string, limit domain.Micros, includeBYOK bool) (account.Budget, error)
	DeleteWorkspaceBudget(ctx context.Context, ref, interval string) error
}

// MemberService is the organization-member use case.
type MemberService interface {
	AddMember(ctx context.Context, email string, first, last *string, role account.Role) (account.Member, error)
	ListMembers(ctx context.Context, p Page) ([]account.Member, int, error)
}

// WorkspaceBudgetSource gives a workspace's budgets to the admission of each inference call: from a cache that
// every replica drops when they change.
type WorkspaceBudgetSource interface {
	ActiveBudgets(ctx context.Context, workspaceID string) ([]account.Budget, error)
}
