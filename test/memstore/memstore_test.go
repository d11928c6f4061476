package memstore_test

import (
	"testing"

	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/contract"
	"github.com/switchboard-ai/switchboard/test/memstore"
)

// The in-memory stores keep the same contracts as the GORM ones.

func TestVideoStoreContract(t *testing.T) {
	t.Parallel()
	contract.VideoStore(t, func(*testing.T) ports.VideoStore { return &memstore.Videos{} })
}

func TestCreditStoreContract(t *testing.T) {
	t.Parallel()
	contract.CreditStore(t, func(*testing.T) ports.CreditStore { return &memstore.Credits{} })
}

func TestGenerationStoreContract(t *testing.T) {
	t.Parallel()
	for name, suite := range map[string]func(*testing.T, func(*testing.T) contract.Generations){
		"records": contract.GenerationStore, "list": contract.GenerationList, "activity": contract.ActivityStore,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			suite(t, func(*testing.T) contract.Generations { return &memstore.Generations{} })
		})
	}
}
