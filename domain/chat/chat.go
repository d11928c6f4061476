// Package chat is chat completions: the request a caller makes (OpenAI's chat completions shape), the pieces
// of an answer as they stream, and how a call is priced (per million prompt and completion tokens).
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/jsonenc"
)

// Body is a request body as the caller sent it, field by field.
type Body map[string]json.RawMessage

// Request is a parsed, validated chat completion request. The fields the gateway reads or translates for
// non-OpenAI upstreams are typed; the others are in Extra, passed unchanged to OpenAI-compatible upstreams.
type Request struct {
	Model string
	// Fallbacks are the models tried in order after Model fails before its answer begins: the request's
	// models list, without Model and repeats.
	Fallbacks []string
	Messages  []Message
	// Stream asks for server-sent events; IncludeUsage for the usage chunk at their end.
	Stream, IncludeUsage bool
	// MaxTokens is the larger of max_completion_tokens and max_tokens.
	MaxTokens      *int64
	Temperature    *float64
	TopP           *float64
	Stop           []string
	Seed           *int64
	Tools          []Tool
	ToolChoice     json.RawMessage
	ResponseFormat json.RawMessage
	User           string
	SessionID      string
	// Options is provider.options: passthrough objects keyed by provider slug.
	Options map[string]any
	// Route is the rest of provider: the routing preferences.
	Route Route
	// Extra are the fields sent on to OpenAI-compatible upstreams as they came: every one but the gateway's own
	// and those it rewrites (model, messages, stream, stream_options). Other upstreams get the typed ones,
	// translated.
	Extra map[string]json.RawMessage
	// Prepended is how many messages the gateway laid before the caller's (a preset's system prompt): Messages[i]
	// is the caller's messages[i-Prepended], as an error names it (MessageField).
	Prepended int
}

// Message is one message of the conversation.
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role string
	// Content is the message's parts; a plain string content is one text part (and Text says so).
	Content []Part
	// Text means the content was a plain string; Null that it was null or absent (an assistant's tool calls).
	Text, Null bool
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Part is one part of a message's content.
type Part struct {
	// Type is text, image_url, or another kind passed as it came (Raw) to OpenAI-compatible upstreams.
	Type     string
	Text     string
	ImageURL string
	Detail   string
	Raw      json.RawMessage
}

// ToolCall is a function call the assistant asked for.
type ToolCall struct {
	ID, Name, Arguments string
}

// Tool is a function the model may call.
type Tool struct {
	Name, Description string
	// Parameters is the function's JSON Schema, as sent.
	Parameters json.RawMessage
	Strict     *bool
}

// Usage is what an answer used, as its upstream counts it.
type Usage struct {
	PromptTokens, CompletionTokens int64
	ReasoningTokens, CachedTokens  int64
}

// Chunk is one piece of a streamed answer (the first choice's).
type Chunk struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCallDelta
	// FinishReason is normalised (stop, length, tool_calls, content_filter, error); NativeFinishReason is the
	// upstream's own word.
	FinishReason, NativeFinishReason string
	// Usage comes once, usually with or after the last chunk.
	Usage *Usage
}

// Empty reports a chunk that carries nothing for the caller.
func (c Chunk) Empty() bool {
	return c.Content == "" && c.Reasoning == "" && len(c.ToolCalls) == 0 && c.FinishReason == ""
}

// ToolCallDelta is a piece of a tool call: the first piece of a call has its id and name, later ones add to
// its arguments.
type ToolCallDelta struct {
	Index               int
	ID, Name, Arguments string
}

