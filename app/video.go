package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// VideoConfig tunes polling: PollInterval is the least time between two polls of one job (a provider's own
// suggestion, when longer, wins); WorkerEvery is how often the background worker looks for jobs due.
type VideoConfig struct {
	PollInterval time.Duration
	WorkerEvery  time.Duration
}

// videoHold is how long a video job's budget reservation may stay unsettled.
const videoHold = 24 * time.Hour

// Videos creates video jobs at providers, follows them to their end — when polled and in the background, so
// jobs complete even when nobody polls — and streams their outputs.
type Videos struct {
	catalog   *catalog.Catalog
	providers ports.Providers
	store     ports.VideoStore
	guard     ports.GuardrailEnforcer
	billing   *Billing
	recorder  ports.GenerationRecorder
	env       Env
	log       *slog.Logger
	cfg       VideoConfig
	started   time.Time

	stop chan struct{}
	done sync.WaitGroup
}

var _ ports.Videos = (*Videos)(nil)

func NewVideos(c *catalog.Catalog, providers ports.Providers, store ports.VideoStore, guard ports.GuardrailEnforcer,
	billing *Billing, recorder ports.GenerationRecorder, env Env, log *slog.Logger, cfg VideoConfig) *Videos {
	return &Videos{catalog: c, providers: providers, store: store, guard: guard, billing: billing, recorder: recorder,
		env: env, log: log, cfg: cfg, started: env.Now(), stop: make(chan struct{})}
}

// Start runs the background worker until Close.
func (v *Videos) Start() {
	v.done.Add(1)
	go func() {
		defer v.done.Done()
		t := time.NewTicker(v.cfg.WorkerEvery)
		defer t.Stop()
		for {
			select {
			case <-v.stop:
				return
			case <-t.C:
				v.PollDue(context.Background())
			}
		}
	}()
}

// Close stops the worker; jobs are stored, so the next start picks them up.
func (v *Videos) Close() {
	close(v.stop)
	v.done.Wait()
}

// PollDue refreshes every running job whose poll is due.
func (v *Videos) PollDue(ctx context.Context) {
	ids, err := v.store.DueJobs(ctx, v.env.Now(), 100)
	if err != nil {
		v.log.ErrorContext(ctx, "list video jobs due", "err", err)
		return
	}
	for _, id := range ids {
		j, err := v.store.Job(ctx, id)
		if err == nil {
			_, err = v.refresh(ctx, j)
		}
		if err != nil {
			v.log.ErrorContext(ctx, "poll video job", "job_id", id, "err", err)
		}
	}
}

func (v *Videos) Models() []ports.VideoModel {
	var out []ports.VideoModel
	for _, m := range v.catalog.List(catalog.Video) {
		out = append(out, ports.VideoModel{Model: m, Created: v.started})
	}
	return out
}

