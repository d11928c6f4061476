package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

// Accounts implements keys, members and authentication.
type Accounts struct {
	dir     ports.Directory
	keys    ports.KeyStore
	usage   ports.UsageStore
	members ports.MemberStore
	budgets ports.WorkspaceBudgetStore
	changes ports.ChangeNotifier
	env     Env

	orgOnce sync.Mutex
	orgID   string
	// keyCache is by hash, as authentication is on every request's path. A hash that names no key is kept too,
	// as the zero Key, so that a wrong secret sent again and again costs no query each time.
	keyCache *ttlCache[string, account.Key]
	// budgetCache is each workspace's budgets by its id, read on every inference call's admission.
	budgetCache *ttlCache[string, []account.Budget]
}

var (
	_ ports.KeyService            = (*Accounts)(nil)
	_ ports.MemberService         = (*Accounts)(nil)
	_ ports.Authenticator         = (*Accounts)(nil)
	_ ports.WorkspaceService      = (*Accounts)(nil)
	_ ports.WorkspaceBudgetSource = (*Accounts)(nil)
)

func NewAccounts(dir ports.Directory, keys ports.KeyStore, usage ports.UsageStore, members ports.MemberStore,
	budgets ports.WorkspaceBudgetStore, changes ports.ChangeNotifier, metrics ports.Metrics, env Env, log *slog.Logger) *Accounts {
	a := &Accounts{dir: dir, keys: keys, usage: usage, members: members, budgets: budgets, changes: changes, env: env}
	a.keyCache = newTTLCache("keys", metrics, log, env.Now, a.readKey)
	a.budgetCache = newTTLCache("workspace budgets", metrics, log, env.Now, func(ctx context.Context, id string) ([]account.Budget, error) {
		return a.budgets.WorkspaceBudgets(ctx, id)
	})
	return a
}

// Authenticate looks the secret up by its hash only; disabled and expired keys do not authenticate.
func (a *Accounts) Authenticate(ctx context.Context, secret string) (account.Principal, error) {
	if secret == "" {
		return account.Principal{}, account.ErrUnauthenticated
	}
	k, err := a.keyCache.get(ctx, account.HashSecret(secret))
	if err != nil {
		return account.Principal{}, err
	}
	if k.Hash == "" || !k.Usable(a.env.Now()) { // expiry is checked on every use, cached or not
		return account.Principal{}, account.ErrUnauthenticated
	}
	org, err := a.organizationID(ctx)
	if err != nil {
		return account.Principal{}, err
	}
	return account.Principal{
		KeyHash: k.Hash, KeyName: k.Name, Management: k.Management, WorkspaceID: k.WorkspaceID,
		CreatorUserID: k.CreatorUserID, OrganizationID: org, RateLimit: k.RequestsPerMinute, Tokens: k.Tokens,
		Limit: k.Limit, LimitReset: k.LimitReset,
	}, nil
}

// readKey reads the key a hash names for keyCache; a hash that names none is the zero Key, dropped when a key
// with this hash is created (keyChanged).
func (a *Accounts) readKey(ctx context.Context, hash string) (account.Key, error) {
	k, err := a.keys.Key(ctx, hash)
	if errors.Is(err, account.ErrKeyNotFound) {
		return account.Key{}, nil
	}
	if err != nil {
		return account.Key{}, fmt.Errorf("look up key: %w", err)
	}
	return k, nil
}

// organizationID is read once: a deployment has one organization for its whole life.
func (a *Accounts) organizationID(ctx context.Context) (string, error) {
	a.orgOnce.Lock()
	defer a.orgOnce.Unlock()
	if a.orgID == "" {
		org, err := a.dir.Organization(ctx)
		if err != nil {
			return "", fmt.Errorf("read organization: %w", err)
		}
		a.orgID = org.ID
	}
	return a.orgID, nil
}

// CreateKey issues a key and returns the secret, which is never stored and never shown again.
func (a *Accounts) CreateKey(ctx context.Context, by account.Principal, spec account.KeySpec) (ports.KeyView, string, error) {
	if spec.Management && spec.WorkspaceID != "" {
		return ports.KeyView{}, "", errScopedManagementKey
	}
	ws, err := a.workspace(ctx, spec.WorkspaceID)
	if err != nil {
		return ports.KeyView{}, "", err
	}
	spec.WorkspaceID = ws.ID
	if spec.CreatorUserID == nil {
		spec.CreatorUserID = by.CreatorUserID
	}
	secret, hash, label := account.NewSecret()
	k, err := account.NewKey(spec, hash, label, a.env.Now())
	if err != nil {
		return ports.KeyView{}, "", err
	}
	if err := a.keys.CreateKey(ctx, k); err != nil {
		return ports.KeyView{}, "", fmt.Errorf("store key: %w", err)
	}
	a.keyChanged(ctx, hash) // a replica may remember this hash as unknown
	return ports.KeyView{Key: k}, secret, nil
}

// errScopedManagementKey refuses a setting that would mean nothing: a management key administers the whole
// organization (every workspace's keys, guardrails, presets and generations), so it belongs to no workspace.
var errScopedManagementKey = domain.Invalid("workspace",
	"a management key administers every workspace, so it cannot be limited to one: create it without a workspace")

func (a *Accounts) workspace(ctx context.Context, id string) (account.Workspace, error) {
	if id == "" {
		return a.dir.DefaultWorkspace(ctx)
	}
	return a.dir.Workspace(ctx, id)
}