// Result is a whole answer, gathered from its chunks.
type Result struct {
	Content, Reasoning               strings.Builder
	ToolCalls                        []ToolCall
	FinishReason, NativeFinishReason string
	// Usage is the upstream's last usage whose counts are in bounds (plausible), nil when none came; Reported is
	// its last usage however it read, taken or not.
	Usage, Reported *Usage
	// Keep, when positive, bounds the text the result keeps: the content, the reasoning and the tool calls' names
	// and arguments together. What comes past it is counted (ContentBytes...) and dropped, so that an answer that
	// never ends holds no more than Keep bytes.
	Keep int64
	// ContentBytes, ReasoningBytes and ToolBytes count the text every chunk added, kept or not.
	ContentBytes, ReasoningBytes, ToolBytes int64
	kept                                    int64
	// tools numbers the deltas' indexes as ToolCalls holds them; names and args gather the calls' texts (a
	// string appended to, a delta at a time, was copied whole at each).
	tools       ToolIndexes
	names, args []*strings.Builder
}

// Bytes is the text the answer brought, kept or not.
func (r *Result) Bytes() int64 { return r.ContentBytes + r.ReasoningBytes + r.ToolBytes }

// ToolIndexes numbers an upstream's tool-call indexes 0, 1, ... in the order they first appear, as the upstream
// may number them from 1 or with gaps (a proxy numbering content blocks), or with any int at all. It numbers at
// most MaxToolCalls: the indexes past them, which no answer has, share the last number, so that an upstream that
// sends a new index with every delta holds no more memory than that.
type ToolIndexes struct{ at map[int]int }

// Of returns the number of the upstream's index n, and whether n is new.
func (t *ToolIndexes) Of(n int) (int, bool) {
	if i, ok := t.at[n]; ok {
		return i, false
	}
	if len(t.at) == MaxToolCalls {
		return MaxToolCalls - 1, false
	}
	if t.at == nil {
		t.at = map[int]int{}
	}
	i := len(t.at)
	t.at[n] = i
	return i, true
}

// Add gathers one chunk into the answer.
func (r *Result) Add(c Chunk) {
	r.ContentBytes += int64(len(c.Content))
	r.ReasoningBytes += int64(len(c.Reasoning))
	r.keep(&r.Content, c.Content)
	r.keep(&r.Reasoning, c.Reasoning)
	for _, d := range c.ToolCalls {
		r.ToolBytes += int64(len(d.Name) + len(d.Arguments))
		i, isNew := r.tools.Of(d.Index)
		if isNew {
			r.ToolCalls = append(r.ToolCalls, ToolCall{})
			r.names, r.args = append(r.names, &strings.Builder{}), append(r.args, &strings.Builder{})
		}
		tc := &r.ToolCalls[i]
		if d.ID != "" {
			tc.ID = d.ID
		}
		r.keep(r.names[i], d.Name)
		r.keep(r.args[i], d.Arguments)
		tc.Name, tc.Arguments = r.names[i].String(), r.args[i].String()
	}
	if c.FinishReason != "" {
		r.FinishReason, r.NativeFinishReason = c.FinishReason, c.NativeFinishReason
	}
	if c.Usage != nil {
		u := *c.Usage
		r.Reported = &u
		if u.plausible() {
			r.Usage = &u
		}
	}
}

// keep appends what of text fits within Keep to b, cut at the start of a character.
func (r *Result) keep(b *strings.Builder, text string) {
	if r.Keep > 0 && int64(len(text)) > r.Keep-r.kept {
		n := int(r.Keep - r.kept)
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n]
	}
	r.kept += int64(len(text))
	b.WriteString(text)
}

// MaxTokenCount bounds the tokens of an upstream's usage block that is taken: each count, and the prompt and the
// completion together. It is the largest context window of a model served today (Llama 4 Scout's 10 million
// tokens; Gemini's and Claude's are 1 to 2 million), which a call's prompt and its completion, reasoning
// included, must fit in together: no real call counts more. What it guards is the bill, as a usage taken is
// priced as the upstream says: a hostile or broken upstream could bill a trillion tokens a count, the bound
// before it (some $10 million a call at $10 a million tokens), and now 10 million tokens at most. The call's
// completion limit is no bound to rely on: whether reasoning counts within it differs between upstreams, and
// an upstream may ignore it. A call to a model with a larger window, past this bound, would be priced from the
// estimate, as a call without usage is.
const MaxTokenCount = 10_000_000

