package integration_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// bus stands for the notification channel between replicas: it records what was sent and delivers it to every
// replica's caches, as a listener would.
type bus struct {
	mu     sync.Mutex
	sent   []ports.Change
	caches []ports.CacheInvalidator
}

func (b *bus) Notify(_ context.Context, c ports.Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, c)
	for _, to := range b.caches {
		to.Invalidate(c)
	}
}

func (b *bus) take() []ports.Change {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sent
	b.sent = nil
	return s
}

type replica struct {
	accounts   *app.Accounts
	guardrails *app.Guardrails
}

// replicas assembles n replicas' use cases on one database, joined by b. Their clock never moves: a cache entry
// never expires, so whatever a replica sees of another's change came through b.
func replicas(db *gorm.DB, b ports.ChangeNotifier, n int) []replica {
	env := app.Env{Now: func() time.Time { return t0 }, NewID: uuid.NewString}
	acc, gs := gormstore.NewAccountStore(db), gormstore.NewGuardrailStore(db)
	out := make([]replica, n)
	for i := range out {
		out[i] = replica{accounts: app.NewAccounts(acc, acc, acc, acc, acc, b, ports.NoMetrics{}, env, quiet()),
			guardrails: app.NewGuardrails(gs, gs, gs, acc, acc, b, ports.NoMetrics{}, env, quiet())}
	}
	return out
}

