package app

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/routing"
	"github.com/switchboard-ai/switchboard/ports"
)

// Inference is the pipeline every inference call goes through, whatever its modality; it owns the life of one
// upstream call. It validates the request, looks the model up, admits the call (the guardrails, which may narrow
// the endpoints, redact the text and reserve budget as holds, then the key's limit and the organization's credits),
// routes it to the model's endpoints in order with failover, lets the modality deliver the answer, and finishes
// it: the generation record, and the settlement of the holds at what the call cost.
//
// What differs between speech, video and the modalities to come is the Modality a call plugs in.
type Inference struct {
	catalog  *catalog.Catalog
	billing  *Billing
	recorder ports.GenerationRecorder
	metrics  ports.Metrics
	env      Env
	router   *Router
	tokens   *TokenMeter
}

func NewInference(c *catalog.Catalog, billing *Billing, recorder ports.GenerationRecorder, metrics ports.Metrics, env Env,
	router *Router, tokens *TokenMeter) *Inference {
	return &Inference{catalog: c, billing: billing, recorder: recorder, metrics: metrics, env: env, router: router, tokens: tokens}
}

// Modality is one call of some modality as it plugs into the pipeline: the caller's request, and how to call a
// provider with it, estimate it, deliver the answer and price it. One value serves one call: Open keeps what it
// got for Deliver.
type Modality interface {
	// Spec validates the request, applying its defaults, and returns what the pipeline reads of it.
	Spec() (Spec, error)
	// Input is what the generation's content keeps of the request, given the texts that go upstream, with the
	// counts known before the call.
	Input(texts []string) (generation.Input, generation.Counts)
	// Estimate is the most the call may cost on an endpoint, reserved against budgets before the call.
	Estimate(ep catalog.Endpoint, texts []string) domain.Micros
	// Open calls one endpoint with the admitted texts and the endpoint's passthrough options, and returns once
	// the upstream has answered — sent the first bytes or first token of a stream, accepted a job — with the
	// upstream's id for the answer. A failure before then may fail over to the next endpoint; none after it can.
	Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (upstreamID string, err error)
	// Deliver hands what Open got to the caller, and reports how that went and what it cost.
	Deliver(ctx context.Context, c *Call) Delivery
}

// Spec is what the pipeline reads of a request, whatever its modality.
type Spec struct {
	API      generation.APIType
	Modality catalog.Modality
	Model    string
	// Texts are what the guardrails scan, and may redact, before they go upstream: speech input, video prompt,
	// the text parts of chat messages; the last Fixed of them they scan but cannot rewrite (what a chat message's
	// part passed on as it came carries).
	Texts []string
	Fixed int
	// Options is provider.options: passthrough objects keyed by provider slug.
	Options map[string]any
	// SessionID and User are the request body's.
	SessionID, User string
	Streamed        bool
	// Hold is how long the call's budget reservations may stay unsettled.
	Hold time.Duration
	// PresetID is the preset the request was made from, if any.
	PresetID *string
	// Route is the caller's routing preferences (the reference's provider object), which narrow and order the
	// model's endpoints; Parameters are the request's parameters, which provider.require_parameters needs.
	Route      routing.Preferences
	Parameters []string
}

// Delivery is how a call's answer went, as its modality reports it.
type Delivery struct {
	// Err is nil when the answer was delivered whole; otherwise the failure the caller gets, or, when the caller
	// left (callerLeft), whatever failure that caused.
	Err error
	// Cost is what the caller pays for what was delivered: 0 when the call is not billed. CacheDiscount is what
	// prompt caching took off it, nil when the call read and wrote no cache.
	Cost          domain.Micros
	CacheDiscount *domain.Micros
	// Counts are what delivery measured, added to the request's own.
	Counts generation.Counts
	// FinishReason is the modality's word for how the call ended, when it has one ("stop" otherwise), and
	// NativeFinishReason the upstream's own (FinishReason when empty).
	FinishReason, NativeFinishReason string
	// Output is what the generation's content keeps of the answer.
	Output generation.Output
	// Flags are the modality's flags on the record (generation.FlagUsageImplausible), beside the guardrails'.
	Flags []string
	// Pending means the call goes on after this request — a video job — and its modality finishes it later.
	Pending bool
}