// plausible reports a usage block whose every count is from 0 to MaxTokenCount, and whose prompt and completion
// together are at most MaxTokenCount. Another (an upstream that reports negative tokens would have its calls
// credit the organization, one that reports billions bill it as much) is not taken: the call is priced as one
// whose upstream sent no usage, from an estimate of its prompt and of what was delivered.
func (u Usage) plausible() bool {
	for _, n := range []int64{u.PromptTokens, u.CompletionTokens, u.ReasoningTokens, u.CachedTokens} {
		if n < 0 || n > MaxTokenCount {
			return false
		}
	}
	return u.PromptTokens+u.CompletionTokens <= MaxTokenCount
}

// SumTokens adds counts an upstream reports apart into one count of a Usage (Anthropic's prompt is its input plus
// its cache writes and reads, Gemini's completion its candidates plus its thoughts). A count below 0 or past
// MaxTokenCount makes the sum -1, so that the usage holding it is not taken: the sum itself could wrap around, or
// a negative count cancel a positive one, into a count that looks plausible.
func SumTokens(counts ...int64) int64 {
	var n int64
	for _, c := range counts {
		if c < 0 || c > MaxTokenCount {
			return -1
		}
		n += c
	}
	return n
}

// Finish normalises an upstream's finish reason: OpenAI's words pass, Anthropic's and Gemini's are mapped.
func Finish(native string) string {
	switch strings.ToLower(native) {
	case "", "stop", "end_turn", "stop_sequence":
		return "stop"
	case "length", "max_tokens":
		return "length"
	case "tool_calls", "tool_use", "function_call":
		return "tool_calls"
	case "content_filter", "safety", "recitation", "blocklist", "prohibited_content", "spii", "refusal":
		return "content_filter"
	case "error", "malformed_function_call":
		return "error"
	}
	return "stop"
}

// Roles a message may have.
var roles = []string{"system", "developer", "user", "assistant", "tool"}

// Bounds on a request, so that one call cannot hold the gateway's memory.
const (
	MaxMessages = 10_000
	MaxParts    = 1_000
	// MaxTotalParts bounds the content parts of all the messages together (a string content is none): each part,
	// however short its JSON ({"type":"text"}), costs a Part of 88 bytes and its room in a growing list, and a
	// 10 MiB body of such parts, 1,000 a message, allocated 19 times its size. It is past every provider's bound
	// on a request's images (about 100 at Anthropic, 500 at OpenAI, 3,000 at Gemini), and one a message at
	// MaxMessages.
	MaxTotalParts = 10_000
	// MaxToolCalls bounds one message's tool calls: each, however short its JSON ("{}"), costs a ToolCall,
	// and a 10 MB list of them cost 985 MB before it was refused.
	MaxToolCalls = 1_000
	MaxTools     = 512
	MaxStops     = 4
	// MaxModels bounds the models fallback list, as the reference does.
	MaxModels = 3
	// MaxFields bounds a request's fields, as given (a key given twice counts twice): OpenAI's request has some
	// 40 and the reference's some 50, and every other one is kept and sent on, so that a 10 MiB body of short
	// distinct ones cost 605 MB.
	MaxFields = 1_000
)

// DefaultMaxTokens is the completion limit of a call that sets no max_tokens: every adapter sends it upstream
// (OpenAI's max_completion_tokens, Gemini's maxOutputTokens, Anthropic's max_tokens), and the call's budget is
// reserved for it.
const DefaultMaxTokens = 4096

// gatewayFields are the fields the gateway answers to itself (model, models, preset, provider, session_id...)
// or rewrites (messages, stream, stream_options): never sent upstream as they came. user, the caller's end-user
// id, is kept on the generation record and, as in the reference, not forwarded to the provider.
var gatewayFields = []string{"model", "models", "preset", "provider", "route", "transforms", "session_id", "user",
	"usage", "plugins", "trace", "stream", "stream_options", "messages"}

