package app

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// Chat is chat completions: each call is made from its preset, when it names one, goes through the inference
// pipeline, and streams the answer of the first endpoint that sends a token.
type Chat struct {
	inference *Inference
	providers ports.Providers
	presets   *Presets
	env       Env
	// maxBody is the bound on a request body's bytes (server.max_body_bytes), which a request laid over a preset
	// is held to as the caller's own is.
	maxBody int64
}

var _ ports.ChatService = (*Chat)(nil)

func NewChat(inference *Inference, providers ports.Providers, presets *Presets, env Env, maxBody int64) *Chat {
	return &Chat{inference: inference, providers: providers, presets: presets, env: env, maxBody: maxBody}
}

// chatHold is how long a call's budget reservation may stay unsettled.
const chatHold = 30 * time.Minute

func (s *Chat) Complete(ctx context.Context, by account.Principal, body ports.ChatBody, caller generation.Caller, sink ports.ChatSink) (string, error) {
	ref, err := body.Preset()
	if err != nil {
		return "", err
	}
	var presetID *string
	var system chat.SystemPrompt
	if ref != nil {
		if presetID, system, err = s.applyPreset(ctx, by, body, *ref); err != nil {
			return "", err
		}
	}
	req, err := body.Request()
	if err != nil {
		return "", err
	}
	if req, err = req.WithSystem(system); err != nil {
		return "", err
	}
	// Each model of the fallback list is a call of its own through the pipeline — admitted on its own (the
	// guardrails, budgets and limits judge that model), with its own generation record — tried until one
	// answers. The caller gets the last call's id and, when every one failed, the last failure.
	var id string
	for i, model := range append([]string{req.Model}, req.Fallbacks...) {
		req.Model = model
		call := &chatCall{req: req, presetID: presetID, providers: s.providers, sink: sink, env: s.env}
		id, err = s.inference.Run(ctx, by, caller, call)
		if err == nil || call.delivering || i == len(req.Fallbacks) || !fallsBack(err) {
			return id, err
		}
	}
	return id, err
}

// fallsBack reports a failure of one model that the next model of the fallback list may not have: the model
// unknown or not routable (404), refused for that model by a guardrail (403: its model or provider filters,
// or its budget at that model's price), or its providers failing or refusing the input (too long a context
// for that model, say) before the answer began. The caller's own errors (400s of the gateway, blocked
// content), 402s (credits, the key's limit), a caller gone and the gateway's own failures do not.
func fallsBack(err error) bool {
	if callerLeft(err) {
		return false
	}
	var e *domain.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case domain.KindNotFound, domain.KindForbidden, domain.KindRateLimited, domain.KindUpstream, domain.KindTimeout,
		domain.KindOverloaded:
		return true
	case domain.KindInvalid:
		return e.Code == "upstream_rejected_input"
	}
	return false
}

// applyPreset lays the body over the preset's version it names, and returns that version's system prompt, laid
// once the request is decoded (chat.Request.WithSystem).
func (s *Chat) applyPreset(ctx context.Context, by account.Principal, body ports.ChatBody, ref chat.PresetRef) (*string, chat.SystemPrompt, error) {
	scope := ports.PresetScope{By: by, Slug: ref.Slug}
	p, v, err := s.presets.Get(ctx, scope)
	if errors.Is(err, preset.ErrNotFound) {
		return nil, chat.SystemPrompt{}, domain.E(domain.KindNotFound, "preset_not_found", ref.Field+": no preset "+ref.Slug).With("field", ref.Field)
	}
	if err != nil {
		return nil, chat.SystemPrompt{}, err
	}
	if ref.Version != 0 {
		got, err := s.presets.version(ctx, p.ID, ref.Version)
		if errors.Is(err, preset.ErrVersionNotFound) {
			return nil, chat.SystemPrompt{}, preset.ErrVersionNotFound.WithMsg(ref.Field+": preset "+ref.Slug+" has no such version").With("field", ref.Field)
		}
		if err != nil {
			return nil, chat.SystemPrompt{}, err
		}
		v = &got
	}
	if err := ref.Usable(p, v); err != nil {
		return nil, chat.SystemPrompt{}, err
	}
	size, err := body.UnderPreset(v.Config, ref, s.maxBody)
	if err != nil {
		return nil, chat.SystemPrompt{}, err
	}
	system := chat.SystemPrompt{Preset: ref, Size: size, MaxBytes: s.maxBody}
	if v.SystemPrompt != nil {
		system.Text = *v.SystemPrompt
	}
	return &p.ID, system, nil
}

