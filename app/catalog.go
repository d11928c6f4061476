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
	health  ports.EndpointHealth
	started time.Time
}

var _ ports.CatalogService = (*Catalog)(nil)

func NewCatalog(c *catalog.Catalog, health ports.EndpointHealth, env Env) *Catalog {
	return &Catalog{catalog: c, health: health, started: env.Now()}
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

// ModelEndpoints reads the health of the model's endpoints from the router (this replica's measures).
func (c *Catalog) ModelEndpoints(id string) (ports.ListedModel, []ports.ModelEndpoint, error) {
	m, err := c.catalog.Model(id)
	if err != nil {
		return ports.ListedModel{}, nil, err
	}
	byUpstream := map[catalog.Upstream]ports.EndpointStatus{}
	for _, st := range c.health.Endpoints() {
		byUpstream[catalog.Upstream{Provider: st.Provider, Model: st.UpstreamModel}] = st
	}
	out := make([]ports.ModelEndpoint, len(m.Endpoints))
	for i, e := range m.Endpoints {
		st, known := byUpstream[e.Upstream()]
		out[i] = ports.ModelEndpoint{Endpoint: e, Health: st, Known: known}
	}
	return ports.ListedModel{Model: m, Created: c.started}, out, nil
}
