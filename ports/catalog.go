package ports

import (
	"time"

	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// ListedModel is a configured model as listed to callers.
type ListedModel struct {
	Model   catalog.Model
	Created time.Time
}

// ModelEndpoint is one endpoint of a model with its health as this replica measured it (Known is false for an
// endpoint the router does not track, such as a local provider's).
type ModelEndpoint struct {
	Endpoint catalog.Endpoint
	Health   EndpointStatus
	Known    bool
}

// CatalogService lists what the gateway serves: its models, and the providers behind them.
type CatalogService interface {
	Models() []ListedModel
	// Providers are the slugs of the providers that serve some model.
	Providers() []string
	// ModelEndpoints is one model (catalog.ErrUnknownModel, a 404, when there is none) with its endpoints in
	// configuration order and their health.
	ModelEndpoints(id string) (ListedModel, []ModelEndpoint, error)
}
