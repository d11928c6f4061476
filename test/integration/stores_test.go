package integration_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/adapters/gormstore"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

var t0 = time.Date(2026, 3, 18, 15, 4, 5, 123456000, time.UTC) // a Wednesday

func ptr[T any](v T) *T { return &v }

// The GORM stores against the port contracts, on both dialects.

func TestVideoStoreContract(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		contract.VideoStore(t, func(*testing.T) ports.VideoStore { return gormstore.NewVideoStore(db) })
	})
}

func TestCreditStoreContract(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		contract.CreditStore(t, func(*testing.T) ports.CreditStore { return gormstore.NewCreditStore(db) })
	})
}

func TestAccountStoreContract(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		s := gormstore.NewAccountStore(db)
		org, err := s.Organization(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := gormstore.Migrate(context.Background(), db); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		if again, _ := s.Organization(context.Background()); again.ID != org.ID {
			t.Fatalf("re-migrating changed the organization: %s → %s", org.ID, again.ID)
		}
		contract.AccountStore(t, func(*testing.T) contract.Accounts { return s })
	})
}

func TestPresetStoreContract(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		contract.PresetStore(t, func(t *testing.T) (ports.PresetStore, string) {
			ws, err := gormstore.NewAccountStore(db).DefaultWorkspace(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return gormstore.NewPresetStore(db), ws.ID
		})
	})
}

func TestGenerationStoreContract(t *testing.T) {
	t.Parallel()
	for name, suite := range map[string]func(*testing.T, func(*testing.T) contract.Generations){
		"records": contract.GenerationStore, "list": contract.GenerationList, "activity": contract.ActivityStore,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testdb.Each(t, func(t *testing.T, db *gorm.DB) {
				suite(t, func(*testing.T) contract.Generations { return gormstore.NewGenerationStore(db) })
			})
		})
	}
}

func TestGuardrailStoreContract(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		contract.GuardrailStore(t, func(t *testing.T) contract.Guardrails {
			acc := gormstore.NewAccountStore(db)
			ws, err := acc.DefaultWorkspace(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s := gormstore.NewGuardrailStore(db)
			return contract.Guardrails{Guardrails: s, Assignments: s, Budgets: s, Members: acc, Keys: acc, Workspace: ws.ID}
		})
	})
}
