// Package generation is the gateway's receipt for one upstream call: who called, which model and provider, how
// long it took and what it cost (the Record), and, kept apart, what was sent and returned (the Content).
package generation

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/guardrail"
)

type APIType string

const (
	TTS         APIType = "tts"
	Video       APIType = "video"
	Completions APIType = "completions"
	Embeddings  APIType = "embeddings"
)

// Record is the narrow metadata row of a generation.
type Record struct {
	ID          string
	RequestID   string
	UpstreamID  string
	APIType     APIType
	WorkspaceID string
	KeyHash     string
	// UserID is the member who owns the calling key, when known.
	UserID       *string
	Model        string
	ProviderName string
	PresetID     *string
	Router       *string
	Origin       string
	Referer      string
	UserAgent    string
	ExternalUser string
	SessionID    *string
	// Status is the HTTP status the caller got.
	Status             int
	Streamed           bool
	Cancelled          bool
	BYOK               bool
	FinishReason       string
	NativeFinishReason string
	// Latency is the time to the first byte; GenerationTime the whole call.
	Latency           time.Duration
	GenerationTime    time.Duration
	ModerationLatency time.Duration
	Counts            Counts
	TotalCost         domain.Micros
	UpstreamCost      domain.Micros
	CacheDiscount     *domain.Micros
	DataRegion        string
	ServiceTier       *string
	WebSearchEngine   *string
	// Attempts has one entry per upstream attempt, fallbacks included, in order.
	Attempts []Attempt
	// Flags names the content filters that matched with action "flag", and the gateway's own flags on the call
	// (FlagUsageImplausible).
	Flags     []string
	CreatedAt time.Time
}

// Statuses a record keeps beside those of failures (domain.Kind.Status): the HTTP status the caller got.
const (
	StatusOK = 200
	// StatusClientClosed is a call whose caller left before any answer (nginx's 499).
	StatusClientClosed = 499
)

// Counts are the integer usage counters of a generation.
type Counts struct {
	TokensPrompt, TokensCompletion                                           int64
	NativeTokensPrompt, NativeTokensCompletion, NativeTokensCompletionImages int64
	NativeTokensReasoning, NativeTokensCached                                int64
	NumInputAudioPrompt, NumMediaPrompt, NumMediaCompletion                  int64
	NumSearchResults, NumFetches                                             int64
}

// Add sums two sets of counters: what a request said with what its answer measured.
func (c Counts) Add(o Counts) Counts {
	c.TokensPrompt += o.TokensPrompt
	c.TokensCompletion += o.TokensCompletion
	c.NativeTokensPrompt += o.NativeTokensPrompt
	c.NativeTokensCompletion += o.NativeTokensCompletion
	c.NativeTokensCompletionImages += o.NativeTokensCompletionImages
	c.NativeTokensReasoning += o.NativeTokensReasoning
	c.NativeTokensCached += o.NativeTokensCached
	c.NumInputAudioPrompt += o.NumInputAudioPrompt
	c.NumMediaPrompt += o.NumMediaPrompt
	c.NumMediaCompletion += o.NumMediaCompletion
	c.NumSearchResults += o.NumSearchResults
	c.NumFetches += o.NumFetches
	return c
}

// Attempt is one upstream call made for a generation.
type Attempt struct {
	ProviderName  string
	EndpointID    string
	UpstreamModel string
	UpstreamID    string
	// Status is the upstream's HTTP status, or 0 when none came (connection failure, timeout).
	Status  int
	Latency time.Duration
	BYOK    bool
	Error   string
	// Raw is the upstream's error body, truncated; kept with the content, never sent to the caller.
	Raw string
}

// Content is what was sent and what came back. A nil Failure means the generation succeeded.
type Content struct {
	Input   Input
	Output  Output
	Failure *Failure
}

type Message struct {
	Role    string
	Content string
}

// Input is either a list of messages or a single prompt.
type Input struct {
	Messages []Message
	Prompt   *string
}

type Output struct {
	Completion string
	Reasoning  *string
}

// Failure is why a generation failed, with the earlier failed attempts.
type Failure struct {
	Message      string
	Status       int
	ProviderName *string
	Raw          *string
	Previous     []Attempt
}

// Entry is what the request path hands to the recorder: the record and, when kept, its content, and the
// guardrail holds the call reserved. Writing an entry also books its charge in the same transaction: the key's
// usage and the organization's credit usage grow by Record.TotalCost, and the holds are settled at it.
type Entry struct {
	Record  Record
	Content *Content
	Holds   []guardrail.Hold
}

