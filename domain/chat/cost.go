package chat

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
)

// Tokens estimates the tokens of text at four bytes a token, rounded up: a fair stand-in where the upstream's
// count is missing (a stream that broke before its usage came). Billing only: a budget is reserved with
// MaxTokensOf, never with this.
func Tokens(text string) int64 { return (int64(len(text)) + 3) / 4 }

// MaxTokensOf is the most tokens text can be: one a byte, as a byte-level BPE tokenizer may split CJK or emoji.
// What a call's budget is reserved with.
func MaxTokensOf(text string) int64 { return int64(len(text)) }

// ImageTokens is what an image part is assumed to cost when a call's budget is reserved.
const ImageTokens = 1_000

// PromptTokens is a fair estimate of a request's prompt (Tokens: four bytes a token), billed when the upstream
// gives no usage; opts is the provider.options passed to its upstream.
func (r Request) PromptTokens(opts map[string]any) int64 { return r.promptTokens(Tokens, opts) }

// MaxPromptTokens is the most a request's prompt can be (MaxTokensOf: a token a byte), reserved before the call;
// opts is the provider.options passed to its upstream.
func (r Request) MaxPromptTokens(opts map[string]any) int64 { return r.promptTokens(MaxTokensOf, opts) }

// promptTokens counts a prompt with count for its texts, 4 tokens a message, and ImageTokens an image, and with
// count the rest of what goes upstream that a provider may count as prompt: the items aside as they came, the tool
// choice, the response format (a JSON schema is prompt), the fields passed on as they came (Extra: OpenAI's
// functions or prediction, or any field an upstream reads) and the text of opts. Left out, such text would be
// reserved for nothing and, counted by the upstream, make its usage implausible, so that the call were billed
// without it.
func (r Request) promptTokens(count func(string) int64, opts map[string]any) int64 {
	var n int64
	for _, m := range r.Messages {
		n += 4
		for _, p := range m.Content {
			switch p.Type {
			case "text":
				n += count(p.Text)
			case "image_url":
				n += ImageTokens
			default:
				n += count(string(p.Raw))
			}
		}
		for _, tc := range m.ToolCalls {
			n += count(tc.Name) + count(tc.Arguments)
		}
	}
	for _, a := range r.Aside { // as many bytes as it holds besides its images' URLs, and each image as an image
		n += count(string(a.Raw[min(a.ImageBytes, len(a.Raw)):])) + int64(a.Images)*ImageTokens
	}
	var tools int64
	for _, t := range r.Tools {
		tools += count(t.Name) + count(t.Description) + count(string(t.Parameters))
	}
	// The tools as they came, where they go so, hold those the gateway does not read too (custom, hosted, MCP).
	n += max(tools, count(string(r.Extra["tools"])))
	n += count(string(r.ToolChoice)) + count(string(r.ResponseFormat))
	for k, v := range r.Extra {
		if !r.holds(k) { // counted above as the request's own
			n += count(string(v))
		}
	}
	return n + optionText(count, opts)
}

// optionText counts the text of a passthrough value with count: its strings and its objects' keys, at any depth.
func optionText(count func(string) int64, v any) int64 {
	var n int64
	switch v := v.(type) {
	case string:
		n = count(v)
	case map[string]any:
		for k, e := range v {
			n += count(k) + optionText(count, e)
		}
	case []any:
		for _, e := range v {
			n += optionText(count, e)
		}
	}
	return n
}

// optionCaps are the completion limits an upstream may read from provider.options: OpenAI's two, Gemini's
// (at the top or in generationConfig) and Anthropic's max_tokens.
var optionCaps = []string{"max_tokens", "max_completion_tokens", "maxOutputTokens"}

// MaxCompletionTokens is the most completion a call may produce: the largest of the request's max_tokens (or
// DefaultMaxTokens, which the adapters send when the request sets none) and of every completion limit in opts,
// the provider.options passed to its upstream. It never reserves less than what any of them lets the upstream write.
func (r Request) MaxCompletionTokens(opts map[string]any) int64 {
	n := int64(DefaultMaxTokens)
	if r.MaxTokens != nil {
		n = *r.MaxTokens
	}
	gc, _ := opts["generationConfig"].(map[string]any)
	for _, m := range []map[string]any{opts, gc} {
		for _, k := range optionCaps {
			n = max(n, optionInt(m[k]))
		}
	}
	return n
}

