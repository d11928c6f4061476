package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// VideoConfig tunes polling: PollInterval is the least time between two polls of one job (a provider's own
// suggestion, when longer, wins); WorkerEvery is how often the background worker looks for jobs due; a job still
// running JobTimeout after its creation has failed (DefaultJobTimeout when zero).
type VideoConfig struct {
	PollInterval time.Duration
	WorkerEvery  time.Duration
	JobTimeout   time.Duration
}

// DefaultJobTimeout is how long a job may run when the configuration does not say.
const DefaultJobTimeout = 2 * time.Hour

// holdMargin is how much longer than a job may run its budget reservation may stay unsettled: the job ends (and
// settles it) by its timeout, when a poll or the worker next sees it.
const holdMargin = time.Hour

func (c VideoConfig) jobTimeout() time.Duration { return cmp.Or(c.JobTimeout, DefaultJobTimeout) }

// pollTimeout bounds one poll of the provider. A poll is claimed for the poll interval plus this, so that no
// other replica polls the job while it is in flight, however slow the provider; a replica that dies mid-poll
// holds the job no longer than that.
const pollTimeout = 10 * time.Second

// Videos creates video jobs at providers, follows them to their end — when polled and in the background, so
// jobs complete even when nobody polls — and streams their outputs.
type Videos struct {
	inference *Inference
	catalog   *catalog.Catalog
	providers ports.Providers
	store     ports.VideoStore
	env       Env
	log       *slog.Logger
	cfg       VideoConfig
	started   time.Time
}

var _ ports.VideoService = (*Videos)(nil)

func NewVideos(inference *Inference, c *catalog.Catalog, providers ports.Providers, store ports.VideoStore, env Env,
	log *slog.Logger, cfg VideoConfig) *Videos {
	return &Videos{inference: inference, catalog: c, providers: providers, store: store, env: env, log: log, cfg: cfg,
		started: env.Now()}
}

