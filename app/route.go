package app

import (
	"context"
	"time"

	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// route tries the endpoints in order until one answers. try gets each endpoint with its passthrough options and
// returns the result and the upstream's id for it. Every attempt is recorded on c; a failure another endpoint
// might not have moves on, any other stops. When none answers, the error is what the caller gets.
func route[T any](ctx context.Context, c *call, endpoints []catalog.Endpoint, options map[string]any,
	try func(ep catalog.Endpoint, opts map[string]any) (T, string, error)) (T, *catalog.Endpoint, error) {
	var zero T
	for _, ep := range endpoints {
		opts, err := catalog.PassThrough(options, ep.Provider)
		if err != nil {
			return zero, nil, err
		}
		begin := time.Now()
		res, upstreamID, err := try(ep, opts)
		if err == nil {
			c.attempt(ep, 200, time.Since(begin), "", "", upstreamID)
			c.rec.ProviderName, c.rec.UpstreamID = ep.Provider, upstreamID
			return res, &ep, nil
		}
		if ctx.Err() != nil { // the caller went away
			c.rec.Cancelled = true
			return zero, nil, ctx.Err()
		}
		ue := asUpstream(err)
		c.attempt(ep, ue.Status, time.Since(begin), ue.Reason, ue.Raw, "")
		c.failures = append(c.failures, ue)
		if !ue.Retryable {
			break
		}
	}
	return zero, nil, failedOver(c.rec.Model, c.failures)
}