// ListKeys answers a workspace that does not exist with a 400 naming workspace_id, not an empty list.
func (a *Accounts) ListKeys(ctx context.Context, f ports.KeyFilter) ([]ports.KeyView, error) {
	if f.WorkspaceID != "" {
		if _, err := a.dir.Workspace(ctx, f.WorkspaceID); err != nil {
			return nil, err
		}
	}
	keys, err := a.keys.ListKeys(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return a.withUsage(ctx, keys...)
}

func (a *Accounts) GetKey(ctx context.Context, hash string) (ports.KeyView, error) {
	k, err := a.keys.Key(ctx, hash)
	if err != nil {
		return ports.KeyView{}, err
	}
	views, err := a.withUsage(ctx, k)
	if err != nil {
		return ports.KeyView{}, err
	}
	return views[0], nil
}

func (a *Accounts) UpdateKey(ctx context.Context, hash string, change account.KeyChange) (ports.KeyView, error) {
	now := a.env.Now()
	k, err := a.keys.UpdateKey(ctx, hash, func(k *account.Key) error { return change.Apply(k, now) })
	if err != nil {
		return ports.KeyView{}, err
	}
	a.keyChanged(ctx, hash)
	views, err := a.withUsage(ctx, k)
	if err != nil {
		return ports.KeyView{}, err
	}
	return views[0], nil
}

func (a *Accounts) DeleteKey(ctx context.Context, hash string) error {
	if err := a.keys.DeleteKey(ctx, hash); err != nil {
		return err
	}
	a.keyChanged(ctx, hash)
	return nil
}

// keyChanged runs after a change to a key is committed: this replica drops the key at once, and every other
// replica is told to.
func (a *Accounts) keyChanged(ctx context.Context, hash string) {
	a.keyCache.forget(hash)
	a.changes.Notify(ctx, ports.Change{Kind: ports.KeyChanged, ID: hash})
}

// Invalidate drops what another replica (or this one) changed.
func (a *Accounts) Invalidate(c ports.Change) {
	switch c.Kind {
	case ports.KeyChanged:
		a.keyCache.forget(c.ID)
	case ports.WorkspaceChanged:
		a.budgetCache.forget(c.ID)
	}
}

// Flush drops every cached key and budget.
func (a *Accounts) Flush() {
	a.keyCache.clear()
	a.budgetCache.clear()
}

func (a *Accounts) withUsage(ctx context.Context, keys ...account.Key) ([]ports.KeyView, error) {
	hashes := make([]string, len(keys))
	for i, k := range keys {
		hashes[i] = k.Hash
	}
	usage, err := a.usage.Usage(ctx, hashes, a.env.Now())
	if err != nil {
		return nil, fmt.Errorf("read key usage: %w", err)
	}
	views := make([]ports.KeyView, len(keys))
	for i, k := range keys {
		views[i] = ports.KeyView{Key: k, Usage: usage[k.Hash]}
	}
	return views, nil
}

// EnsureManagementKey creates a management key with the given secret when the deployment has none.
// It reports whether it created one.
func (a *Accounts) EnsureManagementKey(ctx context.Context, secret string) (bool, error) {
	has, err := a.keys.HasManagementKey(ctx)
	if err != nil || has {
		return false, err
	}
	if len(secret) < 32 {
		return false, domain.Invalid("SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY", "must be at least 32 characters")
	}
	ws, err := a.dir.DefaultWorkspace(ctx)
	if err != nil {
		return false, err
	}
	k, err := account.NewKey(account.KeySpec{Name: "bootstrap", Management: true, WorkspaceID: ws.ID},
		account.HashSecret(secret), account.Label(secret), a.env.Now())
	if err != nil {
		return false, err
	}
	err = a.keys.CreateKey(ctx, k)
	if errors.Is(err, account.ErrKeyExists) { // replicas started together: another one created it just now
		return false, nil
	}
	if err != nil {
		return false, err
	}
	a.keyChanged(ctx, k.Hash)
	return true, nil
}

// HasManagementKey reports whether anyone can administer the deployment yet.
func (a *Accounts) HasManagementKey(ctx context.Context) (bool, error) {
	return a.keys.HasManagementKey(ctx)
}

func (a *Accounts) AddMember(ctx context.Context, email string, first, last *string, role account.Role) (account.Member, error) {
	m, err := account.NewMember("user_"+strings.ReplaceAll(a.env.NewID(), "-", ""), email, first, last, role, a.env.Now())
	if err != nil {
		return account.Member{}, err
	}
	if err := a.members.CreateMember(ctx, m); err != nil {
		return account.Member{}, err
	}
	return m, nil
}

func (a *Accounts) ListMembers(ctx context.Context, p ports.Page) ([]account.Member, int, error) {
	return a.members.ListMembers(ctx, p)
}

func (a *Accounts) CreateWorkspace(ctx context.Context, name, slug string) (account.Workspace, error) {
	ws, err := account.NewWorkspace(a.env.NewID(), name, slug, a.env.Now())
	if err != nil {
		return account.Workspace{}, err
	}
	if err := a.dir.CreateWorkspace(ctx, ws); err != nil {
		return account.Workspace{}, err
	}
	return ws, nil
}

func (a *Accounts) ListWorkspaces(ctx context.Context, p ports.Page) ([]account.Workspace, int, error) {
	return a.dir.ListWorkspaces(ctx, p)
}
