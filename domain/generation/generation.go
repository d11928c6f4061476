// Package generation is the gateway's receipt for one upstream call: who called, which model and provider, how
// long it took and what it cost (the Record), and, kept apart, what was sent and returned (the Content).
package generation

import (
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
)

type APIType string

const (
	TTS         APIType = "tts"
	Video       APIType = "video"
	Completions APIType = "completions"
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
	// Flags names the content filters that matched with action "flag".
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

// Entry is what the request path hands to the recorder: the record and, when kept, its content.
type Entry struct {
	Record  Record
	Content *Content
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