// checkedFields are the other fields Parse reads: checked (and translated for upstreams that are not
// OpenAI-compatible), then passed on as they came to those that are.
var checkedFields = []string{"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "n", "tools",
	"tool_choice", "response_format"}

// Parse reads and validates a request body; every error names its field.
func Parse(b Body) (Request, error) {
	var r Request
	extra, err := extraFields(b)
	if err != nil {
		return r, err
	}
	r.Extra = extra
	if err := field(b, "model", &r.Model); err != nil {
		return r, err
	}
	if err := parseModels(b, &r); err != nil {
		return r, err
	}
	if r.Model == "" {
		return r, domain.Invalid("model", "is required (or models)")
	}
	raw, ok := b["messages"]
	if !ok || isNull(raw) {
		return r, domain.Invalid("messages", "is required")
	}
	msgs, err := readMessages(raw)
	if err != nil {
		return r, err
	}
	r.Messages = msgs
	if err := field(b, "stream", &r.Stream); err != nil {
		return r, err
	}
	if r.IncludeUsage, err = includeUsage(b); err != nil {
		return r, err
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		var n *int64
		if err := field(b, name, &n); err != nil {
			return r, err
		}
		if n != nil {
			if *n < 1 {
				return r, domain.Invalid(name, "must be a positive integer")
			}
			if r.MaxTokens == nil || *n > *r.MaxTokens { // both are passed on, and an upstream may obey either
				r.MaxTokens = n
			}
		}
	}
	if err := field(b, "temperature", &r.Temperature); err != nil {
		return r, err
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return r, domain.Invalid("temperature", "must be a number from 0 to 2")
	}
	if err := field(b, "top_p", &r.TopP); err != nil {
		return r, err
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return r, domain.Invalid("top_p", "must be a number from 0 to 1")
	}
	if raw, ok := present(b, "stop"); ok {
		var one string
		if unmarshal(raw, &one) == nil {
			r.Stop = []string{one}
		} else if n := items(raw); n > MaxStops || unmarshal(raw, &r.Stop) != nil {
			return r, domain.Invalid("stop", fmt.Sprintf("must be a string or an array of at most %d strings", MaxStops))
		}
	}
	if err := field(b, "seed", &r.Seed); err != nil {
		return r, err
	}
	var n *int64
	if err := field(b, "n", &n); err != nil {
		return r, err
	}
	if n != nil && *n != 1 {
		return r, domain.Invalid("n", "must be 1: the gateway returns one choice")
	}
	if err := parseTools(b, &r); err != nil {
		return r, err
	}
	for _, name := range []string{"tool_choice", "response_format"} {
		if raw, ok := b[name]; ok && !isNull(raw) {
			if err := checkChoice(name, raw); err != nil {
				return r, err
			}
		}
	}
	r.ToolChoice, r.ResponseFormat = nonNull(b["tool_choice"]), nonNull(b["response_format"])
	if err := field(b, "user", &r.User); err != nil {
		return r, err
	}
	if err := field(b, "session_id", &r.SessionID); err != nil {
		return r, err
	}
	if err := domain.CheckCallerIDs(r.SessionID, r.User); err != nil {
		return r, err
	}
	if raw, ok := present(b, "provider"); ok {
		if err := domain.CheckBounds("provider", raw); err != nil { // before it is decoded, twice
			return r, err
		}
	}
	var prov struct {
		Options map[string]any `json:"options"`
	}
	if err := numbersField(b, "provider", &prov); err != nil {
		return r, err
	}
	r.Options = prov.Options
	if err := checkOptionChoices(r.Options); err != nil {
		return r, err
	}
	route, err := parseRoute(b)
	if err != nil {
		return r, err
	}
	r.Route = route
	return r, r.checkText()
}

