package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	limits    ChatLimits
	log       *slog.Logger
	metrics   ports.Metrics
	// maxBody is the bound on a request body's bytes (server.max_body_bytes), which a request laid over a preset
	// is held to as the caller's own is.
	maxBody int64
}

var _ ports.ChatService = (*Chat)(nil)

// ChatLimits bound what an upstream can make the gateway hold for one answer (limits.max_answer_bytes,
// limits.answer_timeout); zero is the default.
type ChatLimits struct {
	// MaxAnswerBytes bounds an answer's text (content, reasoning and tool calls): an answer not streamed is held
	// whole until it ends, and a streamed one is cut there.
	MaxAnswerBytes int64
	// AnswerTimeout bounds the time from the call's first upstream request to the whole answer when it is not
	// streamed, and to the first token when it is (after which its idle timeout bounds it).
	AnswerTimeout time.Duration
}

// Defaults of ChatLimits.
const (
	DefaultMaxAnswerBytes = 8 << 20
	DefaultAnswerTimeout  = 10 * time.Minute
)

func (l ChatLimits) maxAnswerBytes() int64 { return cmp.Or(l.MaxAnswerBytes, DefaultMaxAnswerBytes) }
func (l ChatLimits) answerTimeout() time.Duration {
	return cmp.Or(l.AnswerTimeout, DefaultAnswerTimeout)
}

func NewChat(inference *Inference, providers ports.Providers, presets *Presets, env Env, maxBody int64, limits ChatLimits,
	log *slog.Logger, metrics ports.Metrics) *Chat {
	return &Chat{inference: inference, providers: providers, presets: presets, env: env, maxBody: maxBody, limits: limits,
		log: log, metrics: metrics}
}

// chatHold is how long a call's budget reservation may stay unsettled.
const chatHold = 30 * time.Minute

func (s *Chat) Complete(ctx context.Context, by account.Principal, body ports.ChatBody, caller generation.Caller, sink ports.ChatSink) (string, error) {
	req, presetID, err := s.request(ctx, by, body)
	if err != nil {
		return "", err
	}
	// Each model of the fallback list is a call of its own through the pipeline — admitted on its own (the
	// guardrails, budgets and limits judge that model), with its own generation record — tried until one
	// answers. The caller gets the last call's id and, when every one failed, the last failure.
	var id string
	for i, model := range append([]string{req.Model}, req.Fallbacks...) {
		req.Model = model
		call := &chatCall{chat: s, req: req, presetID: presetID, sink: sink}
		id, err = s.inference.Run(ctx, by, caller, call)
		if err == nil || call.delivering || i == len(req.Fallbacks) || !fallsBack(ctx, err) {
			return id, unheld(req, err)
		}
	}
	return id, err
}

// request is the request body holds, laid over the preset it names (with that preset's id).
func (s *Chat) request(ctx context.Context, by account.Principal, body ports.ChatBody) (chat.Request, *string, error) {
	ref, err := body.Preset()
	if err != nil {
		return chat.Request{}, nil, err
	}
	var presetID *string
	var system chat.SystemPrompt
	if ref != nil {
		if presetID, system, err = s.applyPreset(ctx, by, body, *ref); err != nil {
			return chat.Request{}, nil, err
		}
	}
	req, err := body.Request()
	if err != nil {
		return chat.Request{}, nil, err
	}
	req, err = req.WithSystem(system)
	return req, presetID, err
}

// CountTokens asks the upstream of the first endpoint the call would be routed to for its count, when it counts
// (ports.TokenCounter), and estimates otherwise, or when that upstream fails to. The caller's guardrails hold as for
// the call: their lists choose the endpoint, their content filters refuse or redact what is counted.
func (s *Chat) CountTokens(ctx context.Context, by account.Principal, body ports.ChatBody) (ports.TokenCount, error) {
	req, _, err := s.request(ctx, by, body)
	if err != nil {
		return ports.TokenCount{}, err
	}
	// The first model of the fallback list the call would be admitted to, as Complete tries them.
	spec := Spec{Route: req.Route, Modality: catalog.Chat, Texts: req.Texts(), Fixed: req.Fixed()}
	var eps []catalog.Endpoint
	var texts []string
	for i, model := range append([]string{req.Model}, req.Fallbacks...) {
		spec.Model = model
		eps, texts, err = s.inference.Endpoints(ctx, by, spec)
		if err == nil || i == len(req.Fallbacks) || !fallsBack(ctx, err) {
			break
		}
	}
	if err != nil {
		return ports.TokenCount{}, err
	}
	req = req.WithTexts(texts) // what the call would send, redacted
	if len(eps) == 0 {
		return ports.TokenCount{InputTokens: req.PromptTokens(nil)}, nil
	}
	if p, ok := s.providers[eps[0].Client()].(ports.TokenCounter); ok {
		opts, err := catalog.PassThrough(req.Options, eps[0].Provider)
		if err == nil {
			n, err := p.CountTokens(ctx, ports.ChatRequest{UpstreamModel: eps[0].UpstreamModel, Request: req, Options: opts})
			if err == nil {
				return ports.TokenCount{InputTokens: n, Exact: true}, nil
			}
			s.log.WarnContext(ctx, "an upstream failed to count tokens: estimated", "provider", eps[0].Provider, "err", err)
		}
	}
	return ports.TokenCount{InputTokens: req.PromptTokens(nil)}, nil
}