func (v *Videos) Create(ctx context.Context, by account.Principal, req video.Request, info ports.CallInfo) (video.Job, error) {
	if err := req.Validate(); err != nil {
		return video.Job{}, err
	}
	model, err := v.catalog.Model(req.Model)
	if err != nil {
		return video.Job{}, err
	}
	if err := video.CheckModality(model); err != nil {
		return video.Job{}, err
	}
	c := newCall(v.env, generation.Video, by, info, req.Model)
	if req.SessionID != "" {
		c.rec.SessionID = &req.SessionID
	}
	c.rec.ExternalUser = req.User
	fail := func(err error) (video.Job, error) {
		content := &generation.Content{Input: generation.Input{Prompt: &req.Prompt}}
		err = c.fail(content, err)
		c.done()
		v.recorder.Record(ctx, generation.Entry{Record: c.rec, Content: content})
		return video.Job{}, err
	}
	if err := v.billing.Check(ctx, by); err != nil {
		return fail(err)
	}
	seconds := req.Duration
	if seconds == 0 {
		seconds = video.DefaultDuration
	}
	admitted, err := v.guard.Admit(ctx, by, ports.Admission{Model: req.Model, Endpoints: model.Endpoints, Text: req.Prompt,
		Hold: videoHold, Estimate: func(e catalog.Endpoint, _ string) domain.Micros { return video.Cost(e.Pricing, seconds) }})
	if err != nil {
		return fail(err)
	}
	c.rec.Flags = admitted.Flags
	req.Prompt = admitted.Text
	upstreamID, ep, err := route(ctx, c, admitted.Endpoints, req.Options, func(ep catalog.Endpoint, opts map[string]any) (string, string, error) {
		p, err := providerOf[ports.VideoProvider](v.providers, ep.Provider)
		if err != nil {
			return "", "", err
		}
		id, err := p.Submit(ctx, ports.VideoSubmission{UpstreamModel: ep.UpstreamModel, Request: req, Options: opts})
		return id, id, err
	})
	if err != nil {
		v.billing.Charge(ctx, by, 0, admitted.Holds)
		return fail(err)
	}
	now := v.env.Now()
	suffix := strings.ReplaceAll(v.env.NewID(), "-", "")
	j := video.Job{ID: fmt.Sprintf("gen-vid-%d-%s", now.Unix(), suffix[:20]), WorkspaceID: by.WorkspaceID, KeyHash: by.KeyHash,
		UserID: by.CreatorUserID, Model: req.Model, Provider: ep.Provider, UpstreamModel: ep.UpstreamModel,
		UpstreamID: upstreamID, Pricing: ep.Pricing, Status: video.Pending, Request: req, GenerationID: c.id(),
		Holds: admitted.Holds, Flags: admitted.Flags, Attempts: c.rec.Attempts, NextPollAt: now, CreatedAt: now, UpdatedAt: now,
		Caller: video.Caller{RequestID: info.RequestID, Origin: info.Origin, Referer: info.Referer, UserAgent: info.UserAgent,
			SessionID: sessionOf(req, info), User: req.User}}
	if err := v.store.CreateJob(ctx, j); err != nil {
		v.log.ErrorContext(ctx, "store video job; the provider's job is orphaned", "provider", ep.Provider,
			"upstream_id", upstreamID, "err", err)
		return video.Job{}, fmt.Errorf("store video job: %w", err)
	}
	return j, nil
}

func sessionOf(req video.Request, info ports.CallInfo) string {
	if req.SessionID != "" {
		return req.SessionID
	}
	return info.SessionID
}

// job loads a job the caller may see: its workspace's, or any for a management key; others are "not found".
func (v *Videos) job(ctx context.Context, by account.Principal, id string) (video.Job, error) {
	j, err := v.store.Job(ctx, id)
	if err != nil {
		return video.Job{}, err
	}
	if !by.SeesWorkspace(j.WorkspaceID) {
		return video.Job{}, video.ErrNotFound
	}
	return j, nil
}

// Get returns the job, refreshed when a poll is due, with its status as of now (a completed job whose outputs
// have expired reads as expired).
func (v *Videos) Get(ctx context.Context, by account.Principal, id string) (video.Job, error) {
	j, err := v.job(ctx, by, id)
	if err != nil {
		return video.Job{}, err
	}
	if j, err = v.refresh(ctx, j); err != nil {
		return video.Job{}, err
	}
	j.Status = j.StatusAt(v.env.Now())
	return j, nil
}

// refresh polls the provider when the job is running and its poll is due, and records its end when it ends.
// Polls are claimed in the store first, so concurrent callers and replicas never poll one job twice at once,
// and never more often than the interval.
func (v *Videos) refresh(ctx context.Context, j video.Job) (video.Job, error) {
	now := v.env.Now()
	if j.Status.Final() || now.Before(j.NextPollAt) {
		return j, nil
	}
	won, err := v.store.ClaimPoll(ctx, j.ID, now, now.Add(v.cfg.PollInterval))
	if err != nil || !won {
		return j, err
	}
	p, err := providerOf[ports.VideoProvider](v.providers, j.Provider)
	var state ports.VideoState
	if err == nil {
		state, err = p.Poll(context.WithoutCancel(ctx), j.UpstreamID)
	}
	if err != nil {
		ue := asUpstream(err)
		if ue.Retryable {
			v.log.WarnContext(ctx, "video poll failed; will retry", "job_id", j.ID, "err", err)
			return j, nil
		}
		state = ports.VideoState{Status: video.Failed, Error: "the provider no longer has this job: " + ue.Reason}
	}
	ended := false
	updated, err := v.store.UpdateJob(ctx, j.ID, func(j *video.Job) error {
		if j.Status.Final() {
			return nil // someone else recorded the end
		}
		j.UpdatedAt = now
		if state.PollAfter > v.cfg.PollInterval {
			j.NextPollAt = now.Add(state.PollAfter)
		}
		j.Status = state.Status
		if !j.Status.Final() {
			return nil
		}
		ended = true
		j.CompletedAt = &now
		j.Outputs, j.Error, j.ExpiresAt = state.Outputs, state.Error, state.ExpiresAt
		j.Seconds = state.Seconds
		if j.Seconds == 0 {
			j.Seconds = j.Request.Duration
		}
		if j.Seconds == 0 {
			j.Seconds = video.DefaultDuration
		}
		if j.Status == video.Completed {
			j.Cost = video.Cost(j.Pricing, j.Seconds)
		}
		return nil
	})
	if err != nil {
		return j, err
	}
	if ended {
		v.finish(ctx, updated)
	}
	return updated, nil
}

