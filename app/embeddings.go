package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// Embeddings turns texts into vectors: each call goes through the inference pipeline, and returns the vectors of
// the first endpoint that answers with them.
type Embeddings struct {
	inference *Inference
	providers ports.Providers
	log       *slog.Logger
	metrics   ports.Metrics
}

var _ ports.EmbeddingService = (*Embeddings)(nil)

func NewEmbeddings(inference *Inference, providers ports.Providers, log *slog.Logger, metrics ports.Metrics) *Embeddings {
	return &Embeddings{inference: inference, providers: providers, log: log, metrics: metrics}
}

// embeddingHold is how long a call's budget reservation may stay unsettled.
const embeddingHold = 5 * time.Minute

func (s *Embeddings) Embed(ctx context.Context, by account.Principal, req embedding.Request, caller generation.Caller,
	sink ports.EmbeddingSink) (string, error) {
	return s.inference.Run(ctx, by, caller, &embeddingCall{svc: s, req: req, sink: sink})
}

// embeddingCall is one embeddings call in the pipeline. The whole answer comes in Open: an upstream that fails
// before it has sent every vector may still fail over.
type embeddingCall struct {
	svc  *Embeddings
	req  embedding.Request
	sink ports.EmbeddingSink
	// got is the answer of the endpoint that answered, once Open has it.
	got ports.Embeddings
}

func (s *embeddingCall) Spec() (Spec, error) {
	if err := s.req.Validate(); err != nil {
		return Spec{}, err
	}
	r := s.req
	spec := Spec{API: generation.Embeddings, Modality: catalog.Embeddings, Model: r.Model, Texts: r.Texts(), Options: r.Options,
		SessionID: r.SessionID, User: r.User, Hold: embeddingHold, Route: r.Route}
	if r.Route.RequireParameters {
		spec.Parameters = r.Parameters()
	}
	return spec, nil
}

// Input keeps each input as a user message (a token array as its list of ids); tokens are counted by the upstream,
// at the end. The vectors are not kept.
func (s *embeddingCall) Input(texts []string) (generation.Input, generation.Counts) {
	inputs := s.req.WithTexts(texts).Inputs
	msgs := make([]generation.Message, len(inputs))
	for i, in := range inputs {
		msgs[i] = generation.Message{Role: "user", Content: in.String()}
	}
	return generation.Input{Messages: msgs}, generation.Counts{}
}

func (s *embeddingCall) Estimate(ep catalog.Endpoint, texts []string) domain.Micros {
	return s.req.WithTexts(texts).Estimate(ep.Pricing)
}

// Open asks one endpoint for the vectors and waits for all of them.
func (s *embeddingCall) Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (string, error) {
	p, err := providerOf[ports.EmbeddingProvider](s.svc.providers, ep)
	if err != nil {
		return "", err
	}
	got, err := p.Embed(ctx, ports.EmbedRequest{UpstreamModel: ep.UpstreamModel, Inputs: s.req.WithTexts(texts).Inputs,
		Dimensions: s.req.Dimensions, Options: opts})
	if err != nil {
		return "", err
	}
	if len(got.Vectors) != len(s.req.Inputs) {
		return "", &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider answered with another number of embeddings than inputs"}
	}
	for _, v := range got.Vectors {
		if len(v) == 0 { // no model's embedding has no dimension: a vector lost on the way
			return "", &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "the provider answered with an empty embedding"}
		}
	}
	s.got = got
	return got.UpstreamID, nil
}

// Deliver prices the call (embedding.Request.Bill: the upstream's count of the input tokens when it is plausible)
// and writes the vectors. A caller who left meanwhile pays for them: the upstream made them.
func (s *embeddingCall) Deliver(ctx context.Context, c *Call) Delivery {
	req := s.req.WithTexts(c.texts)
	b := req.Bill(c.endpoint.Pricing, s.got.PromptTokens)
	d := Delivery{Cost: b.Cost, Counts: generation.Counts{TokensPrompt: b.Tokens, NativeTokensPrompt: b.Tokens}}
	if b.Implausible {
		d.Counts.NativeTokensPrompt = *s.got.PromptTokens
		flagImplausible(ctx, s.svc.log, s.svc.metrics, c, &d, "reported_prompt_tokens", *s.got.PromptTokens,
			"billed_prompt_tokens", b.Tokens)
	}
	if err := s.sink.Write(ports.EmbeddingAnswer{GenerationID: c.ID(), Model: s.req.Model, Provider: c.endpoint.Provider,
		Vectors: s.got.Vectors, Format: s.req.Format, PromptTokens: b.Tokens, Cost: b.Cost}); err != nil {
		d.Err = errCallerGone
	}
	return d
}

// flagImplausible marks a delivery whose upstream reported a usage the call could not have used (billed at the
// gateway's estimate instead): the record's flag, the metric, and a warning naming the counts reported and billed.
func flagImplausible(ctx context.Context, log *slog.Logger, metrics ports.Metrics, c *Call, d *Delivery, counts ...any) {
	d.Flags = append(d.Flags, generation.FlagUsageImplausible)
	metrics.ImplausibleUsage(c.endpoint.Provider, c.rec.Model)
	log.WarnContext(ctx, "an upstream reported a usage the call could not have used: billed at the gateway's estimate",
		append([]any{"generation_id", c.ID(), "provider", c.endpoint.Provider, "model", c.rec.Model}, counts...)...)
}