// OptionCapped reports whether opts names a positive completion limit under one of keys: an adapter sends
// DefaultMaxTokens upstream only when neither the request nor its provider.options set one.
func OptionCapped(opts map[string]any, keys ...string) bool {
	for _, k := range keys {
		if optionInt(opts[k]) > 0 {
			return true
		}
	}
	return false
}

// optionInt reads a passthrough number (a number, or a numeric string an upstream might accept), saturating;
// 0 when it is none.
func optionInt(v any) int64 {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case domain.Number:
		f, _ = v.Float64()
	case string:
		f, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	default:
		return 0
	}
	switch {
	case f != f || f <= 0: // NaN
		return 0
	case f >= 1<<62:
		return 1 << 62
	}
	return int64(math.Ceil(f))
}

// Estimate is the most a call is expected to cost before it is made, the budget reserved for it: the prompt at
// its most (MaxPromptTokens) and the completion at its most (MaxCompletionTokens; opts is the provider.options
// passed to the endpoint's upstream).
func (r Request) Estimate(p catalog.Pricing, opts map[string]any) domain.Micros {
	// Every prompt token may be written to the cache: it is reserved at the dearest of the prompt's prices.
	for _, w := range []*domain.Micros{cacheWrite(p), cacheWrite1h(p)} {
		if w != nil && (p.PerMillionPromptTokens == nil || *w > *p.PerMillionPromptTokens) {
			p.PerMillionPromptTokens = w
		}
	}
	return Cost(p, r.MaxPromptTokens(opts), r.MaxCompletionTokens(opts))
}

// Cost prices tokens on an endpoint, exact to the micro-dollar: the sum of both prices is rounded once, half
// away from zero.
func Cost(p catalog.Pricing, prompt, completion int64) domain.Micros {
	return UsageCost(p, Usage{PromptTokens: prompt, CompletionTokens: completion})
}

// cacheWrite and cacheWrite1h are the prices of a token written to the cache for 5 minutes and for an hour: the
// prompt's when not set, and a 1-hour write a 5-minute one's when only that is set.
func cacheWrite(p catalog.Pricing) *domain.Micros {
	if p.PerMillionCacheWriteTokens != nil {
		return p.PerMillionCacheWriteTokens
	}
	return p.PerMillionPromptTokens
}

func cacheWrite1h(p catalog.Pricing) *domain.Micros {
	if p.PerMillionCacheWrite1hTokens != nil {
		return p.PerMillionCacheWrite1hTokens
	}
	return cacheWrite(p)
}

// UsageCost prices a usage on an endpoint, exact to the micro-dollar: the prompt's tokens read from the cache at
// the cache read price, those written to it at the write price of their duration, the rest at the prompt's price,
// and the completion at its own; the sum is rounded once, half away from zero.
func UsageCost(p catalog.Pricing, u Usage) domain.Micros {
	sum := new(big.Int)
	add := func(price *domain.Micros, n int64) {
		if price != nil {
			sum.Add(sum, new(big.Int).Mul(big.NewInt(int64(*price)), big.NewInt(n)))
		}
	}
	read := p.PerMillionCacheReadTokens
	if read == nil {
		read = p.PerMillionPromptTokens
	}
	add(p.PerMillionPromptTokens, u.PromptTokens-u.CachedTokens-u.CacheWriteTokens-u.CacheWrite1hTokens)
	add(read, u.CachedTokens)
	add(cacheWrite(p), u.CacheWriteTokens)
	add(cacheWrite1h(p), u.CacheWrite1hTokens)
	add(p.PerMillionCompletionTokens, u.CompletionTokens)
	q, r := new(big.Int).QuoRem(sum, big.NewInt(1_000_000), new(big.Int))
	if new(big.Int).Lsh(r, 1).Cmp(big.NewInt(1_000_000)) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return domain.Micros(1<<63 - 1)
	}
	return domain.Micros(q.Int64())
}
