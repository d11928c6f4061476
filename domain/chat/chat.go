// Package chat is a conversation a caller asks a model to continue, whatever wire format it came in (OpenAI's chat
// completions today): the request and its rules, its messages, its tools, the pieces of an answer as they stream,
// and how a call is priced (per million prompt and completion tokens). It holds plain values: an inbound adapter
// decodes a body into a Request and asks Validate whether the gateway takes it; an outbound one writes the
// Request in its upstream's format.
package chat

import (
	"fmt"
	"slices"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/routing"
)

// Format is a wire format a conversation comes in and an upstream may speak: what a request's Extra and an
// answer's native events are written in.
type Format string

const (
	// ChatCompletions is OpenAI's chat completions (POST /chat/completions), which OpenAI-compatible upstreams speak.
	ChatCompletions Format = "chat_completions"
	// Messages is Anthropic's Messages API (POST /messages).
	Messages Format = "messages"
	// Responses is OpenAI's Responses API (POST /responses).
	Responses Format = "responses"
)

// Request is a chat completion request. The fields the gateway reads or translates for upstreams of another wire
// format are plain values; the caller's others are in Extra, passed unchanged to an upstream of the caller's own
// format.
type Request struct {
	// Format is the wire format the caller wrote the request in: the format of Extra, and of the answer the caller
	// reads.
	Format Format
	Model  string
	// Models is the request's models list, as it came: Validate takes its first as Model when the request names
	// none, and the rest as Fallbacks.
	Models []string
	// Fallbacks are the models tried in order after Model fails before its answer begins: Models, without Model
	// and repeats.
	Fallbacks []string
	Messages  []Message
	// Stream asks for server-sent events; IncludeUsage for the usage chunk at their end.
	Stream, IncludeUsage bool
	// MaxTokens is the completion limit the request sets (the larger of max_completion_tokens and max_tokens: an
	// upstream may obey either), nil when it sets none.
	MaxTokens   *int64
	Temperature *float64
	TopP        *float64
	Stop        []string
	Seed        *int64
	// Choices is how many answers the request asks for (n), nil when it does not say.
	Choices        *int64
	Tools          []Tool
	ToolChoice     domain.Opaque
	ResponseFormat domain.Opaque
	User           string
	SessionID      string
	// Options is provider.options: passthrough objects keyed by provider slug, their numbers domain.Numbers.
	Options map[string]any
	// Route is the rest of provider: the routing preferences.
	Route routing.Preferences
	// Extra are the caller's fields sent on as they came to an upstream of the caller's own format (Format), keyed
	// by their names in it: every one but the gateway's own and those it rewrites. Upstreams of another format get
	// the fields above, translated.
	Extra map[string]domain.Opaque
	// Prepended is how many messages the gateway laid before the caller's (a preset's system prompt): Messages[i]
	// is the caller's messages[i-Prepended], as an error names it (MessageField). A wire format whose system prompt
	// is a field of its own (Messages' system) counts the system message it makes from it here too.
	Prepended int
	// Headers are the caller's request headers of its format that go on to an upstream of that format (Messages'
	// anthropic-version and anthropic-beta), by their lower-case names.
	Headers map[string]string
	// Rewritten means the gateway changed the messages after they were decoded (a guardrail redacted a text, a
	// preset laid its system prompt): an upstream of the caller's format that writes its messages from Messages
	// (Anthropic's) is then sent them so, rather than their fields in Extra as they came.
	Rewritten bool
	// Redacted means a guardrail changed the messages' texts (WithTexts): the caller's fields as they came hold the
	// texts before, so an upstream that is sent those (the Responses API's) must be sent the messages instead.
	Redacted bool
	// Continues is the stored answer the request continues (the Responses API's previous_response_id): only an
	// upstream of the request's Format that keeps its answers holds the conversation before it.
	Continues string
	// Untranslatable names the first part of the request that only an upstream of its Format can take, where and
	// what it is ("input[3].type: unknown input item type \"mesage\""): "" when a chat upstream can be sent it.
	Untranslatable string
	// Aside are the input items a chat upstream goes without and an upstream of the request's Format is sent as
	// they came (the Responses API's reasoning, the calls of hosted and custom tools and their outputs): the
	// guardrails scan their texts after the messages' (Texts), and a call's budget is reserved for their bytes.
	Aside []Aside
}

// Aside is an input item the messages leave out: as it came, the text in it that a guardrail scans, and its images
// (their URLs' bytes among Raw's), which count as images do in a message.
type Aside struct {
	Raw        domain.Opaque
	Text       string
	Images     int
	ImageBytes int
}

// DefaultMaxTokens is the completion limit of a call that sets no max_tokens: every adapter sends it upstream
// (OpenAI's max_completion_tokens, Gemini's maxOutputTokens, Anthropic's max_tokens), and the call's budget is
// reserved for it.
const DefaultMaxTokens = 4096