// extraFields are the fields of b sent on as they came (Request.Extra): all but gatewayFields. A field that names
// one the gateway reads in another case ("MODEL", "Stream", "ſtream", whose ſ folds to s) or before a NUL is
// refused, naming it as sent: the gateway reads its fields by their names only, but an upstream that decodes as
// encoding/json does (Ollama, many proxies) matches keys without regard to case, and takes the last (readAs).
// Sent on, such a field would have the upstream serve another model than the one routed and priced, stream
// under a call that does not, forward the end-user id the gateway keeps, or take a limit or a choice count the
// call's budget was not reserved for. Of several, the first in byte order is named, whatever order they came in.
func extraFields(b Body) (map[string]json.RawMessage, error) {
	var extra map[string]json.RawMessage
	var smuggled, as string
	for k, v := range b {
		if slices.Contains(gatewayFields, k) {
			continue
		}
		if name, ok := readAs(k); ok {
			if smuggled == "" || k < smuggled {
				smuggled, as = k, name
			}
			continue
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = v
	}
	if smuggled != "" {
		return nil, domain.Invalid(smuggled, fmt.Sprintf("is %q spelled otherwise (in another case, or cut at a NUL), which an upstream may read "+
			"as %q: send it as %q", as, as, as))
	}
	return extra, nil
}

// readAs returns the field the gateway reads (gatewayFields, checkedFields) that key names otherwise (NamesField).
// Those fields are lower-case ASCII, so a key of lower-case ASCII without a NUL names one only by being it: the
// common key is settled by one pass over its bytes, where NamesField with each field took a quarter of Parse's time
// for a typical body (BenchmarkParse).
func readAs(key string) (string, bool) {
	if plainKey(key) {
		return "", false
	}
	for _, fields := range [][]string{gatewayFields, checkedFields} {
		for _, f := range fields {
			if key != f && NamesField(key, f) {
				return f, true
			}
		}
	}
	return "", false
}

// includeUsage reads stream_options as encoding/json read it into a struct of its include_usage alone (a *bool):
// null or absent is false, other members are skipped, a key matches without regard to case and the last one wins.
// Read by the scanner, as it is on the path to the first token and json.Unmarshal of this small object took half of
// Parse's time for a typical streamed call (in the gateway's profile at c=1).
func includeUsage(b Body) (bool, error) {
	raw, ok := present(b, "stream_options")
	if !ok {
		return false, nil
	}
	s := jsonenc.NewScanner(raw)
	on, field := false, "stream_options"
	var err error
	if !s.Null() {
		err = s.Object(func(key []byte) error {
			if !jsonenc.Is(key, "include_usage") {
				return s.Skip()
			}
			if s.Null() {
				on = false
				return nil
			}
			if err := s.Bool(&on); err != nil {
				field = "stream_options.include_usage"
				return err
			}
			return nil
		})
	}
	if err == nil && !s.End() {
		err = jsonenc.ErrSyntax
	}
	if err != nil {
		if field == "stream_options" {
			return false, domain.Invalid(field, "must be an object")
		}
		return false, domain.Invalid(field, "must be a boolean")
	}
	return on, nil
}

// plainKey reports a key of ASCII without an upper-case letter or a NUL.
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == 0 || c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// NamesField reports whether an upstream may read key as field, a name in lower-case ASCII: one that matches
// names without regard to case, by Unicode's simple folding as encoding/json does (ſ is s, the Kelvin sign k) or
// by each letter's upper or lower case as .NET's and Java's do (ı is I, İ is i), or one that reads a key as a C
// string, up to its first NUL ("model\u0000x" is model).
func NamesField(key, field string) bool {
	key, _, _ = strings.Cut(key, "\x00")
	i := 0
	for _, r := range key {
		if i == len(field) {
			return false
		}
		f := rune(field[i])
		if r != f && unicode.ToLower(r) != f && unicode.ToUpper(r) != unicode.ToUpper(f) {
			return false
		}
		i++
	}
	return i == len(field)
}

// parseModels reads the models fallback list: the models tried in order, after model when it is set (the
// first of the list is the model otherwise).
func parseModels(b Body, r *Request) error {
	var models []string
	if n := items(b["models"]); n > MaxModels {
		return domain.Invalid("models", fmt.Sprintf("must hold at most %d models", MaxModels))
	}
	if err := field(b, "models", &models); err != nil {
		return err
	}
	if len(models) > MaxModels {
		return domain.Invalid("models", fmt.Sprintf("must hold at most %d models", MaxModels))
	}
	for i, m := range models {
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

// checkText refuses text no database could store (NUL bytes, invalid UTF-8) in what the generation keeps.
func (r Request) checkText() error {
	for i, m := range r.Messages {
		for j, p := range m.Content {
			if !domain.Storable(p.Text) { // the field's name is only made for the error
				return domain.CheckText(partField(i, j)+".text", p.Text)
			}
			if !utf8.Valid(p.Raw) {
				return notUTF8(partField(i, j))
			}
		}
	}
	for i, t := range r.Tools {
		if !utf8.Valid(t.Parameters) {
			return notUTF8(fmt.Sprintf("tools[%d].function.parameters", i))
		}
	}
	for name, raw := range r.Extra { // tool_choice and response_format among them
		if !utf8.Valid(raw) {
			return notUTF8(name)
		}
	}
	for _, f := range []struct{ name, v string }{{"model", r.Model}, {"user", r.User}, {"session_id", r.SessionID}} {
		if err := domain.CheckText(f.name, f.v); err != nil {
			return err
		}
	}
	return catalog.CheckOptions(r.Options)
}

// notUTF8 is the error for a value passed on as it came (Extra, a part or a tool's schema) that is not UTF-8:
// JSON must be, so an upstream would refuse the request, or read the bytes as something else. A string the
// gateway decodes itself is mended by encoding/json or checked as text.
func notUTF8(field string) error { return domain.Invalid(field, "must be valid UTF-8") }

// checkOptionChoices holds an n in provider.options (as "n" or "N", which an upstream decoding as encoding/json
// does reads alike) to the rule of the request's own: 1, as the gateway returns one choice and reserved the budget
// for one.
func checkOptionChoices(options map[string]any) error {
	for slug, o := range options {
		fields, _ := o.(map[string]any)
		for _, k := range []string{"n", "N"} {
			if v, ok := fields[k]; ok && v != json.Number("1") {
				return domain.Invalid("provider.options."+slug+"."+k, "must be 1: the gateway returns one choice")
			}
		}
	}
	return nil
}

func parseTools(b Body, r *Request) error {
	raw, ok := b["tools"]
	if !ok || isNull(raw) {
		return nil
	}
	var tools []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if n := items(raw); n > MaxTools || json.Unmarshal(raw, &tools) != nil {
		return domain.Invalid("tools", fmt.Sprintf("must be an array of at most %d tools", MaxTools))
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return domain.Invalid(fmt.Sprintf("tools[%d]", i), `must be {"type": "function", "function": {"name": ...}}`)
		}
		r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description,
			Parameters: nonNull(t.Function.Parameters), Strict: t.Function.Strict})
	}
	return nil
}

