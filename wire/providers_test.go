package wire

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
	"github.com/switchboard-ai/switchboard/ports"
)

// TestProviderRegistry: every kind the configuration accepts builds a client, and that client serves exactly
// the modalities the configuration lets its models use, so no accepted setting fails every call.
func TestProviderRegistry(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, kind := range providerKinds {
		t.Run(name, func(t *testing.T) {
			if len(kind.modalities) == 0 {
				t.Fatal("the kind serves no modality")
			}
			providers, err := newProviders([]ProviderConfig{{Slug: "p", Kind: name, BaseURL: "https://example.test", Keys: []ProviderKey{{Key: "k", Weight: 1}},
				Timeout: time.Second}}, log, httpapi.Tracing{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ports.Modalities(providers["p"]); !slices.Equal(got, kind.modalities) {
				t.Fatalf("the client serves %v, the registry says %v", got, kind.modalities)
			}
			for _, mod := range kind.modalities {
				yaml := fmt.Sprintf("providers:\n  - {slug: p, kind: %s, base_url: https://example.test, api_key: k}\nmodels:\n  - {id: m, modality: %s, endpoints: [{provider: p, upstream_model: u}]}\n", name, mod)
				path := filepath.Join(t.TempDir(), "c.yaml")
				if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := LoadConfig(path, func(string) string { return "" }); err != nil {
					t.Fatalf("a %s model on this kind does not load: %v", mod, err)
				}
			}
		})
	}
	if _, err := newProviders([]ProviderConfig{{Slug: "p", Kind: "carrier-pigeon"}}, log, httpapi.Tracing{}); err == nil {
		t.Fatal("an unknown kind was built")
	}
}