// Run takes one call through the pipeline and returns its generation id, also when the call fails: every call
// that gets as far as naming a model it may use leaves a record.
func (p *Inference) Run(ctx context.Context, by account.Principal, caller generation.Caller, m Modality) (string, error) {
	spec, err := m.Spec()
	if err != nil {
		return "", err
	}
	model, err := p.model(&spec)
	if err != nil {
		return "", err
	}
	if err := model.Serves(spec.Modality); err != nil {
		return "", err
	}
	plan, err := p.router.Plan(model.ID, spec.Route, spec.Parameters, model.Endpoints)
	if err != nil {
		return "", err
	}
	if err := p.recorder.Accepting(); err != nil {
		return "", err
	}
	now := p.env.Now()
	c := newCall(generation.NewID(now, p.env.NewID()), spec.API, by, caller.WithBody(spec.SessionID, spec.User), model.ID, now)
	c.rec.Streamed, c.rec.PresetID = spec.Streamed, spec.PresetID
	c.metered = spec.Modality.CountsTokens()
	c.input, c.counts = m.Input(spec.Texts)
	endpoints, err := p.router.Candidates(model.ID, plan)
	if err != nil { // every endpoint skipped for its health: a failed call, with its record
		return c.ID(), p.finish(ctx, c, Delivery{Err: err})
	}
	admitted, err := p.billing.Admit(ctx, by, ports.Admission{ID: c.ID(), Model: model.ID, Endpoints: endpoints, Texts: spec.Texts, Fixed: spec.Fixed,
		Estimate: m.Estimate, Hold: spec.Hold})
	if err != nil {
		return c.ID(), p.finish(ctx, c, Delivery{Err: err})
	}
	c.texts, c.holds, c.rec.Flags = admitted.Texts, admitted.Holds, admitted.Flags
	p.metrics.Holds(len(c.holds))
	defer p.metrics.Holds(-len(c.holds)) // settled by finish, or stored with a pending job
	defer func() {
		// A panic while routing or delivering (a bug in a modality or an adapter) still ends the call as every
		// call ends: recorded, as an internal error that costs nothing, with its holds settled, instead of a call
		// without a record whose holds stay reserved until they expire. The panic then goes on to the HTTP layer,
		// with the frames that raised it still on the stack.
		if v := recover(); v != nil {
			if !c.ended {
				_ = p.finish(ctx, c, Delivery{Err: errPanicked})
			}
			panic(v)
		}
	}()
	if !slices.Equal(c.texts, spec.Texts) { // the guardrails redacted: the record keeps what went upstream
		c.input, c.counts = m.Input(c.texts)
	}
	if err := p.route(ctx, c, m, admitted.Endpoints, spec.Options); err != nil {
		return c.ID(), p.finish(ctx, c, Delivery{Err: err})
	}
	c.rec.Latency = time.Since(c.begin)
	p.overhead(ctx, spec.Modality, c)
	d := m.Deliver(ctx, c)
	if d.Pending {
		return c.ID(), nil
	}
	return c.ID(), p.finish(ctx, c, d)
}

// Endpoints are the endpoints a call of spec (its model, modality, routing preferences and texts) would try, in
// order, as Run plans them and the caller's guardrails leave them, with the texts as they leave them (redacted):
// for what reaches an upstream without being a call (a token count), no budget reserved. An error when the model is
// unknown, serves not the modality, has no endpoint to try, or the guardrails refuse.
func (p *Inference) Endpoints(ctx context.Context, by account.Principal, spec Spec) ([]catalog.Endpoint, []string, error) {
	m, err := p.model(&spec)
	if err != nil {
		return nil, nil, err
	}
	if err := m.Serves(spec.Modality); err != nil {
		return nil, nil, err
	}
	plan, err := p.router.Plan(m.ID, spec.Route, nil, m.Endpoints)
	if err != nil {
		return nil, nil, err
	}
	eps, err := p.router.Candidates(m.ID, plan)
	if err != nil {
		return nil, nil, err
	}
	screened, err := p.billing.guard.Screen(ctx, by, ports.Admission{Model: m.ID, Endpoints: eps, Texts: spec.Texts, Fixed: spec.Fixed})
	return screened.Endpoints, screened.Texts, err
}

// model is the catalog model the request names: the model of that id, or, for an id the catalog does not hold, the
// model a routing variant names (":floor", ":nitro"), whose sort the call takes unless it names one.
func (p *Inference) model(spec *Spec) (catalog.Model, error) {
	model, err := p.catalog.Model(spec.Model)
	if err == nil {
		return model, nil
	}
	if id, sort, ok := routing.Variant(spec.Model); ok {
		if model, verr := p.catalog.Model(id); verr == nil {
			if spec.Route.Sort == routing.Configured {
				spec.Route.Sort = sort
			}
			return model, nil
		}
	}
	return catalog.Model{}, err
}

