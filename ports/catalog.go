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

// CatalogService lists what the gateway serves: its models, and the providers behind them.
type CatalogService interface {
	Models() []ListedModel
	// Providers are the slugs of the providers that serve some model.
	Providers() []string
}
