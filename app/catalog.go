package app

import (
	"time"

	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/ports"
)

// Catalog lists the configured models and their providers. The configuration has no creation time for a model:
// a model is listed as created when this process started.
type Catalog struct {
	catalog *catalog.Catalog
	started time.Time
}

var _ ports.CatalogService = (*Catalog)(nil)

func NewCatalog(c *catalog.Catalog, env Env) *Catalog {
	return &Catalog{catalog: c, started: env.Now()}
}

func (c *Catalog) Models() []ports.ListedModel {
	ms := c.catalog.All()
	out := make([]ports.ListedModel, len(ms))
	for i, m := range ms {
		out[i] = ports.ListedModel{Model: m, Created: c.started}
	}
	return out
}

func (c *Catalog) Providers() []string { return c.catalog.Providers() }