// unheld says, in a refusal of the call's reservation (402: the key's limit or the credits cannot hold it), what
// the caller can change: the reservation counts the whole completion limit, which agents set high (Claude Code
// sends max_tokens 32000 and more), so that a smaller one is admitted where this one was not.
func unheld(req chat.Request, err error) error {
	var e *domain.Error
	if !errors.As(err, &e) || e.Kind != domain.KindPaymentRequired {
		return err
	}
	return e.WithMsg(fmt.Sprintf("%s; the reservation counts the whole completion limit (max_tokens %d) at the completion "+
		"price: send a smaller max_tokens (Claude Code: CLAUDE_CODE_MAX_OUTPUT_TOKENS) or raise the limit",
		e.Msg, req.MaxCompletionTokens(nil)))
}

// fallsBack reports a failure of one model that the next model of the fallback list may not have: the model
// unknown or not routable (404), refused for that model by a guardrail (403: its model or provider filters,
// or its budget at that model's price), or its providers failing or refusing the input (too long a context
// for that model, say) before the answer began. The caller's own errors (400s of the gateway, blocked
// content), 402s (credits, the key's limit), a caller gone and the gateway's own failures do not.
func fallsBack(ctx context.Context, err error) bool {
	if callerLeft(ctx, err) {
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
	chat     *Chat
	req      chat.Request
	presetID *string
	sink     ports.ChatSink
	// body and stream are the answer of the endpoint that answered, first its first chunk and opts the
	// endpoint's provider.options, once Open has them.
	body   io.Closer
	stream ports.ChatStream
	first  chat.Chunk
	opts   map[string]any
	// deadline is when the answer is late (ChatLimits.AnswerTimeout after the first upstream request); timer cuts
	// the upstream call then, ending its context (upstream) with errAnswerTimedOut, and cut ends it otherwise.
	deadline time.Time
	timer    *time.Timer
	upstream context.Context
	cut      context.CancelCauseFunc
	// delivering means the answer has begun to go to the caller: no other model can take over.
	delivering bool
}

var (
	errAnswerTooLarge = domain.E(domain.KindUpstream, "upstream_answer_too_large", "")
	errAnswerTimedOut = domain.E(domain.KindTimeout, "upstream_answer_timeout", "")
)

// tooLarge is the caller's error for an answer past ChatLimits.MaxAnswerBytes.
func (l ChatLimits) tooLarge() *domain.Error {
	return errAnswerTooLarge.WithMsg(fmt.Sprintf("the provider's answer is longer than the gateway takes (limits.max_answer_bytes: %d bytes)",
		l.maxAnswerBytes())).With("max_answer_bytes", l.maxAnswerBytes())
}

// late is the caller's error for an answer past ChatLimits.AnswerTimeout.
func (l ChatLimits) late(stream bool) *domain.Error {
	what := "the whole answer"
	if stream {
		what = "its first token"
	}
	return errAnswerTimedOut.WithMsg(fmt.Sprintf("the provider took longer than the gateway waits for %s (limits.answer_timeout: %s)",
		what, l.answerTimeout()))
}

func (s *chatCall) Spec() (Spec, error) {
	r := s.req
	spec := Spec{API: generation.Completions, Modality: catalog.Chat, Model: r.Model, Texts: r.Texts(), Fixed: r.Fixed(), Options: r.Options,
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
	return s.sent(ep, texts).Estimate(ep.Pricing, opts)
}

// sent is the request as ep's upstream reads it, for its estimate and its bill: with texts (as the guardrails left
// them), and without what only an upstream of the request's own format is sent (the fields passed on as they came,
// the input items chat leaves out) when ep's provider does not speak it.
func (s *chatCall) sent(ep catalog.Endpoint, texts []string) chat.Request {
	r := s.req.WithTexts(texts)
	if p, err := providerOf[ports.ChatProvider](s.chat.providers, ep); err == nil && speaks(p, r.Format) {
		return r
	}
	r.Extra, r.Aside = nil, nil
	return r
}

// speaks reports whether p passes requests of format f on as they came.
func speaks(p ports.ChatProvider, f chat.Format) bool {
	s, ok := p.(ports.FormatSpeaker)
	return ok && s.Speaks(f)
}

// Open asks one endpoint for the answer and waits for its first chunk with anything in it for the caller: a
// failure before the first token may still fail over. The call's answer timeout runs from the first endpoint's
// request on: a streamed answer is cut there when its first token has not come, one not streamed when it is not
// whole (see Deliver).
func (s *chatCall) Open(ctx context.Context, ep catalog.Endpoint, texts []string, opts map[string]any) (string, error) {
	p, err := providerOf[ports.ChatProvider](s.chat.providers, ep)
	if err != nil {
		return "", err
	}
	if err := s.native(p); err != nil {
		return "", err
	}
	if s.deadline.IsZero() {
		s.deadline = time.Now().Add(s.chat.limits.answerTimeout())
	}
	s.upstream, s.cut = context.WithCancelCause(ctx)
	s.timer = time.AfterFunc(time.Until(s.deadline), func() { s.cut(errAnswerTimedOut) })
	reply, err := p.Chat(s.upstream, ports.ChatRequest{UpstreamModel: ep.UpstreamModel, Request: s.req.WithTexts(texts), Options: opts})
	if err == nil {
		stream := reply.Decode(flushing{r: reply.Body, sink: s.sink})
		var first chat.Chunk
		if first, err = firstChunk(stream); err == nil {
			if s.req.Stream {
				s.timer.Stop() // the answer has begun: its idle timeout bounds it from here
			}
			s.body, s.stream, s.first, s.opts = reply.Body, stream, first, opts
			return reply.UpstreamID, nil
		}
		reply.Body.Close()
	}
	s.timer.Stop()
	switch {
	case s.late():
		// No endpoint can answer in the time left: the caller hears a timeout, from this one.
		err = &ports.UpstreamError{Kind: domain.KindTimeout, Reason: s.chat.limits.late(s.req.Stream).Msg, Err: err}
	case err == io.EOF:
		err = &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent no answer"}
	}
	s.cut(nil)
	return "", err
}

// native refuses an endpoint that cannot be sent the request: one whose provider does not pass the request's
// format on, when the request continues a stored answer (chat.Request.Continues) or holds what only that format
// carries (chat.Request.Untranslatable). Another endpoint of the model may.
func (s *chatCall) native(p ports.ChatProvider) error {
	if s.req.Continues == "" && s.req.Untranslatable == "" {
		return nil
	}
	if speaks(p, s.req.Format) {
		return nil
	}
	reason := "previous_response_id: this model's provider keeps no responses the gateway can continue; send the whole conversation in input"
	if s.req.Continues == "" {
		reason = s.req.Untranslatable + ": a chat model cannot be sent it, and this model's provider does not speak " +
			"the request's API"
	}
	return &ports.UpstreamError{Status: 400, Kind: domain.KindInvalid, Retryable: true, Reason: reason}
}

// late reports an upstream call that the answer timeout cut.
func (s *chatCall) late() bool {
	return s.upstream.Err() != nil && errors.Is(context.Cause(s.upstream), errAnswerTimedOut)
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

// Deliver sends the answer on as it streams (or whole, when the caller asked for no stream) and prices it (see
// bill). The first chunk with anything in it (a role-only chunk has nothing) goes out at once; later ones as the
// stream reads them, flushed before it waits for more (see flushing). An answer past ChatLimits.MaxAnswerBytes is
// cut there, and one not streamed that is not whole within ChatLimits.AnswerTimeout is cut then: what the
// gateway holds of an answer is bounded, whatever the upstream sends. A stream that breaks, or a caller who
// leaves, pays for what was delivered; an answer not streamed that breaks, nothing (nothing was delivered).
func (s *chatCall) Deliver(ctx context.Context, c *Call) Delivery {
	defer s.cut(nil)
	defer s.body.Close()
	defer s.timer.Stop()
	s.delivering = true
	s.sink.Start(ports.ChatHead{GenerationID: c.ID(), Model: s.req.Model, Provider: c.endpoint.Provider,
		Created: c.rec.CreatedAt.Unix(), Stream: s.req.Stream, IncludeUsage: s.req.IncludeUsage})
	limit := s.chat.limits.maxAnswerBytes()
	// Not streamed, the answer is held whole, up to its bound; streamed, the record keeps its start.
	res := chat.Result{Keep: limit}
	if s.req.Stream {
		res.Keep = generation.MaxText
	}
	var err error
	for chunk, begun := s.first, false; ; {
		res.Add(chunk)
		if res.Bytes() > limit {
			err = s.chat.limits.tooLarge()
			break
		}
		if !chunk.Empty() || chunk.Native != nil {
			if serr := s.sink.Chunk(chunk); serr != nil {
				err = sinkFailed(serr)
				break
			}
			if s.req.Stream && !begun && s.sink.Flush() != nil {
				err = errCallerGone
				break
			}
			begun = true
		}
		if chunk, err = s.stream.Next(); err != nil {
			break
		}
	}
	// The request ended under the call: its caller left, or the gateway's shutdown cut it (the caller is still
	// there, and is told).
	cut := callerLeft(ctx, err) && shutdownCut(ctx)
	left := callerLeft(ctx, err) && !cut
	switch {
	case err == io.EOF:
		err = nil
		if res.FinishReason == "" { // an upstream that ended without saying why: the word the record keeps too
			res.FinishReason, res.NativeFinishReason = "stop", "stop"
		}
	case cut && !s.req.Stream:
		err = domain.ErrShutdown // nothing went to the caller: a 503, like a broken answer
	case left, cut:
	case errors.Is(err, errAnswerTooLarge):
	case s.late():
		err = s.chat.limits.late(false) // the answer was cut for the time it took
	default:
		err = brokeOff(err)
	}
	b := s.bill(&res, c)
	res.Usage = &b.Usage
	d := Delivery{Err: err, FinishReason: res.FinishReason, NativeFinishReason: res.NativeFinishReason,
		Output: generation.Output{Completion: generation.Cut(res.Content.String(), res.ContentBytes)},
		Counts: generation.Counts{TokensPrompt: b.Usage.PromptTokens, TokensCompletion: b.Usage.CompletionTokens,
			NativeTokensPrompt: b.Usage.PromptTokens, NativeTokensCompletion: b.Usage.CompletionTokens,
			NativeTokensReasoning: b.Usage.ReasoningTokens, NativeTokensCached: b.Usage.CachedTokens}}
	if r := res.Reasoning.String(); r != "" {
		r = generation.Cut(r, res.ReasoningBytes)
		d.Output.Reasoning = &r
	}
	if u := res.Reported; b.Implausible {
		// The record keeps what the upstream said beside what was billed, and is flagged.
		d.Counts.NativeTokensPrompt, d.Counts.NativeTokensCompletion = u.PromptTokens, u.CompletionTokens
		d.Counts.NativeTokensReasoning, d.Counts.NativeTokensCached = u.ReasoningTokens, u.CachedTokens
		flagImplausible(ctx, s.chat.log, s.chat.metrics, c, &d,
			"reported_prompt_tokens", u.PromptTokens, "reported_completion_tokens", u.CompletionTokens,
			"billed_prompt_tokens", b.Usage.PromptTokens, "billed_completion_tokens", b.Usage.CompletionTokens)
	}
	if err != nil && !left && !s.req.Stream {
		d.FinishReason = "error" // also when the upstream's finish reason came before the break
		if errors.Is(err, domain.ErrShutdown) {
			d.FinishReason = "shutdown"
		}
		return d // nothing was delivered: the caller gets the failure, and pays nothing
	}
	d.Cost, d.CacheDiscount = b.Cost, b.CacheDiscount
	switch {
	case err == nil:
		if ferr := s.sink.Finish(&res, d.Cost); ferr != nil {
			if d.Err = sinkFailed(ferr); d.Err != errCallerGone { // the answer's end could not be made
				d.Err, d.FinishReason = brokeOff(d.Err), "error"
				if s.req.Stream {
					s.sink.Fail(d.Err) // what was delivered is paid for, as of a stream that broke
				} else {
					d.Cost, d.CacheDiscount = 0, nil // nothing was delivered
				}
			}
		}
	case cut:
		s.sink.Fail(domain.ErrShutdown) // the stream ends with an error the caller understands
	case !left:
		d.FinishReason = "error"
		s.sink.Fail(err)
	}
	return d
}

// sinkFailed is what a sink's error means (ports.ChatSink): the upstream's answer it could not put in the caller's
// format, or else the caller gone.
func sinkFailed(err error) error {
	var ue *ports.UpstreamError
	if errors.As(err, &ue) {
		return err
	}
	return errCallerGone
}

// bill prices the answer (chat.Request.Bill): from the upstream's usage when it is plausible for what the call
// sent and delivered, else from the gateway's estimate, capped at the call's reservation.
func (s *chatCall) bill(res *chat.Result, c *Call) chat.Bill {
	return s.sent(*c.endpoint, c.texts).Bill(c.endpoint.Pricing, s.opts, res.Reported, res.Bytes())
}