// checkChoice accepts a string or an object, read over rather than decoded: an object is passed on as it came,
// and decoding one into an any (a map or a slice for every {} and [] within) made a 10 MiB tool_choice cost
// 500 MB.
func checkChoice(name string, raw json.RawMessage) error {
	s := jsonenc.NewScanner(raw)
	if c := s.Peek(); (c == '"' || c == '{') && s.Skip() == nil && s.End() {
		return nil
	}
	return domain.Invalid(name, "must be a string or an object")
}

// items counts the items of raw, a JSON array, without decoding them (jsonenc.Scanner.Count): a list is refused
// past its bound before encoding/json holds every item of it (a 10 MiB list of {} tools cost 548 MB to refuse,
// one of "" stop sequences 394 MB).
func items(raw []byte) int {
	s := jsonenc.NewScanner(raw)
	return s.Count()
}

// field decodes b[name] into dst when present and not null, naming the field when its type is wrong.
func field[T any](b Body, name string, dst *T) error {
	raw, ok := present(b, name)
	if !ok {
		return nil
	}
	if err := unmarshal(raw, dst); err != nil {
		return domain.Invalid(name, "must be "+typeName(dst))
	}
	return nil
}

// unmarshal is json.Unmarshal, read by jsonenc.Scanner for a string, a boolean, and an integer or a number held by
// pointer: most of a request's fields, read without reflection nor a second pass over the value. dst is only
// written once the whole value is read, as json.Unmarshal checks it before it decodes. Another value is decoded
// into a copy of *dst that json.Unmarshal may keep, copied back: dst itself is not kept, so that a variable (or
// the Request) whose field it is stays on the stack, as a call decodes a dozen fields that most requests do not
// have.
func unmarshal[T any](raw []byte, dst *T) error {
	v := *dst
	s := jsonenc.NewScanner(raw)
	var err error
	switch d := any(&v).(type) {
	case *string:
		err = s.Str(d)
	case *bool:
		err = s.Bool(d)
	case **int64:
		err = readHeld(&s, d)
	case **float64:
		err = readHeld(&s, d)
	default:
		p := new(T)
		*p = *dst
		err = json.Unmarshal(raw, p)
		*dst = *p
		return err
	}
	if err == nil && !s.End() {
		err = jsonenc.ErrSyntax
	}
	if err == nil {
		*dst = v
	}
	return err
}

