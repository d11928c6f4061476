package app

import (
	"fmt"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/ports"
)

// providerOf is the client of an endpoint's provider (through the account the router chose, catalog.Endpoint.Client)
// for the modality whose port is P, or an UpstreamError when no configured provider by that name serves it:
// retryable, so that routing moves on to the next endpoint.
func providerOf[P any](providers ports.Providers, ep catalog.Endpoint) (P, error) {
	p, ok := providers[ep.Client()].(P)
	if !ok {
		return p, &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true,
			Reason: fmt.Sprintf("provider %q is not configured for this", ep.Provider)}
	}
	return p, nil
}
