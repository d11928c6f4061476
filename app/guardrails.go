package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
)

// Guardrails manages guardrails and their assignments, and enforces them on inference calls.
type Guardrails struct {
	store   ports.GuardrailStore
	assign  ports.AssignmentStore
	budgets ports.BudgetStore
	members ports.MemberStore
	dir     ports.Directory
	changes ports.ChangeNotifier
	env     Env
	log     *slog.Logger

	mu       sync.Mutex
	policies map[string]cachedPolicy // by guardrail id: compiled content filters
	// applicable caches which guardrails apply to a key (and its member); any change here clears it.
	applicable *ttlCache[applicableKey, []guardrail.Guardrail]
}

type applicableKey struct{ keyHash, userID string }

type cachedPolicy struct {
	stamp  time.Time
	policy guardrail.Policy
}

var (
	_ ports.GuardrailService  = (*Guardrails)(nil)
	_ ports.GuardrailEnforcer = (*Guardrails)(nil)
)

func NewGuardrails(store ports.GuardrailStore, assign ports.AssignmentStore, budgets ports.BudgetStore,
	members ports.MemberStore, dir ports.Directory, changes ports.ChangeNotifier, metrics ports.Metrics, env Env,
	log *slog.Logger) *Guardrails {
	g := &Guardrails{store: store, assign: assign, budgets: budgets, members: members, dir: dir, changes: changes,
		env: env, log: log, policies: map[string]cachedPolicy{}}
	g.applicable = newTTLCache("guardrails", metrics, log, env.Now, g.readApplicable)
	return g
}

func (g *Guardrails) Create(ctx context.Context, by account.Principal, workspaceID string, spec guardrail.Spec) (guardrail.Guardrail, error) {
	var ws account.Workspace
	var err error
	if workspaceID == "" {
		ws, err = g.dir.DefaultWorkspace(ctx)
	} else {
		ws, err = g.dir.Workspace(ctx, workspaceID)
	}
	if err != nil {
		return guardrail.Guardrail{}, err
	}
	gr, err := guardrail.New(g.env.NewID(), ws.ID, spec, g.env.Now())
	if err != nil {
		return guardrail.Guardrail{}, err
	}
	return gr, g.store.CreateGuardrail(ctx, gr)
}

func (g *Guardrails) Get(ctx context.Context, id string) (guardrail.Guardrail, error) {
	return g.store.Guardrail(ctx, id)
}

// List answers a workspace that does not exist as presets do: a 400 naming workspace_id, not an empty list.
func (g *Guardrails) List(ctx context.Context, workspaceID string, p ports.Page) ([]guardrail.Guardrail, int, error) {
	if workspaceID != "" {
		if _, err := g.dir.Workspace(ctx, workspaceID); err != nil {
			return nil, 0, err
		}
	}
	return g.store.ListGuardrails(ctx, workspaceID, p)
}

func (g *Guardrails) Update(ctx context.Context, id string, patch func(*guardrail.Spec)) (guardrail.Guardrail, error) {
	now := g.env.Now()
	gr, err := g.store.UpdateGuardrail(ctx, id, func(gr *guardrail.Guardrail) error {
		spec := gr.Spec
		patch(&spec)
		return gr.Update(spec, now)
	})
	g.changed(ctx, err)
	return gr, err
}

func (g *Guardrails) Delete(ctx context.Context, id string) error {
	err := g.store.DeleteGuardrail(ctx, id)
	g.changed(ctx, err)
	return err
}

// changed runs after a change to a guardrail or its assignments: when it was committed (err is nil), this
// replica forgets which guardrails apply to whom at once, and every other replica is told to.
func (g *Guardrails) changed(ctx context.Context, err error) {
	if err == nil {
		g.applicable.clear()
		g.changes.Notify(ctx, ports.Change{Kind: ports.GuardrailsChanged})
	}
}