// readHeld reads a number that encoding/json holds by pointer into a new one (null: nil).
func readHeld[V int64 | float64](s *jsonenc.Scanner, dst **V) error {
	if s.Null() {
		*dst = nil
		return nil
	}
	v := new(V)
	var err error
	switch p := any(v).(type) {
	case *int64:
		err = s.Int(p)
	case *float64:
		err = s.Float(p)
	}
	*dst = v
	return err
}

// numbersField is field for a value holding free-form objects (provider.options): their numbers decode as
// json.Number, kept exactly as written and checked by catalog.CheckOptions (a 400 naming the number's own
// field), as the HTTP layer decodes speech and video bodies; a float64 would round a long integer and refuse
// 1e999 as if the whole object were malformed.
func numbersField[T any](b Body, name string, dst *T) error {
	raw, ok := present(b, name)
	if !ok {
		return nil
	}
	v := new(T) // as in unmarshal: dst stays where it is
	*v = *dst
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(v)
	*dst = *v
	if err != nil {
		return domain.Invalid(name, "must be "+typeName(dst))
	}
	return nil
}

// present returns b[name] when it is there and not null.
func present(b Body, name string) (json.RawMessage, bool) {
	raw, ok := b[name]
	return raw, ok && !isNull(raw)
}

func typeName(dst any) string {
	switch dst.(type) {
	case *string:
		return "a string"
	case *bool:
		return "a boolean"
	case **int64:
		return "an integer"
	case **float64:
		return "a number"
	case *[]string:
		return "an array of strings"
	}
	return "an object"
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return raw
}

