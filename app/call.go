package app

import (
	"errors"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
	"github.com/switchboard-ai/switchboard/ports"
)

// Call is one inference call as the pipeline carries it: its generation record as it fills in, and what was
// admitted and routed.
type Call struct {
	rec    generation.Record
	by     account.Principal
	caller generation.Caller
	begin  time.Time
	// timed is set when the call's times are known otherwise than by measuring (a job taken up again).
	timed bool
	// texts are what goes upstream, once the guardrails admitted them; input and counts are what the record
	// keeps of the request.
	texts  []string
	input  generation.Input
	counts generation.Counts
	holds  []guardrail.Hold
	// failures are the failed attempts; endpoint is the one that answered, if one did.
	failures []*ports.UpstreamError
	endpoint *catalog.Endpoint
	// ended is set once finish has taken the call: it is recorded, or being recorded.
	ended bool
	// metered says the call's usage is tokens, counted against its key's token limits.
	metered bool
}

// newCall starts the record of a call: a new one, or one a modality takes up again to finish it.
func newCall(id string, api generation.APIType, by account.Principal, caller generation.Caller, model string, at time.Time) *Call {
	c := &Call{by: by, caller: caller, begin: time.Now()}
	c.rec = generation.Record{ID: id, RequestID: caller.RequestID, APIType: api, WorkspaceID: by.WorkspaceID,
		KeyHash: by.KeyHash, UserID: by.CreatorUserID, Model: model, Origin: caller.Origin, Referer: caller.Referer,
		UserAgent: caller.UserAgent, ExternalUser: caller.User, DataRegion: "global", CreatedAt: at}
	if caller.SessionID != "" {
		session := caller.SessionID
		c.rec.SessionID = &session
	}
	return c
}

// ID is the call's generation id.
func (c *Call) ID() string { return c.rec.ID }

// attempt records one upstream call.
func (c *Call) attempt(ep catalog.Endpoint, status int, took time.Duration, reason, raw, upstreamID string) {
	c.rec.Attempts = append(c.rec.Attempts, generation.Attempt{ProviderName: ep.Provider, EndpointID: ep.Upstream().ID(),
		UpstreamModel: ep.UpstreamModel, UpstreamID: upstreamID, Status: status, Latency: took, Error: reason, Raw: raw})
}

// fail fills in the record and content of a failed call.
func (c *Call) fail(content *generation.Content, err error) {
	status := domain.StatusOf(err)
	c.rec.Status, c.rec.FinishReason = status, "error"
	f := &generation.Failure{Message: err.Error(), Status: status}
	var de *domain.Error
	if errors.As(err, &de) {
		f.Message = de.Msg
	}
	if n := len(c.rec.Attempts); n > 0 {
		last := c.rec.Attempts[n-1]
		c.rec.ProviderName = last.ProviderName
		f.ProviderName = &last.ProviderName
		if last.Raw != "" {
			f.Raw = &last.Raw
		}
		f.Previous = c.rec.Attempts[:n-1]
	}
	content.Failure = f
}
