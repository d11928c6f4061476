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

// WorkspaceService is the workspace use case.
type WorkspaceService interface {
	CreateWorkspace(ctx context.Context, name, slug string) (account.Workspace, error)
	ListWorkspaces(ctx context.Context, p Page) ([]account.Workspace, int, error)
}

// MemberService is the organization-member use case.
type MemberService interface {
	AddMember(ctx context.Context, email string, first, last *string, role account.Role) (account.Member, error)
	ListMembers(ctx context.Context, p Page) ([]account.Member, int, error)
}