// finish records a job's generation and bills it, once, when it ends.
func (v *Videos) finish(ctx context.Context, j video.Job) {
	rec := generation.Record{ID: j.GenerationID, RequestID: j.Caller.RequestID, UpstreamID: j.UpstreamID,
		APIType: generation.Video, WorkspaceID: j.WorkspaceID, KeyHash: j.KeyHash, UserID: j.UserID, Model: j.Model,
		ProviderName: j.Provider, Origin: j.Caller.Origin, Referer: j.Caller.Referer, UserAgent: j.Caller.UserAgent,
		ExternalUser: j.Caller.User, DataRegion: "global", Flags: j.Flags, Attempts: j.Attempts, CreatedAt: j.CreatedAt,
		TotalCost: j.Cost, UpstreamCost: j.Cost, Status: 200, FinishReason: string(j.Status), NativeFinishReason: string(j.Status),
		Counts: generation.Counts{NumMediaCompletion: int64(len(j.Outputs))}}
	if j.Caller.SessionID != "" {
		rec.SessionID = &j.Caller.SessionID
	}
	if j.CompletedAt != nil {
		rec.GenerationTime = j.CompletedAt.Sub(j.CreatedAt)
		rec.Latency = rec.GenerationTime
	}
	prompt := j.Request.Prompt
	content := &generation.Content{Input: generation.Input{Prompt: &prompt}}
	if j.Status != video.Completed {
		rec.Status = domain.KindUpstream.Status()
		provider := j.Provider
		content.Failure = &generation.Failure{Message: j.Error, Status: domain.KindUpstream.Status(), ProviderName: &provider}
	}
	v.recorder.Record(ctx, generation.Entry{Record: rec, Content: content})
	v.billing.Charge(ctx, account.Principal{KeyHash: j.KeyHash}, j.Cost, j.Holds)
}

// downloadPool holds the buffers that carry video downloads: larger than speech's, as downloads are large and
// fast, so each read and write moves more per system call.
var downloadPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

var errIndex = domain.Invalid("index", "must be an integer of at least 0")

// Content streams an output of a completed job: 409 while it runs, 410 once expired, 404 for an index past the
// outputs, 502 when the provider fails. The provider's URLs and credentials never reach the caller.
func (v *Videos) Content(ctx context.Context, by account.Principal, id, index, byteRange string, sink ports.VideoSink) error {
	n := 0
	if index != "" {
		var err error
		if n, err = parseIndex(index); err != nil {
			return err
		}
	}
	j, err := v.Get(ctx, by, id)
	if err != nil {
		return err
	}
	out, err := j.Output(n, v.env.Now())
	if err != nil {
		return err
	}
	p, err := providerOf[ports.VideoProvider](v.providers, j.Provider)
	if err != nil {
		return downloadError(err)
	}
	content, err := p.Download(ctx, j.UpstreamID, out, byteRange)
	if err != nil {
		return downloadError(err)
	}
	defer content.Body.Close()
	sink.Start(content)
	bufp := downloadPool.Get().(*[]byte)
	defer downloadPool.Put(bufp)
	_, err = pump(sink, content.Body, *bufp, nil)
	if errors.Is(err, errCallerGone) {
		return context.Canceled
	}
	return err
}

func parseIndex(s string) (int, error) {
	if len(s) > 6 || strings.Trim(s, "0123456789") != "" {
		return 0, errIndex
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// downloadError maps a failed download: the provider dropping the file means it expired; a range outside it is
// the caller's; anything else is the provider failing.
func downloadError(err error) error {
	ue := asUpstream(err)
	switch ue.Status {
	case 404, 410:
		return video.ErrExpired.Wrap(err)
	case 416:
		return video.ErrRangeNotValid.Wrap(err)
	}
	return domain.E(domain.KindUpstream, "upstream_failed", "the provider failed to deliver the video: "+ue.Reason).
		With("provider_reason", ue.Reason).Wrap(err)
}
