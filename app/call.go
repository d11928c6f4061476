package app

import (
	"errors"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// call accumulates the generation record of one inference call as it goes.
type call struct {
	rec      generation.Record
	by       account.Principal
	begin    time.Time
	failures []*ports.UpstreamError
	endpoint *catalog.Endpoint // the endpoint that answered, if one did
	outBytes int64
	format   speech.Format
}

func newCall(env Env, api generation.APIType, by account.Principal, info ports.CallInfo, model string) *call {
	now := env.Now()
	c := &call{by: by, begin: time.Now()}
	c.rec = generation.Record{ID: generation.NewID(now, env.NewID()), RequestID: info.RequestID, APIType: api,
		WorkspaceID: by.WorkspaceID, KeyHash: by.KeyHash, UserID: by.CreatorUserID, Model: model, Origin: info.Origin,
		Referer: info.Referer, UserAgent: info.UserAgent, DataRegion: "global", CreatedAt: now}
	if info.SessionID != "" {
		c.rec.SessionID = &info.SessionID
	}
	return c
}

func (c *call) id() string { return c.rec.ID }

// attempt records one upstream call.
func (c *call) attempt(ep catalog.Endpoint, status int, took time.Duration, reason, raw, upstreamID string) {
	id := ep.Provider
	if ep.UpstreamModel != "" {
		id += "/" + ep.UpstreamModel
	}
	c.rec.Attempts = append(c.rec.Attempts, generation.Attempt{ProviderName: ep.Provider, EndpointID: id,
		UpstreamModel: ep.UpstreamModel, UpstreamID: upstreamID, Status: status, Latency: took, Error: reason, Raw: raw})
}

// fail fills in the record and content of a failed call and returns the error for the caller.
func (c *call) fail(content *generation.Content, err error) error {
	status := domain.StatusOf(err)
	c.rec.Status, c.rec.FinishReason = status, "error"
	if len(c.rec.Attempts) > 0 {
		c.rec.ProviderName = c.rec.Attempts[len(c.rec.Attempts)-1].ProviderName
	}
	f := &generation.Failure{Message: err.Error(), Status: status}
	var de *domain.Error
	if errors.As(err, &de) {
		f.Message = de.Msg
	}
	if n := len(c.rec.Attempts); n > 0 {
		last := c.rec.Attempts[n-1]
		f.ProviderName = &last.ProviderName
		if last.Raw != "" {
			f.Raw = &last.Raw
		}
		f.Previous = c.rec.Attempts[:n-1]
	}
	content.Failure = f
	return err
}

func (c *call) done() {
	c.rec.GenerationTime = time.Since(c.begin)
	c.rec.NativeFinishReason = c.rec.FinishReason
}