func TestChangesReachEveryReplicasCaches(t *testing.T) {
	ctx := context.Background()
	db := testdb.SQLite(t)
	b := &bus{}
	rs := replicas(db, b, 2)
	for _, r := range rs {
		b.caches = append(b.caches, app.NewCaches(r.accounts, r.guardrails))
	}
	a, other := rs[0], rs[1]
	keyChanged := func(hash string) []ports.Change { return []ports.Change{{Kind: ports.KeyChanged, ID: hash}} }

	view, secret, err := a.accounts.CreateKey(ctx, account.Principal{}, account.KeySpec{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	hash := view.Key.Hash
	if got := b.take(); !slices.Equal(got, keyChanged(hash)) {
		t.Fatalf("CreateKey sent %v, want %v", got, keyChanged(hash))
	}
	if _, err := other.accounts.Authenticate(ctx, secret); err != nil { // cached by the other replica now
		t.Fatal(err)
	}

	// Each change to the key made on one replica takes effect on the other at once.
	steps := []struct {
		name   string
		change account.KeyChange
		check  func(account.Principal, error) bool
	}{
		{"disable", account.KeyChange{Disabled: ptr(true)},
			func(_ account.Principal, err error) bool { return errors.Is(err, account.ErrUnauthenticated) }},
		{"enable with a rate limit", account.KeyChange{Disabled: ptr(false), RequestsPerMinute: ptr(7)},
			func(p account.Principal, err error) bool { return err == nil && p.RateLimit == 7 }},
		{"limit", account.KeyChange{Limit: domain.Patch[domain.Micros]{Set: true, Value: ptr(domain.Micros(5_000_000))}},
			func(p account.Principal, err error) bool {
				return err == nil && p.Limit != nil && *p.Limit == 5_000_000
			}},
	}
	for _, s := range steps {
		if _, err := a.accounts.UpdateKey(ctx, hash, s.change); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := b.take(); !slices.Equal(got, keyChanged(hash)) {
			t.Fatalf("%s sent %v", s.name, got)
		}
		if p, err := other.accounts.Authenticate(ctx, secret); !s.check(p, err) {
			t.Fatalf("%s: the other replica authenticates %+v, %v", s.name, p, err)
		}
	}
	if err := a.accounts.DeleteKey(ctx, hash); err != nil {
		t.Fatal(err)
	}
	if got := b.take(); !slices.Equal(got, keyChanged(hash)) {
		t.Fatalf("DeleteKey sent %v", got)
	}
	if _, err := other.accounts.Authenticate(ctx, secret); !errors.Is(err, account.ErrUnauthenticated) {
		t.Fatalf("deleted key on the other replica: %v", err)
	}
	// A change that did not happen is not announced.
	if _, err := a.accounts.UpdateKey(ctx, "no-such-key", account.KeyChange{Disabled: ptr(true)}); err == nil {
		t.Fatal("updating a missing key succeeded")
	}
	if got := b.take(); len(got) != 0 {
		t.Fatalf("a failed update sent %v", got)
	}

	// Guardrails: an assignment, an update and a deletion made on one replica apply on the other at once.
	p, gr := setup(t, db, a.guardrails, guardrail.Spec{Name: "team"})
	b.take()
	if _, err := other.guardrails.Admit(ctx, p, admission("hi", 0)); err != nil { // caches "team allows all"
		t.Fatal(err)
	}
	var de *domain.Error
	blocked := func() bool {
		_, err := other.guardrails.Admit(ctx, p, admission("hi", 0))
		return errors.As(err, &de) && de.Kind == domain.KindForbidden
	}
	if _, err := a.guardrails.Update(ctx, gr.ID, func(s *guardrail.Spec) { s.AllowedProviders = []string{"nobody"} }); err != nil {
		t.Fatal(err)
	}
	guardrailsChanged := []ports.Change{{Kind: ports.GuardrailsChanged}}
	if got := b.take(); !slices.Equal(got, guardrailsChanged) || !blocked() {
		t.Fatalf("update: sent %v, blocked on the other replica = %v", got, blocked())
	}
	if _, err := a.guardrails.UnassignMembers(ctx, gr.ID, []string{*p.CreatorUserID}); err != nil {
		t.Fatal(err)
	}
	if got := b.take(); !slices.Equal(got, guardrailsChanged) || blocked() {
		t.Fatalf("unassign: sent %v, blocked on the other replica = %v", got, blocked())
	}
	if _, err := a.guardrails.AssignKeys(ctx, account.Principal{}, gr.ID, []string{p.KeyHash}); err != nil {
		t.Fatal(err)
	}
	if got := b.take(); !slices.Equal(got, guardrailsChanged) || !blocked() {
		t.Fatalf("assign a key: sent %v, blocked on the other replica = %v", got, blocked())
	}
	if err := a.guardrails.Delete(ctx, gr.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.take(); !slices.Equal(got, guardrailsChanged) || blocked() {
		t.Fatalf("delete: sent %v, blocked on the other replica = %v", got, blocked())
	}
	if _, err := a.guardrails.AssignKeys(ctx, account.Principal{}, gr.ID, nil); err == nil {
		t.Fatal("an empty assignment succeeded")
	}
	if got := b.take(); len(got) != 0 {
		t.Fatalf("a rejected assignment sent %v", got)
	}
}

// TestFlushDropsEveryCachedEntry: what a replica does after (re)connecting to the channel, when it may have
// missed changes.
func TestFlushDropsEveryCachedEntry(t *testing.T) {
	ctx := context.Background()
	db := testdb.SQLite(t)
	rs := replicas(db, app.OneProcess{}, 2) // nothing is delivered: only Flush can help
	a, other := rs[0], rs[1]
	view, secret, err := a.accounts.CreateKey(ctx, account.Principal{}, account.KeySpec{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	p, gr := setup(t, db, a.guardrails, guardrail.Spec{Name: "team"})
	if _, err := other.accounts.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := other.guardrails.Admit(ctx, p, admission("hi", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.accounts.UpdateKey(ctx, view.Key.Hash, account.KeyChange{Disabled: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.guardrails.Update(ctx, gr.ID, func(s *guardrail.Spec) { s.AllowedProviders = []string{"nobody"} }); err != nil {
		t.Fatal(err)
	}
	if _, err := other.accounts.Authenticate(ctx, secret); err != nil {
		t.Fatalf("before the flush the other replica should still trust its cache: %v", err)
	}
	app.NewCaches(other.accounts, other.guardrails).Flush()
	if _, err := other.accounts.Authenticate(ctx, secret); !errors.Is(err, account.ErrUnauthenticated) {
		t.Fatalf("after the flush the disabled key authenticates: %v", err)
	}
	var de *domain.Error
	if _, err := other.guardrails.Admit(ctx, p, admission("hi", 0)); !errors.As(err, &de) || de.Kind != domain.KindForbidden {
		t.Fatalf("after the flush the updated guardrail does not apply: %v", err)
	}
}