// chatCall is one chat completion in the pipeline.
type chatCall struct {
	req       chat.Request
	presetID  *string
	providers ports.Providers
	sink      ports.ChatSink
	env       Env
	// body and stream are the answer of the endpoint that answered, and first its first chunk, once Open has
	// them.
	body   io.Closer
	stream ports.ChatStream
	first  chat.Chunk
	// delivering means the answer has begun to go to the caller: no other model can take over.
	delivering bool
}

func (s *chatCall) Spec() (Spec, error) {
	r := s.req
	spec := Spec{API: generation.Completions, Modality: catalog.Chat, Model: r.Model, Texts: r.Texts(), Options: r.Options,
		SessionID: r.SessionID, User: r.User, Streamed: r.Stream, Hold: chatHold, PresetID: s.presetID, Route: r.Route}
	if r.Route.RequireParameters {
		spec.Parameters = r.Parameters()
	}
	return spec, nil
}

// Input keeps the messages' text; tokens are counted by the upstream, at the end.
func (s *chatCall) Input(texts []string) (generation.Input, generation.Counts) {
	msgs := s.req.WithTexts(texts).Messages
	out := make([]generation.Message, len(msgs))
	for i, m := range msgs {
		out[i] = generation.Message{Role: m.Role, Content: m.Joined()}
	}
	return generation.Input{Messages: out}, generation.Counts{}
}

// Estimate reserves the prompt at a token a byte and the largest completion limit that reaches the upstream,
// provider.options' included.
func (s *chatCall) Estimate(ep catalog.Endpoint, texts []string) domain.Micros {
	opts, _ := catalog.PassThrough(s.req.Options, ep.Provider) // a malformed object fails the call at Open
	return s.req.WithTexts(texts).Estimate(ep.Pricing, opts)
}

// Open asks one endpoint for the answer and waits for its first chunk with anything in it for the caller: a
// failure before the first token may still fail over.
func (s *chatCall) Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (string, error) {
	p, err := providerOf[ports.ChatProvider](s.providers, ep)
	if err != nil {
		return "", err
	}
	reply, err := p.Chat(ctx, ports.ChatRequest{UpstreamModel: ep.UpstreamModel, Request: s.req.WithTexts(texts), Options: opts})
	if err != nil {
		return "", err
	}
	stream := reply.Decode(flushing{r: reply.Body, sink: s.sink})
	first, err := firstChunk(stream)
	if err != nil {
		reply.Body.Close()
		if err == io.EOF {
			err = &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent no answer"}
		}
		return "", err
	}
	s.body, s.stream, s.first = reply.Body, stream, first
	return reply.UpstreamID, nil
}

