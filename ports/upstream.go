package ports

import (
	"fmt"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

// UpstreamError is a failed upstream call, classified by the adapter that made it.
type UpstreamError struct {
	// Status is the upstream's HTTP status, 0 when none came.
	Status int
	// Kind is what the failure means for the caller: KindInvalid (the caller's input, never retried),
	// KindRateLimited, KindTimeout, KindOverloaded or KindUpstream.
	Kind domain.Kind
	// Retryable says another endpoint may succeed where this one failed.
	Retryable bool
	// Reason is short and safe to show the caller; Raw is the upstream's body, truncated, which is not.
	Reason     string
	Raw        string
	RetryAfter time.Duration
	Err        error
}

func (e *UpstreamError) Error() string {
	s := fmt.Sprintf("upstream %d: %s", e.Status, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *UpstreamError) Unwrap() error { return e.Err }
