package chat

import (
	"strings"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
)

// Usage is what an answer used, as its upstream counts it. PromptTokens counts the whole prompt: CachedTokens of
// it were read from the provider's cache, CacheWriteTokens and CacheWrite1hTokens written to it (for 5 minutes, and
// for an hour), each priced apart (Cost).
type Usage struct {
	PromptTokens, CompletionTokens       int64
	ReasoningTokens, CachedTokens        int64
	CacheWriteTokens, CacheWrite1hTokens int64
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
	// Native is the piece as its upstream sent it (whole server-sent events), set only by an upstream that speaks
	// the request's Format: a sink of that format sends these bytes as they came, and its other fields are what
	// the gateway reads of them (for the record and the bill). A chunk may carry Native and nothing else (an event
	// that opens or closes a block, a keep-alive): it is Empty, yet sent on.
	Native domain.Opaque
}

// Empty reports a chunk that carries nothing of the answer: no token, tool call or finish reason (its native
// events, if any, still go to a sink of their format).
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
type ToolIndexes struct {
	at map[int]int
	n  int // the numbers given
}

// Of returns the number of the upstream's index n, and whether n is new.
func (t *ToolIndexes) Of(n int) (int, bool) {
	if i, ok := t.at[n]; ok {
		return i, false
	}
	return t.renew(n)
}

// renew gives the upstream's index n the next number, as a new call's.
func (t *ToolIndexes) renew(n int) (int, bool) {
	if t.n == MaxToolCalls {
		return MaxToolCalls - 1, false
	}
	if t.at == nil {
		t.at = map[int]int{}
	}
	i := t.n
	t.at[n], t.n = i, t.n+1
	return i, true
}

// Add gathers one chunk into the answer.
func (r *Result) Add(c Chunk) {
	r.ContentBytes += int64(len(c.Content))
	r.ReasoningBytes += int64(len(c.Reasoning))
	r.keep(&r.Content, c.Content)
	r.keep(&r.Reasoning, c.Reasoning)
	for _, d := range c.ToolCalls {
		r.AddToolCall(d)
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

// AddToolCall gathers one tool-call delta into the answer and returns the number of the call it belongs to: the
// call of its index (ToolIndexes), or a new call where the delta names another id than the call of its index has
// (an upstream that gives every call index 0). A name that repeats the call's whole name, without another id, adds
// nothing: some upstreams repeat it with every delta of a call.
func (r *Result) AddToolCall(d ToolCallDelta) int {
	r.ToolBytes += int64(len(d.Name) + len(d.Arguments))
	i, isNew := r.tools.Of(d.Index)
	if !isNew && d.ID != "" && r.ToolCalls[i].ID != "" && d.ID != r.ToolCalls[i].ID {
		i, isNew = r.tools.renew(d.Index)
	}
	if isNew {
		r.ToolCalls = append(r.ToolCalls, ToolCall{})
		r.names, r.args = append(r.names, &strings.Builder{}), append(r.args, &strings.Builder{})
	}
	tc := &r.ToolCalls[i]
	if d.ID != "" {
		tc.ID = d.ID
	}
	if d.Name != tc.Name {
		r.keep(r.names[i], d.Name)
	}
	r.keep(r.args[i], d.Arguments)
	tc.Name, tc.Arguments = r.names[i].String(), r.args[i].String()
	return i
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
	for _, n := range []int64{u.PromptTokens, u.CompletionTokens, u.ReasoningTokens, u.CachedTokens, u.CacheWriteTokens,
		u.CacheWrite1hTokens} {
		if n < 0 || n > MaxTokenCount {
			return false
		}
	}
	return u.PromptTokens+u.CompletionTokens <= MaxTokenCount && u.CachedTokens+u.CacheWriteTokens+u.CacheWrite1hTokens <= u.PromptTokens
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