// firstChunk reads the stream up to its first chunk that is not empty (chat.Chunk.Empty: a token, a tool call or a
// finish reason): the upstream's usage alone is no answer, and a stream that ends after it has sent none, to fail
// over from rather than deliver and bill as an empty answer. A usage read on the way goes with that chunk when it
// brings none of its own, and the native events read on the way go before its own, so that a caller of the
// upstream's format gets every event (the message's start, its first block's) once an endpoint has answered.
func firstChunk(stream ports.ChatStream) (chat.Chunk, error) {
	var usage *chat.Usage
	var native domain.Opaque
	for {
		c, err := stream.Next()
		switch {
		case err != nil:
			return c, err
		case !c.Empty():
			if c.Usage == nil {
				c.Usage = usage
			}
			if native != nil {
				c.Native = append(native, c.Native...)
			}
			return c, nil
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		native = append(native, c.Native...)
	}
}

// Deliver sends the answer on as it streams (or whole, when the caller asked for no stream) and prices it from
// the upstream's usage. The first chunk with anything in it (a role-only chunk has nothing) goes out at once;
// later ones as the stream reads them, flushed before it waits for more (see flushing). A stream that breaks, or
// a caller who leaves, pays for what was delivered: the prompt and the completion sent, counted by the upstream
// when it said, estimated otherwise.
func (s *chatCall) Deliver(ctx context.Context, c *Call) Delivery {
	defer s.body.Close()
	s.delivering = true
	s.sink.Start(ports.ChatHead{GenerationID: c.ID(), Model: s.req.Model, Provider: c.endpoint.Provider,
		Created: c.rec.CreatedAt.Unix(), Stream: s.req.Stream, IncludeUsage: s.req.IncludeUsage})
	var res chat.Result
	var err error
	for chunk, begun := s.first, false; ; {
		res.Add(chunk)
		if !chunk.Empty() || chunk.Native != nil {
			if s.sink.Chunk(chunk) != nil || s.req.Stream && !begun && s.sink.Flush() != nil {
				err = errCallerGone
				break
			}
			begun = true
		}
		if chunk, err = s.stream.Next(); err != nil {
			break
		}
	}
	switch {
	case err == io.EOF:
		err = nil
		if res.FinishReason == "" { // an upstream that ended without saying why: the word the record keeps too
			res.FinishReason, res.NativeFinishReason = "stop", "stop"
		}
	case callerLeft(err) && shutdownCut(ctx) && !s.req.Stream:
		err = domain.ErrShutdown // nothing went to the caller, who is still there: a 503, like a broken answer
	case err != nil && !callerLeft(err):
		err = brokeOff(err)
	}
	usage := s.usage(&res, c)
	res.Usage = &usage
	d := Delivery{Err: err, FinishReason: res.FinishReason, NativeFinishReason: res.NativeFinishReason,
		Output: generation.Output{Completion: res.Content.String()},
		Counts: generation.Counts{TokensPrompt: usage.PromptTokens, TokensCompletion: usage.CompletionTokens,
			NativeTokensPrompt: usage.PromptTokens, NativeTokensCompletion: usage.CompletionTokens,
			NativeTokensReasoning: usage.ReasoningTokens, NativeTokensCached: usage.CachedTokens}}
	if r := res.Reasoning.String(); r != "" {
		d.Output.Reasoning = &r
	}
	if err != nil && !callerLeft(err) && !s.req.Stream {
		d.FinishReason = "error" // also when the upstream's finish reason came before the break
		if errors.Is(err, domain.ErrShutdown) {
			d.FinishReason = "shutdown"
		}
		return d // nothing was delivered: the caller gets the failure, and pays nothing
	}
	d.Cost = chat.Cost(c.endpoint.Pricing, usage.PromptTokens, usage.CompletionTokens)
	switch {
	case err == nil:
		if ferr := s.sink.Finish(&res, d.Cost); ferr != nil {
			d.Err = errCallerGone
		}
	case callerLeft(err) && shutdownCut(ctx):
		s.sink.Fail(domain.ErrShutdown) // the caller is still there: the stream ends with an error it understands
	case !callerLeft(err):
		d.FinishReason = "error"
		s.sink.Fail(err)
	}
	return d
}

// brokeOff is the caller's error for an answer that broke after it began.
func brokeOff(err error) error {
	ue := asUpstream(err)
	kind := domain.KindUpstream
	if ue.Kind == domain.KindTimeout {
		kind = domain.KindTimeout
	}
	return domain.E(kind, "upstream_stream_broke", "the provider's answer broke off: "+ue.Reason).Wrap(err)
}

// usage is the upstream's count when it gave one, else a fair estimate (four bytes a token, not the reservation's
// worst case) of the prompt and of what was delivered.
func (s *chatCall) usage(res *chat.Result, c *Call) chat.Usage {
	if res.Usage != nil {
		return *res.Usage
	}
	completion := chat.Tokens(res.Content.String()) + chat.Tokens(res.Reasoning.String())
	for _, tc := range res.ToolCalls {
		completion += chat.Tokens(tc.Name) + chat.Tokens(tc.Arguments)
	}
	return chat.Usage{PromptTokens: s.req.WithTexts(c.texts).PromptTokens(), CompletionTokens: completion}
}