// Repaired is the entry with every text a database cannot store repaired (domain.RepairText): whatever an
// upstream or a header put in it, the entry can be written.
func (e Entry) Repaired() Entry {
	fix := domain.RepairText
	fixp := func(p *string) *string {
		if p == nil || domain.Storable(*p) {
			return p
		}
		v := fix(*p)
		return &v
	}
	fixAttempts := func(as []Attempt) []Attempt {
		for i, a := range as {
			if !storable(a.ProviderName, a.EndpointID, a.UpstreamModel, a.UpstreamID, a.Error, a.Raw) {
				as = slices.Clone(as)
				as[i].ProviderName, as[i].EndpointID, as[i].UpstreamModel = fix(a.ProviderName), fix(a.EndpointID), fix(a.UpstreamModel)
				as[i].UpstreamID, as[i].Error, as[i].Raw = fix(a.UpstreamID), fix(a.Error), fix(a.Raw)
			}
		}
		return as
	}
	r := &e.Record
	r.ID, r.RequestID, r.UpstreamID, r.WorkspaceID, r.KeyHash = fix(r.ID), fix(r.RequestID), fix(r.UpstreamID), fix(r.WorkspaceID), fix(r.KeyHash)
	r.APIType = APIType(fix(string(r.APIType)))
	r.UserID, r.PresetID, r.Router, r.SessionID = fixp(r.UserID), fixp(r.PresetID), fixp(r.Router), fixp(r.SessionID)
	r.Model, r.ProviderName, r.Origin, r.Referer = fix(r.Model), fix(r.ProviderName), fix(r.Origin), fix(r.Referer)
	r.UserAgent, r.ExternalUser, r.FinishReason, r.NativeFinishReason = fix(r.UserAgent), fix(r.ExternalUser), fix(r.FinishReason), fix(r.NativeFinishReason)
	r.DataRegion, r.ServiceTier, r.WebSearchEngine = fix(r.DataRegion), fixp(r.ServiceTier), fixp(r.WebSearchEngine)
	r.Attempts = fixAttempts(r.Attempts)
	for i, f := range r.Flags {
		if !domain.Storable(f) {
			r.Flags = slices.Clone(r.Flags)
			r.Flags[i] = fix(f)
		}
	}
	if e.Content != nil {
		c := *e.Content
		c.Input.Prompt = fixp(c.Input.Prompt)
		for i, m := range c.Input.Messages {
			if !storable(m.Role, m.Content) {
				c.Input.Messages = slices.Clone(c.Input.Messages)
				c.Input.Messages[i] = Message{Role: fix(m.Role), Content: fix(m.Content)}
			}
		}
		c.Output.Completion, c.Output.Reasoning = fix(c.Output.Completion), fixp(c.Output.Reasoning)
		if c.Failure != nil {
			f := *c.Failure
			f.Message, f.ProviderName, f.Raw, f.Previous = fix(f.Message), fixp(f.ProviderName), fixp(f.Raw), fixAttempts(f.Previous)
			c.Failure = &f
		}
		e.Content = &c
	}
	return e
}

// storable reports whether every one of texts is storable (domain.Storable), without joining them into a copy.
func storable(texts ...string) bool {
	for _, s := range texts {
		if !domain.Storable(s) {
			return false
		}
	}
	return true
}

var (
	ErrNotFound = domain.E(domain.KindNotFound, "generation_not_found", "generation not found")
	ErrNoID     = domain.Invalid("id", "is required: pass the generation id as ?id=gen-...")
)

// NewID makes a generation id, gen-<unix seconds>-<suffix>, from an unguessable random value such as a UUID.
func NewID(now time.Time, random string) string {
	return "gen-" + strconv.FormatInt(now.Unix(), 10) + "-" + strings.ReplaceAll(random, "-", "")
}

// MaxRaw bounds how much of an upstream error body is kept.
const MaxRaw = 4 << 10

// TruncateRaw keeps at most MaxRaw bytes of an upstream body.
func TruncateRaw(b []byte) string {
	if len(b) > MaxRaw {
		b = b[:MaxRaw]
	}
	return strings.ToValidUTF8(string(b), "")
}

// MaxText bounds each text a generation's content keeps (a message, the prompt, the completion, the reasoning):
// an upstream that floods an answer, or a caller's long prompt, is kept to its start and a note that it was cut.
const MaxText = 1 << 20

// FlagUsageImplausible is the flag (Record.Flags) of a call whose upstream reported a usage the call could not
// have used: it was billed at the gateway's estimate, and the record keeps the upstream's counts as its native
// ones.
const FlagUsageImplausible = "usage_implausible"

// cutNote ends a text that was cut: how long it was, and how much of it is kept.
func cutNote(of int64, kept int) string {
	return "\n[cut by the gateway: " + strconv.FormatInt(of, 10) + " bytes in all, the first " + strconv.Itoa(kept) + " kept]"
}

// Cut is text as a generation's content keeps it: whole when it is at most MaxText bytes, else its start (cut at
// the start of a character) and a note of how long it was, MaxText bytes at most in all. of is the whole text's
// length, which is more than len(text) when only its start was kept (chat.Result.Keep). A text Cut returned is
// returned as it is.
func Cut(text string, of int64) string {
	of = max(of, int64(len(text)))
	if of <= MaxText {
		return text
	}
	n := min(len(text), MaxText-len(cutNote(of, MaxText)))
	for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + cutNote(of, n)
}

// Bounded is the content with each of its texts at most MaxText bytes (Cut); the content itself when none is
// longer.
func (c *Content) Bounded() *Content {
	long := func(s string) bool { return len(s) > MaxText }
	cut := long(c.Output.Completion) || c.Output.Reasoning != nil && long(*c.Output.Reasoning) ||
		c.Input.Prompt != nil && long(*c.Input.Prompt) || slices.ContainsFunc(c.Input.Messages, func(m Message) bool { return long(m.Content) })
	if !cut {
		return c
	}
	out := *c
	cutp := func(p *string) *string {
		if p == nil || !long(*p) {
			return p
		}
		v := Cut(*p, int64(len(*p)))
		return &v
	}
	out.Input.Prompt, out.Output.Reasoning = cutp(c.Input.Prompt), cutp(c.Output.Reasoning)
	out.Output.Completion = Cut(c.Output.Completion, int64(len(c.Output.Completion)))
	out.Input.Messages = slices.Clone(c.Input.Messages)
	for i, m := range out.Input.Messages {
		out.Input.Messages[i].Content = Cut(m.Content, int64(len(m.Content)))
	}
	return &out
}