// Validate holds a decoded request to the gateway's rules, naming the field of the first it breaks (in the
// order below: models, messages, sampling, tools, caller ids, provider), and settles Model and Fallbacks from
// the models list. What is the wrong type for a field is the wire format's to refuse, before.
func (r *Request) Validate() error {
	if err := r.pickModels(); err != nil {
		return err
	}
	if r.Model == "" {
		return domain.Invalid("model", "is required (or models)")
	}
	if err := r.CheckMessages(); err != nil {
		return err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return domain.Invalid("temperature", "must be a number from 0 to 2")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return domain.Invalid("top_p", "must be a number from 0 to 1")
	}
	if len(r.Stop) > MaxStops {
		return TooManyStops("stop")
	}
	if r.Choices != nil && *r.Choices != 1 {
		return domain.Invalid("n", "must be 1: the gateway returns one choice")
	}
	if len(r.Tools) > MaxTools {
		return TooManyTools("tools")
	}
	if err := domain.CheckCall(r.Model, r.SessionID, r.User); err != nil {
		return err
	}
	if err := catalog.CheckOptions(r.Options); err != nil {
		return err
	}
	if err := checkOptionChoices(r.Options); err != nil {
		return err
	}
	return r.Route.Check()
}

// Parameters are the request parameters the request sets, by the names endpoints declare them under
// (catalog.Endpoint.Parameters, OpenRouter's supported_parameters): the fields the gateway reads, and the others it
// passes on, each by its name in the caller's format but the completion limit and the stop sequences, which every
// format names otherwise.
func (r Request) Parameters() []string {
	var out []string
	for _, p := range r.ownParameters() {
		if p.set {
			out = append(out, p.name)
		}
	}
	for k := range r.Extra {
		if k := parameterName(k); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// parameter is a request parameter the request's own fields hold, and whether the request sets it.
type parameter struct {
	name string
	set  bool
}

// ownParameters are the parameters the request's own fields hold; Extra holds the others.
func (r Request) ownParameters() [8]parameter {
	return [...]parameter{{"tools", len(r.Tools) > 0}, {"tool_choice", r.ToolChoice != nil},
		{"response_format", r.ResponseFormat != nil}, {"temperature", r.Temperature != nil}, {"top_p", r.TopP != nil},
		{"max_tokens", r.MaxTokens != nil}, {"stop", len(r.Stop) > 0}, {"seed", r.Seed != nil}}
}

// holds reports a field of the caller's that the request's own fields hold (its messages, or one of
// ownParameters), under any format's name for it.
func (r Request) holds(field string) bool {
	name := parameterName(field)
	own := r.ownParameters()
	return name == "" || slices.ContainsFunc(own[:], func(p parameter) bool { return p.name == name })
}

// parameterName is the name endpoints declare a field of the caller's under (parameterNames): "" for one that is
// no parameter.
func parameterName(field string) string {
	if name, ok := parameterNames[field]; ok {
		return name
	}
	return field
}

// parameterNames are the names a wire format gives the parameters read above (their canonical name), or a field
// that is no parameter ("").
var parameterNames = map[string]string{"max_completion_tokens": "max_tokens", "max_output_tokens": "max_tokens",
	"stop_sequences": "stop", "n": "", "messages": "", "system": "", "input": "", "text": "response_format"}

// CheckMaxTokens is the rule for a completion limit the request sets, under the field's name (a wire format may
// have two, which an upstream may each obey): a positive integer.
func CheckMaxTokens(field string, n int64) error {
	if n < 1 {
		return domain.Invalid(field, "must be a positive integer")
	}
	return nil
}

// pickModels holds the models list to its rules and settles Model (the list's first when the request names none)
// and Fallbacks (the list, without Model and repeats): the models tried in order.
func (r *Request) pickModels() error {
	if len(r.Models) > MaxModels {
		return TooManyModels("models")
	}
	r.Fallbacks = nil
	for i, m := range r.Models {
		at := fmt.Sprintf("models[%d]", i)
		if m == "" {
			return domain.Invalid(at, "must be a model id")
		}
		if err := domain.CheckText(at, m); err != nil {
			return err
		}
		switch {
		case r.Model == "":
			r.Model = m
		case m != r.Model && !slices.Contains(r.Fallbacks, m):
			r.Fallbacks = append(r.Fallbacks, m)
		}
	}
	return nil
}

// checkOptionChoices holds an n in provider.options (as "n" or "N", which an upstream decoding as encoding/json
// does reads alike) to the rule of the request's own: 1, as the gateway returns one choice and reserved the budget
// for one.
func checkOptionChoices(options map[string]any) error {
	for slug, o := range options {
		fields, _ := o.(map[string]any)
		for _, k := range []string{"n", "N"} {
			if v, ok := fields[k]; ok {
				if n, isNumber := v.(domain.Number); !isNumber || n.String() != "1" {
					return domain.Invalid("provider.options."+slug+"."+k, "must be 1: the gateway returns one choice")
				}
			}
		}
	}
	return nil
}