// Invalidate drops what another replica (or this one) changed.
func (g *Guardrails) Invalidate(c ports.Change) {
	if c.Kind == ports.GuardrailsChanged {
		g.applicable.clear()
	}
}

// Flush drops every cached assignment.
func (g *Guardrails) Flush() { g.applicable.clear() }

// maxAssignedID bounds an id in a bulk assignment: member ids and key hashes are far shorter.
const maxAssignedID = 128

// distinct validates a list of ids from a request: at least one, none empty; it returns them sorted and distinct.
func distinct(field string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, domain.Invalid(field, "must hold at least one id")
	}
	for i, id := range ids {
		if id == "" || len(id) > maxAssignedID {
			return nil, domain.Invalid(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("must be a non-empty string of at most %d bytes", maxAssignedID))
		}
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// AssignMembers is all or nothing: ids that are not members of the organization are a 400 listing them.
func (g *Guardrails) AssignMembers(ctx context.Context, by account.Principal, id string, userIDs []string) (int, error) {
	ids, err := distinct("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	if _, err := g.store.Guardrail(ctx, id); err != nil {
		return 0, err
	}
	unknown, err := g.members.UnknownMembers(ctx, ids)
	if err != nil {
		return 0, err
	}
	if len(unknown) > 0 {
		return 0, domain.Invalid("member_user_ids", "not members of the organization: "+strings.Join(unknown, ", ")).
			With("unknown_member_user_ids", unknown)
	}
	n, err := g.assign.AssignMembers(ctx, id, ids, by.CreatorUserID, g.env.Now())
	g.changed(ctx, err)
	return n, err
}

func (g *Guardrails) UnassignMembers(ctx context.Context, id string, userIDs []string) (int, error) {
	ids, err := distinct("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	n, err := g.assign.UnassignMembers(ctx, id, ids)
	g.changed(ctx, err)
	return n, err
}

// AssignKeys is all or nothing: hashes that name no key are a 400 listing them.
func (g *Guardrails) AssignKeys(ctx context.Context, by account.Principal, id string, keyHashes []string) (int, error) {
	hashes, err := distinct("key_hashes", keyHashes)
	if err != nil {
		return 0, err
	}
	if _, err := g.store.Guardrail(ctx, id); err != nil {
		return 0, err
	}
	unknown, err := g.assign.UnknownKeys(ctx, hashes)
	if err != nil {
		return 0, err
	}
	if len(unknown) > 0 {
		return 0, domain.Invalid("key_hashes", "no such keys: "+strings.Join(unknown, ", ")).With("unknown_key_hashes", unknown)
	}
	n, err := g.assign.AssignKeys(ctx, id, hashes, by.CreatorUserID, g.env.Now())
	g.changed(ctx, err)
	return n, err
}

func (g *Guardrails) UnassignKeys(ctx context.Context, id string, keyHashes []string) (int, error) {
	hashes, err := distinct("key_hashes", keyHashes)
	if err != nil {
		return 0, err
	}
	n, err := g.assign.UnassignKeys(ctx, id, hashes)
	g.changed(ctx, err)
	return n, err
}

func (g *Guardrails) MemberAssignments(ctx context.Context, id string, p ports.Page) ([]ports.MemberAssignment, int, error) {
	return g.assign.MemberAssignments(ctx, id, p)
}

func (g *Guardrails) KeyAssignments(ctx context.Context, id string, p ports.Page) ([]ports.KeyAssignment, int, error) {
	return g.assign.KeyAssignments(ctx, id, p)
}

// Admit applies every guardrail assigned to the calling key or to the member who owns it: model and provider
// lists filter the endpoints, content filters block, redact or flag the text, and each guardrail with a budget
// reserves the most the call may cost on the remaining endpoints. All must pass.
func (g *Guardrails) Admit(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, error) {
	out, rails, err := g.screen(ctx, by, a)
	if err != nil || len(rails) == 0 {
		return out, err
	}
	var estimate domain.Micros
	for _, e := range out.Endpoints {
		estimate = max(estimate, a.Estimate(e, out.Texts))
	}
	now := g.env.Now()
	for _, r := range rails {
		if r.LimitUSD == nil {
			continue
		}
		h := guardrail.Hold{ID: g.env.NewID(), GuardrailID: r.ID, Window: r.ResetInterval.Start(now), Amount: estimate}
		res, err := g.budgets.Reserve(ctx, h, *r.LimitUSD, now, now.Add(a.Hold))
		if err != nil || !res.Held {
			g.Settle(ctx, out.Holds, 0)
			if err != nil {
				return ports.Admitted{}, fmt.Errorf("reserve guardrail budget: %w", err)
			}
			return ports.Admitted{}, r.BudgetRefusal(h.Window, estimate, res.Left)
		}
		out.Holds = append(out.Holds, h)
	}
	return out, nil
}

// Screen applies the lists and the content filters of every guardrail that applies to the caller, as Admit does, and
// reserves nothing: for what reaches an upstream without being a call (a token count).
func (g *Guardrails) Screen(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, error) {
	out, _, err := g.screen(ctx, by, a)
	return out, err
}

// screen is Screen, with the guardrails it applied.
func (g *Guardrails) screen(ctx context.Context, by account.Principal, a ports.Admission) (ports.Admitted, []guardrail.Guardrail, error) {
	out := ports.Admitted{Endpoints: a.Endpoints, Texts: a.Texts}
	rails, err := g.rails(ctx, by)
	if err != nil || len(rails) == 0 {
		return out, nil, err
	}
	scan := guardrail.Scan{Texts: a.Texts, Fixed: a.Fixed}
	for _, r := range rails {
		if out.Endpoints, err = r.Filter(a.Model, out.Endpoints); err != nil {
			return ports.Admitted{}, nil, err
		}
		if scan, err = g.policy(r).Apply(scan); err != nil {
			return ports.Admitted{}, nil, err
		}
	}
	out.Texts, out.Flags = scan.Texts, scan.Flags
	return out, rails, nil
}

// rails are the guardrails that apply to the caller, from the cache while it holds them.
func (g *Guardrails) rails(ctx context.Context, by account.Principal) ([]guardrail.Guardrail, error) {
	k := applicableKey{keyHash: by.KeyHash}
	if by.CreatorUserID != nil {
		k.userID = *by.CreatorUserID
	}
	return g.applicable.get(ctx, k)
}

// readApplicable reads the guardrails that apply to a key and its member, for the cache (whose key says no
// member as "").
func (g *Guardrails) readApplicable(ctx context.Context, k applicableKey) ([]guardrail.Guardrail, error) {
	var userID *string
	if k.userID != "" {
		userID = &k.userID
	}
	return g.store.Applicable(ctx, k.keyHash, userID)
}

// Settle releases the holds and books the call's real cost against each guardrail's window.
func (g *Guardrails) Settle(ctx context.Context, holds []guardrail.Hold, actual domain.Micros) {
	ctx = context.WithoutCancel(ctx)
	for _, h := range holds {
		if err := g.budgets.Settle(ctx, h, actual); err != nil {
			g.log.ErrorContext(ctx, "settle guardrail budget", "guardrail_id", h.GuardrailID, "hold_id", h.ID, "err", err)
		}
	}
}

// policy returns the guardrail's compiled filters, compiling again only when the guardrail changed.
func (g *Guardrails) policy(r guardrail.Guardrail) guardrail.Policy {
	stamp := r.CreatedAt
	if r.UpdatedAt != nil {
		stamp = *r.UpdatedAt
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.policies[r.ID]; ok && c.stamp.Equal(stamp) {
		return c.policy
	}
	p := r.Policy()
	g.policies[r.ID] = cachedPolicy{stamp: stamp, policy: p}
	return p
}
