package integration_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/app"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// TestBootstrapManagementKey: serve creates the key given by SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY when no
// management key exists, and only then.
func TestBootstrapManagementKey(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := gormstore.NewAccountStore(db)
		a := app.NewAccounts(s, s, s, s, s, app.OneProcess{}, ports.NoMetrics{}, app.SystemEnv(), quiet())
		if _, err := a.EnsureManagementKey(ctx, "too-short"); err == nil {
			t.Fatal("a short bootstrap key was accepted")
		}
		secret := "bootstrap-secret-0123456789abcdef0123456789"
		created, err := a.EnsureManagementKey(ctx, secret)
		if err != nil || !created {
			t.Fatalf("first start: created %v, %v", created, err)
		}
		p, err := a.Authenticate(ctx, secret)
		if err != nil || !p.Management {
			t.Fatalf("the bootstrap key does not authenticate as a management key: %+v %v", p, err)
		}
		if created, err := a.EnsureManagementKey(ctx, "another-secret-0123456789abcdef012345678"); err != nil || created {
			t.Fatalf("second start created another key: %v %v", created, err)
		}
	})
}

// TestBootstrapByReplicasStartingTogether: replicas given one bootstrap key and started at once all start;
// one of them creates the key.
func TestBootstrapByReplicasStartingTogether(t *testing.T) {
	ctx := context.Background()
	db := testdb.Postgres(t)
	s := gormstore.NewAccountStore(db)
	const replicas = 8
	var created atomic.Int32
	var wg sync.WaitGroup
	for range replicas {
		wg.Go(func() {
			a := app.NewAccounts(s, s, s, s, s, app.OneProcess{}, ports.NoMetrics{}, app.SystemEnv(), quiet())
			ok, err := a.EnsureManagementKey(ctx, "bootstrap-secret-0123456789abcdef0123456789")
			if err != nil {
				t.Errorf("a replica failed to start: %v", err)
			}
			if ok {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d replicas created the key, want 1", created.Load())
	}
}