// route tries the endpoints in order until one answers. Every attempt is recorded on c, and teaches the router
// the endpoint's health; an endpoint whose breaker skips it is not tried. A failure another endpoint might not
// have moves on, any other stops; after a failure other than a rate limit, the failed endpoint's other accounts
// are passed over (they would fail alike). When none answers, the error is what the caller gets.
func (p *Inference) route(ctx context.Context, c *Call, m Modality, endpoints []catalog.Endpoint, options map[string]any) error {
	var failed catalog.Upstream
	skipped := 0
	for i, ep := range endpoints {
		if ep.Upstream() == failed {
			continue
		}
		opts, err := catalog.PassThrough(options, ep.Provider)
		if err != nil {
			return err
		}
		probe, ok := p.router.begin(ep)
		if !ok { // another call is probing it
			skipped++
			continue
		}
		begin := time.Now()
		upstreamID, err := m.Open(ctx, ep, c.texts, opts)
		took := time.Since(begin)
		p.router.attempted(ep, probe, took, err, ctx.Err() != nil)
		if err == nil {
			p.metrics.Upstream(ep.Provider, c.rec.Model, ports.UpstreamOK, took)
			c.attempt(ep, generation.StatusOK, took, "", "", upstreamID)
			c.rec.ProviderName, c.rec.UpstreamID = ep.Provider, upstreamID
			c.endpoint = &ep
			return nil
		}
		if ctx.Err() != nil { // the caller went away
			c.rec.Cancelled = true
			return ctx.Err()
		}
		ue := asUpstream(err)
		p.metrics.Upstream(ep.Provider, c.rec.Model, ue.Outcome(), took)
		c.attempt(ep, ue.Status, took, ue.Reason, ue.Raw, "")
		c.failures = append(c.failures, ue)
		if !ue.Retryable {
			break
		}
		if ue.Kind != domain.KindRateLimited {
			failed = ep.Upstream()
		}
		if i < len(endpoints)-1 {
			p.metrics.Failover(ep.Provider, c.rec.Model)
		}
	}
	if len(c.failures) == 0 && skipped > 0 {
		return unhealthy(c.rec.Model, time.Second)
	}
	return failedOver(c.rec.Model, c.failures)
}

// overhead reports the time the gateway added before the answer could start: from the request's arrival until
// an endpoint answered, less the time spent waiting for upstreams.
func (p *Inference) overhead(ctx context.Context, mod catalog.Modality, c *Call) {
	arrived, ok := ports.Arrival(ctx)
	if !ok {
		return
	}
	d := time.Since(arrived)
	for _, a := range c.rec.Attempts {
		d -= a.Latency
	}
	p.metrics.Overhead(string(mod), d)
}

// finish is the one end of every call: it completes the generation record — status, counts, cost, content and
// failure — and hands it to the recorder with the call's holds: the entry books the key's usage and the credits
// and settles the holds at the cost of what was delivered. It returns the error the caller gets.
func (p *Inference) finish(ctx context.Context, c *Call, d Delivery) error {
	c.ended = true
	content := &generation.Content{Input: c.input, Output: d.Output}
	err := d.Err
	// The request ended under the call (its caller left, or the shutdown cut it) and the modality did not answer
	// it with a failure of its own already (a shutdown's 503).
	gone := callerLeft(ctx, err) && !errors.Is(err, domain.ErrShutdown)
	switch {
	case err == nil:
		c.rec.Status, c.rec.FinishReason = generation.StatusOK, cmp.Or(d.FinishReason, "stop")
	case gone && shutdownCut(ctx):
		// The gateway's own shutdown cut the call, not its caller, who is told so: a 503 when the answer had not
		// begun, the end of the answer otherwise (billed for what was delivered).
		err, c.rec.Cancelled = domain.ErrShutdown, false
		if c.endpoint == nil {
			c.fail(content, err)
		} else {
			c.rec.Status = generation.StatusOK
		}
		c.rec.FinishReason = "shutdown"
	case gone:
		c.rec.Status, c.rec.FinishReason, c.rec.Cancelled = generation.StatusClientClosed, "cancelled", true
		if c.endpoint != nil { // the answer had begun: the caller got a 200
			c.rec.Status = generation.StatusOK
		}
		err = context.Canceled // nobody is there to be told what failed
	default:
		c.fail(content, err)
		c.rec.FinishReason = cmp.Or(d.FinishReason, c.rec.FinishReason)
	}
	c.rec.Flags = append(c.rec.Flags, d.Flags...)
	c.rec.Counts = c.counts.Add(d.Counts)
	c.rec.TotalCost, c.rec.UpstreamCost, c.rec.CacheDiscount = d.Cost, d.Cost, d.CacheDiscount
	if !c.timed {
		c.rec.GenerationTime = time.Since(c.begin)
	}
	c.rec.NativeFinishReason = cmp.Or(d.NativeFinishReason, c.rec.FinishReason)
	if c.endpoint != nil {
		broke := d.Err != nil && !callerLeft(ctx, d.Err) && !errors.Is(d.Err, domain.ErrShutdown)
		p.router.delivered(*c.endpoint, c.rec.Counts.TokensCompletion, c.rec.GenerationTime-c.rec.Latency, broke)
	}
	p.recorder.Record(ctx, generation.Entry{Record: c.rec, Content: content, Holds: c.holds})
	if c.metered {
		p.tokens.spend(ctx, c.by, c.rec.Counts.TokensPrompt+c.rec.Counts.TokensCompletion)
	}
	return err
}

// errPanicked is what the record of a call cut short by a panic says.
var errPanicked = domain.E(domain.KindInternal, "internal_error", "internal server error")

// shutdownCut reports a request cut by the gateway's own shutdown timeout rather than by its caller.
func shutdownCut(ctx context.Context) bool { return errors.Is(context.Cause(ctx), domain.ErrShutdown) }