// Texts are the text parts of every message, in order: what the guardrails' content filters scan.
func (r Request) Texts() []string {
	var out []string
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// WithSystem lays a preset's system prompt before the messages, unless it is empty or the request has a system
// (or developer) message of its own. It is laid after Parse, so that Parse's errors hold the caller's messages as
// they came, each named at its index in the body the caller sent. When it is laid, and only then, the request is
// held with it to MaxMessages messages and to the bound on a body's bytes (UnderPreset's): past one, it is the
// 400 that UnderPreset gives past its bounds, naming the field that named the preset.
func (r Request) WithSystem(s SystemPrompt) (Request, error) {
	if s.Text == "" || slices.ContainsFunc(r.Messages, func(m Message) bool { return m.Role == "system" || m.Role == "developer" }) {
		return r, nil
	}
	if err := s.Preset.within("messages", int64(len(r.Messages))+1, MaxMessages); err != nil {
		return r, err
	}
	if err := s.Preset.within("bytes", s.Size+int64(len(s.Text)), s.MaxBytes); err != nil {
		return r, err
	}
	system := Message{Role: "system", Content: []Part{{Type: "text", Text: s.Text}}, Text: true}
	r.Messages = append([]Message{system}, r.Messages...)
	r.Prepended++
	return r, nil
}

// MessageField names field of Messages[i] as the caller sent it: messages[i-Prepended], with field appended.
func (r Request) MessageField(i int, field string) string { return messageField(i-r.Prepended, field) }

// WithTexts returns the request with its text parts replaced, in the order Texts lists them (redacted). A call
// asks for it at each step (the record's input, the estimate, the upstream's request, the usage): when texts are
// the request's own, as they are unless a guardrail redacted, the request is returned as it is, with no copy of
// its messages and their parts.
func (r Request) WithTexts(texts []string) Request {
	if r.hasTexts(texts) {
		return r
	}
	msgs := make([]Message, len(r.Messages))
	i := 0
	for mi, m := range r.Messages {
		m.Content = slices.Clone(m.Content)
		for pi := range m.Content {
			if m.Content[pi].Type == "text" && i < len(texts) {
				m.Content[pi].Text = texts[i]
				i++
			}
		}
		msgs[mi] = m
	}
	r.Messages = msgs
	return r
}

// hasTexts reports whether WithTexts(texts) would replace no text part's text with another.
func (r Request) hasTexts(texts []string) bool {
	i := 0
	for _, m := range r.Messages {
		for _, p := range m.Content {
			if p.Type == "text" && i < len(texts) {
				if texts[i] != p.Text {
					return false
				}
				i++
			}
		}
	}
	return true
}

// Joined is a message's text parts, one after another.
func (m Message) Joined() string {
	if len(m.Content) == 1 && m.Content[0].Type == "text" { // a string content: no copy
		return m.Content[0].Text
	}
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

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
// gives no usage.
func (r Request) PromptTokens() int64 { return r.promptTokens(Tokens) }

// MaxPromptTokens is the most a request's prompt can be (MaxTokensOf: a token a byte), reserved before the call.
func (r Request) MaxPromptTokens() int64 { return r.promptTokens(MaxTokensOf) }

// promptTokens counts a prompt with count for its texts, 4 tokens a message, and ImageTokens an image.
func (r Request) promptTokens(count func(string) int64) int64 {
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
	for _, t := range r.Tools {
		n += count(t.Name) + count(t.Description) + count(string(t.Parameters))
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

// optionInt reads a passthrough number (JSON number, or a numeric string an upstream might accept), saturating;
// 0 when it is none.
func optionInt(v any) int64 {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case json.Number:
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
	return Cost(p, r.MaxPromptTokens(), r.MaxCompletionTokens(opts))
}

// Cost prices tokens on an endpoint, exact to the micro-dollar: the sum of both prices is rounded once, half
// away from zero.
func Cost(p catalog.Pricing, prompt, completion int64) domain.Micros {
	sum := new(big.Int)
	add := func(price *domain.Micros, n int64) {
		if price != nil {
			sum.Add(sum, new(big.Int).Mul(big.NewInt(int64(*price)), big.NewInt(n)))
		}
	}
	add(p.PerMillionPromptTokens, prompt)
	add(p.PerMillionCompletionTokens, completion)
	q, r := new(big.Int).QuoRem(sum, big.NewInt(1_000_000), new(big.Int))
	if new(big.Int).Lsh(r, 1).Cmp(big.NewInt(1_000_000)) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return domain.Micros(1<<63 - 1)
	}
	return domain.Micros(q.Int64())
}
