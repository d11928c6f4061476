// Package embedding is embeddings: the request a caller makes (texts or token arrays to turn into vectors), its
// bounds, and how a call is priced — per input token, as chat's prompt is.
package embedding

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// Format is how the vectors go back to the caller: JSON numbers, or the base64 of their little-endian float32s.
type Format string

const (
	Float  Format = "float"
	Base64 Format = "base64"
)

// Bounds on a request, as OpenAI holds its own: the inputs of one call, the token ids of all its token arrays
// together, a token id, and the dimensions asked for.
const (
	MaxInputs      = 2048
	MaxTotalTokens = 300_000
	MaxTokenID     = 1<<31 - 1
	MaxDimensions  = 1 << 16
)

// Input is one input: a text, or a token array (Tokens set, Text empty).
type Input struct {
	Text   string
	Tokens []int64
}

// Request is an embeddings request.
type Request struct {
	Model  string
	Inputs []Input
	// Single means the input was one string or one token array, not a list of them: its errors name "input".
	Single bool
	Format Format
	// Dimensions asks for vectors of that many numbers, where the model can shorten them.
	Dimensions *int64
	// Options is provider.options: passthrough objects keyed by provider slug; Route the caller's routing
	// preferences.
	Options         map[string]any
	Route           routing.Preferences
	User, SessionID string
}

// TooManyInputs refuses an input that is none of its shapes, or a list of none or more than MaxInputs.
func TooManyInputs(field string) error {
	return domain.Invalid(field, fmt.Sprintf("must be a string, a token array, or an array of 1 to %d strings or token arrays",
		MaxInputs)).With("max_inputs", MaxInputs)
}

// TooManyTokens refuses token arrays whose ids take the call past MaxTotalTokens.
func TooManyTokens(field string) error {
	return domain.Invalid(field, fmt.Sprintf("takes the token arrays past %d tokens in all", MaxTotalTokens)).
		With("max_tokens", MaxTotalTokens)
}

// Validate holds a decoded request to the gateway's rules and applies its defaults, naming the field of the first
// it breaks. The inputs are all texts or all token arrays, as the wire has them.
func (r *Request) Validate() error {
	if r.Model == "" {
		return domain.Invalid("model", "is required")
	}
	if len(r.Inputs) == 0 || len(r.Inputs) > MaxInputs {
		return TooManyInputs("input")
	}
	var total int
	for i, in := range r.Inputs {
		field := "input"
		if !r.Single {
			field = fmt.Sprintf("input[%d]", i)
		}
		if in.Tokens == nil {
			if in.Text == "" {
				return domain.Invalid(field, "must not be empty")
			}
			if err := domain.CheckText(field, in.Text); err != nil {
				return err
			}
			continue
		}
		if len(in.Tokens) == 0 {
			return domain.Invalid(field, "must hold at least one token")
		}
		if total += len(in.Tokens); total > MaxTotalTokens {
			return TooManyTokens(field)
		}
		for j, t := range in.Tokens {
			if t < 0 || t > MaxTokenID {
				return domain.Invalid(fmt.Sprintf("%s[%d]", field, j), fmt.Sprintf("must be a token id from 0 to %d", MaxTokenID))
			}
		}
	}
	switch r.Format {
	case "":
		r.Format = Float
	case Float, Base64:
	default:
		return domain.Invalid("encoding_format", "must be float or base64")
	}
	if d := r.Dimensions; d != nil && (*d < 1 || *d > MaxDimensions) {
		return domain.Invalid("dimensions", fmt.Sprintf("must be an integer from 1 to %d", MaxDimensions))
	}
	if err := domain.CheckCall(r.Model, r.SessionID, r.User); err != nil {
		return err
	}
	if err := catalog.CheckOptions(r.Options); err != nil {
		return err
	}
	return r.Route.Check()
}

// Texts are the text inputs, in order: what the guardrails scan and may redact. Token arrays have no text.
func (r Request) Texts() []string {
	var out []string
	for _, in := range r.Inputs {
		if in.Tokens == nil {
			out = append(out, in.Text)
		}
	}
	return out
}

// WithTexts is the request with its text inputs replaced, in order, by texts (the guardrails' redaction).
func (r Request) WithTexts(texts []string) Request {
	out := make([]Input, len(r.Inputs))
	next := 0
	for i, in := range r.Inputs {
		if in.Tokens == nil && next < len(texts) {
			in.Text = texts[next]
			next++
		}
		out[i] = in
	}
	r.Inputs = out
	return r
}

// Parameters are the request parameters the request sets, by the names endpoints declare them under.
func (r Request) Parameters() []string {
	var out []string
	if r.Dimensions != nil {
		out = append(out, "dimensions")
	}
	return out
}

// String is how an input is kept in a generation's content: its text, or its token ids as a list.
func (in Input) String() string {
	if in.Tokens == nil {
		return in.Text
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range in.Tokens {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(t, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// promptTokens counts the inputs with count for a text and one token an id of a token array.
func (r Request) promptTokens(count func(string) int64) int64 {
	var n int64
	for _, in := range r.Inputs {
		if in.Tokens != nil {
			n += int64(len(in.Tokens))
		} else {
			n += count(in.Text)
		}
	}
	return n
}

// MaxPromptTokens is the most the inputs can be (a token a byte of text, chat.MaxTokensOf): reserved before the
// call.
func (r Request) MaxPromptTokens() int64 { return r.promptTokens(chat.MaxTokensOf) }

// PromptTokens is a fair estimate of the inputs (four bytes a token of text, chat.Tokens): billed when the
// upstream gives no usage.
func (r Request) PromptTokens() int64 { return r.promptTokens(chat.Tokens) }

// Estimate is the most a call is expected to cost, the budget reserved for it: its inputs at their most, at the
// endpoint's prompt price.
func (r Request) Estimate(p catalog.Pricing) domain.Micros {
	return chat.Cost(p, r.MaxPromptTokens(), 0)
}

// Plausible reports whether an upstream's count of the input tokens is one the call could have used: from 1 to
// twice the gateway's worst case of the inputs plus chat.PromptSlack (what chat allows a prompt).
func (r Request) Plausible(tokens int64) bool {
	return tokens > 0 && tokens <= 2*r.MaxPromptTokens()+chat.PromptSlack
}

// Bill is what a call is billed for: the tokens and their cost, and whether they are the gateway's estimate
// (Estimated) because the upstream reported none or an implausible count (Implausible).
type Bill struct {
	Tokens                 int64
	Cost                   domain.Micros
	Estimated, Implausible bool
}

// Bill prices the call r on an endpoint at pricing from the input tokens its upstream reported (nil when none
// came): a plausible count as the upstream gives it, otherwise the gateway's estimate (PromptTokens), never more
// than its reservation.
func (r Request) Bill(p catalog.Pricing, reported *int64) Bill {
	if reported != nil && r.Plausible(*reported) {
		return Bill{Tokens: *reported, Cost: chat.Cost(p, *reported, 0)}
	}
	n := r.PromptTokens()
	return Bill{Tokens: n, Cost: min(chat.Cost(p, n, 0), r.Estimate(p)), Estimated: true, Implausible: reported != nil}
}
