package app

import (
	"fmt"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// providerOf is the client of the provider slug for the modality whose port is P, or an UpstreamError when no
// configured provider by that name serves it: retryable, so that routing moves on to the next endpoint.
func providerOf[P any](providers ports.Providers, slug string) (P, error) {
	p, ok := providers[slug].(P)
	if !ok {
		return p, &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true,
			Reason: fmt.Sprintf("provider %q is not configured for this", slug)}
	}
	return p, nil
}