// Worker follows running jobs in the background, so they complete even when nobody polls; jobs are stored,
// so a stopped worker loses none and the next start picks them up.
func (v *Videos) Worker() Worker {
	return Every("video poller", v.cfg.WorkerEvery, v.PollDue)
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

func (v *Videos) Create(ctx context.Context, by account.Principal, req video.Request, caller generation.Caller) (video.Job, error) {
	vc := &videoCall{videos: v, req: req}
	if _, err := v.inference.Run(ctx, by, caller, vc); err != nil {
		return video.Job{}, err
	}
	return vc.job, nil
}

// videoCall is the creation of one video job in the pipeline: the call is pending once the provider has accepted
// the job and the job is stored, and ends when the job does (finished).
type videoCall struct {
	videos     *Videos
	req        video.Request
	caps       *catalog.VideoCaps // what the model takes, when configured
	upstreamID string
	job        video.Job
}

// Spec validates the request, and refuses what the model's configuration says it does not take before anything
// is reserved or sent.
func (vc *videoCall) Spec() (Spec, error) {
	if err := vc.req.Validate(); err != nil {
		return Spec{}, err
	}
	r := vc.req
	if m, err := vc.videos.catalog.Model(r.Model); err == nil && m.Video != nil {
		if err := r.Fits(*m.Video); err != nil {
			return Spec{}, err
		}
		vc.caps = m.Video
	}
	return Spec{API: generation.Video, Modality: catalog.Video, Model: r.Model, Texts: []string{r.Prompt}, Options: r.Options,
		SessionID: r.SessionID, User: r.User, Hold: vc.videos.cfg.jobTimeout() + holdMargin}, nil
}

func (vc *videoCall) Input(texts []string) (generation.Input, generation.Counts) {
	return generation.Input{Prompt: &texts[0]}, generation.Counts{}
}

// Estimate prices the duration, resolution and sound asked for, or the model's defaults.
func (vc *videoCall) Estimate(ep catalog.Endpoint, _ []string) domain.Micros {
	return video.PlanOf(vc.req, vc.caps, ep.Pricing).Cost(0)
}

// Open submits the job.
func (vc *videoCall) Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (string, error) {
	p, err := providerOf[ports.VideoProvider](vc.videos.providers, ep)
	if err != nil {
		return "", err
	}
	vc.req.Prompt = texts[0]
	vc.upstreamID, err = p.Submit(ctx, ports.VideoSubmission{UpstreamModel: ep.UpstreamModel, Request: vc.req, Options: opts})
	return vc.upstreamID, err
}

// Deliver stores the job, with what its end needs of the call: the generation id, the attempts and the holds.
func (vc *videoCall) Deliver(ctx context.Context, c *Call) Delivery {
	v, ep, now := vc.videos, c.endpoint, vc.videos.env.Now()
	// The job keeps the price of a second of its own video (its resolution, its sound) and the seconds expected.
	plan := video.PlanOf(vc.req, vc.caps, ep.Pricing)
	j := video.Job{ID: video.NewJobID(now, v.env.NewID()), WorkspaceID: c.by.WorkspaceID,
		KeyHash: c.by.KeyHash, UserID: c.by.CreatorUserID, Model: vc.req.Model, Provider: ep.Provider,
		UpstreamModel: ep.UpstreamModel, UpstreamID: vc.upstreamID, Pricing: catalog.Pricing{PerSecond: plan.PerSecond},
		Seconds: plan.Seconds, Status: video.Pending,
		Request: vc.req, GenerationID: c.ID(), Holds: c.holds, Flags: c.rec.Flags, Attempts: c.rec.Attempts,
		Caller: c.caller, NextPollAt: now, CreatedAt: now, UpdatedAt: now}
	if err := v.store.CreateJob(ctx, j); err != nil {
		v.log.ErrorContext(ctx, "store video job; the provider's job is orphaned", "provider", ep.Provider,
			"upstream_id", vc.upstreamID, "err", err)
		return Delivery{Err: fmt.Errorf("store video job: %w", err)}
	}
	vc.job = j
	return Delivery{Pending: true}
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

// List pages through the jobs the caller sees: an inference key its own workspace's only. Jobs are not refreshed
// (a page would poll the provider for every running job on it); each shows its status as of now.
func (v *Videos) List(ctx context.Context, by account.Principal, f ports.VideoFilter) (ports.VideoPage, error) {
	if !by.Management {
		f.WorkspaceID = by.WorkspaceID
	}
	page, err := v.store.ListJobs(ctx, f)
	if err != nil {
		return ports.VideoPage{}, err
	}
	now := v.env.Now()
	for i := range page.Jobs {
		page.Jobs[i].Status = page.Jobs[i].StatusAt(now)
	}
	return page, nil
}

// refresh polls the provider when the job is running and its poll is due, and finishes the job when the poll
// says it has ended, or as failed when it is still running past the job timeout.
// Polls are claimed in the store first, so concurrent callers and replicas never poll one job twice at once,
// and never more often than the interval: the claim outlasts the poll, and the poll's end sets the next one.
func (v *Videos) refresh(ctx context.Context, j video.Job) (video.Job, error) {
	now := v.env.Now()
	if j.Status.Final() || now.Before(j.NextPollAt) {
		return j, nil
	}
	won, err := v.store.ClaimPoll(ctx, j.ID, now, now.Add(v.cfg.PollInterval+pollTimeout))
	if err != nil || !won {
		return j, err
	}
	p, err := providerOf[ports.VideoProvider](v.providers, catalog.Endpoint{Provider: j.Provider})
	var state ports.VideoState
	if err == nil {
		pollCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pollTimeout)
		state, err = p.Poll(pollCtx, j.UpstreamID)
		cancel()
	}
	next := now.Add(max(v.cfg.PollInterval, state.PollAfter))
	if timeout := v.cfg.jobTimeout(); !state.Status.Final() && now.Sub(j.CreatedAt) >= timeout {
		state = ports.VideoState{Status: video.Failed,
			Error: fmt.Sprintf("the provider did not finish the job within %s", timeout)}
		err = nil
	}
	if err != nil {
		ue := asUpstream(err)
		if ue.Retryable {
			v.log.WarnContext(ctx, "video poll failed; will retry", "job_id", j.ID, "err", err)
			return v.store.UpdateJob(ctx, j.ID, func(j *video.Job) error {
				j.NextPollAt = next
				return nil
			})
		}
		state = ports.VideoState{Status: video.Failed, Error: "the provider no longer has this job: " + ue.Reason}
	}
	end := func(j *video.Job) {
		j.UpdatedAt, j.NextPollAt = now, next
		j.Status = state.Status
		if !j.Status.Final() {
			return
		}
		j.CompletedAt = &now
		j.Outputs, j.Error, j.ExpiresAt = state.Outputs, state.Error, state.ExpiresAt
		if j.ExpiresAt == nil && state.Retention > 0 {
			expires := now.Add(state.Retention)
			j.ExpiresAt = &expires
		}
		j.Seconds = cmp.Or(state.Seconds, j.Seconds, j.Request.Duration, video.DefaultDuration)
		if j.Status == video.Completed {
			j.Cost = video.Plan{PerSecond: j.Pricing.PerSecond}.Cost(j.Seconds)
		}
	}
	// The end is the job's, not its caller's: a caller who leaves during the poll (a download, a GET) does not make
	// the job's record a cancelled call, nor keep its end from being stored.
	ctx = context.WithoutCancel(ctx)
	if state.Status.Final() {
		// The job's generation is made durable before its end is stored, so that a gateway stopped between the two
		// (kill -9) leaves the job running: the next poll finishes it again, and the store writes the record given
		// twice once, by its id, with its charges.
		ended := j
		end(&ended)
		v.finished(ctx, ended)
	}
	updated, err := v.store.UpdateJob(ctx, j.ID, func(j *video.Job) error {
		if !j.Status.Final() { // else someone else recorded the end
			end(j)
		}
		return nil
	})
	if err != nil {
		return j, err
	}
	return updated, nil
}

// errJobFailed is how a job that did not complete ends its generation: the provider's failure.
var errJobFailed = domain.E(domain.KindUpstream, "video_failed", "")

// finished is the one way a job ends, whoever sees it end first — a poll, the worker or a download: the job's
// call is taken up again and finished by the pipeline, which records its generation and settles its holds.
func (v *Videos) finished(ctx context.Context, j video.Job) {
	by := account.Principal{WorkspaceID: j.WorkspaceID, KeyHash: j.KeyHash, CreatorUserID: j.UserID}
	c := newCall(j.GenerationID, generation.Video, by, j.Caller, j.Model, j.CreatedAt)
	c.rec.ProviderName, c.rec.UpstreamID, c.rec.Attempts, c.rec.Flags = j.Provider, j.UpstreamID, j.Attempts, j.Flags
	c.holds, c.texts = j.Holds, []string{j.Request.Prompt}
	c.input, c.counts = (&videoCall{req: j.Request}).Input(c.texts)
	if j.CompletedAt != nil {
		c.rec.GenerationTime = j.CompletedAt.Sub(j.CreatedAt)
		c.rec.Latency = c.rec.GenerationTime
	}
	c.timed = true
	d := Delivery{Cost: j.Cost, FinishReason: string(j.Status), Counts: generation.Counts{NumMediaCompletion: int64(len(j.Outputs))}}
	if j.Status != video.Completed {
		d.Err = errJobFailed.WithMsg(j.Error)
	}
	_ = v.inference.finish(ctx, c, d)
}

// Content streams an output of a job: 409 while it runs, 410 once expired, 404 for an index past the outputs,
// 502 when the provider fails. The provider's URLs and credentials never reach the caller.
func (v *Videos) Content(ctx context.Context, by account.Principal, id string, index int, byteRange string, sink ports.VideoSink) error {
	j, err := v.job(ctx, by, id)
	if err != nil {
		return err
	}
	// The download may be the first to see the job end: it finishes it as a poll would.
	if j, err = v.refresh(ctx, j); err != nil {
		return err
	}
	out, err := j.Output(index, v.env.Now())
	if err != nil {
		return err
	}
	p, err := providerOf[ports.VideoProvider](v.providers, catalog.Endpoint{Provider: j.Provider})
	if err != nil {
		return downloadFailed(err)
	}
	content, err := p.Download(ctx, j.UpstreamID, out, byteRange)
	if err != nil {
		return downloadFailed(err)
	}
	defer content.Body.Close()
	// The answer begins with the content's first bytes, not with its headers: a provider that goes quiet before
	// them is a 524 (or the failure it is), as any call whose upstream fails before its answer.
	bufp := downloadPool.Get().(*[]byte)
	defer downloadPool.Put(bufp)
	first, ended, err := firstBytes(content.Body, *bufp, content.Status, "video")
	if err != nil {
		if callerLeft(ctx, err) {
			return context.Canceled
		}
		return downloadFailed(err)
	}
	sink.Start(content)
	_, err = pump(sink, content.Body, *bufp, first, ended)
	if callerLeft(ctx, err) {
		return context.Canceled
	}
	return err
}

// downloadFailed is the caller's error for a download that did not start: what the adapter classified (an
// expired file, a range outside it) as it is, a timeout as a timeout (524), and any other failure the provider's.
func downloadFailed(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	ue := asUpstream(err)
	kind, code := domain.KindUpstream, "upstream_failed"
	if ue.Kind == domain.KindTimeout { // 524, as for every other call that times out
		kind, code = domain.KindTimeout, "upstream_timeout"
	}
	return domain.E(kind, code, "the provider failed to deliver the video: "+ue.Reason).
		With("provider_reason", ue.Reason).Wrap(err)
}
