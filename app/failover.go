package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// asUpstream views any provider error as an UpstreamError.
func asUpstream(err error) *ports.UpstreamError {
	var ue *ports.UpstreamError
	if errors.As(err, &ue) {
		return ue
	}
	return &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "the provider call failed", Err: err}
}

// failedOver is the caller's error once every endpoint failed: 429 when every one rate limited (with the
// soonest Retry-After), 400 when every one refused the input, else after the last failure: 524 for a timeout,
// 529 for overload, 502 for the rest. A failure no other endpoint could fix stops the routing and is answered as
// it is.
func failedOver(model string, fails []*ports.UpstreamError) error {
	if len(fails) == 0 {
		return domain.E(domain.KindUpstream, "no_endpoint", fmt.Sprintf("model %q has no endpoint to call", model))
	}
	last := fails[len(fails)-1]
	kind, code := domain.KindUpstream, "upstream_failed"
	same := func(k domain.Kind) bool {
		for _, f := range fails {
			if f.Kind != k {
				return false
			}
		}
		return true
	}
	var retry time.Duration
	switch {
	case same(domain.KindRateLimited):
		kind, code = domain.KindRateLimited, "upstream_rate_limited"
		for _, f := range fails {
			if f.RetryAfter > 0 && (retry == 0 || f.RetryAfter < retry) {
				retry = f.RetryAfter
			}
		}
		if retry == 0 {
			retry = time.Second
		}
	case same(domain.KindInvalid):
		kind, code = domain.KindInvalid, "upstream_rejected_input"
	case last.Kind == domain.KindTimeout:
		kind, code = domain.KindTimeout, "upstream_timeout"
	case last.Kind == domain.KindOverloaded:
		kind, code = domain.KindOverloaded, "upstream_overloaded"
	}
	msg := fmt.Sprintf("every provider of %q failed; the last said: %s", model, last.Reason)
	if kind == domain.KindInvalid {
		msg = last.Reason
	}
	e := domain.E(kind, code, msg).With("provider_reason", last.Reason).With("attempts", len(fails))
	e.RetryAfter = retry
	return e
}

// brokeOff is the caller's error for an answer that broke after it began: 524 when the provider timed out (its
// watchdog: no chunk within its idle timeout), 502 otherwise.
func brokeOff(err error) error {
	ue := asUpstream(err)
	kind := domain.KindUpstream
	if ue.Kind == domain.KindTimeout {
		kind = domain.KindTimeout
	}
	return domain.E(kind, "upstream_stream_broke", "the provider's answer broke off: "+ue.Reason).Wrap(err)
}
