package chat

import (
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// What an upstream's usage may count beyond the gateway's own worst case of the call, and still be taken.
const (
	// PromptSlack is the tokens a prompt may count past twice its worst case as the gateway counts it (a token a
	// byte of its text, 4 a message, ImageTokens an image): what a provider adds of its own (a system prompt for
	// its tool use, the framing of each message) and an image that costs more than ImageTokens (up to a few
	// thousand tokens at some providers).
	PromptSlack = 4096
	// CompletionSlack is the tokens a completion may count past the larger of its limit and the bytes it
	// delivered: tokens that end a turn or frame a tool call, which deliver no text.
	CompletionSlack = 16
)

// Plausible reports whether an upstream's usage is one that the call r (the request as it was sent upstream,
// with opts, the endpoint's provider.options) could have used, having delivered delivered bytes of text (its
// content, reasoning and tool calls):
//   - every count from 0 to MaxTokenCount, and the prompt and the completion together at most MaxTokenCount (no
//     model has a larger context window);
//   - the prompt at most twice the gateway's worst case of it (MaxPromptTokens) plus PromptSlack: a byte-level
//     tokenizer makes no more than a token a byte of what was sent;
//   - the completion (its reasoning included, as every provider counts it) at most the larger of the completion
//     limit the call sent (MaxCompletionTokens, which every provider holds its reasoning within) and the bytes
//     delivered (an upstream that ignores its limit still makes no more than a token a byte of what it sends),
//     plus CompletionSlack.
//
// A usage past them is not taken: the call is billed as one whose upstream sent no usage (Bill). What the rule
// cannot see is a prompt the provider holds for the call and counts (a context cached under a name at the
// provider, passed in provider.options): such calls are billed at the estimate.
func (r Request) Plausible(u Usage, opts map[string]any, delivered int64) bool {
	return u.plausible() && u.PromptTokens <= 2*r.MaxPromptTokens(opts)+PromptSlack &&
		u.CompletionTokens <= max(r.MaxCompletionTokens(opts), delivered)+CompletionSlack
}

// Bill is what a call is billed for.
type Bill struct {
	// Usage is the tokens billed: the upstream's, or the gateway's estimate (Estimated).
	Usage Usage
	Cost  domain.Micros
	// CacheDiscount is what prompt caching took off the cost (negative when writing to the cache cost more than it
	// saved), nil when the usage counts no cached token.
	CacheDiscount *domain.Micros
	// Estimated means no usage was taken: none came, or the one that came was not plausible (Implausible).
	Estimated, Implausible bool
}

// Bill prices the call r on an endpoint at pricing, with opts its provider.options, from the usage its upstream
// reported (nil when none came) and the bytes of text it delivered. A plausible usage (Plausible) is billed as
// the upstream counts it. Otherwise the call is billed at an estimate — the prompt at four bytes a token
// (PromptTokens) and the completion at four bytes a token of what was delivered — and never more than its
// reservation (Estimate): the most it was admitted for.
func (r Request) Bill(p catalog.Pricing, opts map[string]any, reported *Usage, delivered int64) Bill {
	if u := reported; u != nil && r.Plausible(*u, opts, delivered) {
		b := Bill{Usage: *u, Cost: UsageCost(p, *u)}
		if u.CachedTokens+u.CacheWriteTokens+u.CacheWrite1hTokens > 0 {
			d := Cost(p, u.PromptTokens, u.CompletionTokens) - b.Cost
			b.CacheDiscount = &d
		}
		return b
	}
	u := Usage{PromptTokens: r.PromptTokens(opts), CompletionTokens: (delivered + 3) / 4}
	return Bill{Usage: u, Cost: min(Cost(p, u.PromptTokens, u.CompletionTokens), r.Estimate(p, opts)), Estimated: true,
		Implausible: reported != nil}
}
