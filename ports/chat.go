package ports

import (
	"context"
	"io"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
)

// ChatRequest is what a chat provider is asked for: the caller's request, with its text as the guardrails
// admitted it, for one upstream model.
type ChatRequest struct {
	UpstreamModel string
	Request       chat.Request
	// Options is the matched provider's passthrough, already stripped of callback and URL keys. Canonical
	// fields win over it.
	Options map[string]any
}

// ChatStream is a provider's answer as it streams, translated into chunks.
type ChatStream interface {
	// Next returns the next chunk, io.EOF at the end of a whole answer, or an *UpstreamError when the answer
	// broke off (wrapping the read's own error when reading failed).
	Next() (chat.Chunk, error)
}

// ChatReply is a provider's answer once its headers came: its body, and how to read chunks from it. Closing
// Body cancels the upstream call.
type ChatReply struct {
	Body io.ReadCloser
	// Decode reads the answer's chunks from r, a reader of Body: the caller may stand between the two (the
	// pipeline flushes what it sent on before each read that may wait for the upstream).
	Decode     func(r io.Reader) ChatStream
	UpstreamID string
}

// ChatProvider is one upstream's chat protocol. Errors are *UpstreamError. Every call streams upstream, whether
// or not the caller asked for a stream: a call is always read the same way.
type ChatProvider interface {
	Chat(ctx context.Context, req ChatRequest) (ChatReply, error)
}

// TokenCounter is a chat provider that counts a request's input tokens as it bills them (Anthropic's
// count_tokens), found by type assertion. Errors are *UpstreamError.
type TokenCounter interface {
	CountTokens(ctx context.Context, req ChatRequest) (int64, error)
}

// TokenCount is a request's input tokens: counted by the upstream of the endpoint it would go to first (Exact),
// or the gateway's estimate (chat.Request.PromptTokens) when that upstream counts none.
type TokenCount struct {
	InputTokens int64
	Exact       bool
}

// FormatSpeaker is a chat provider that may pass a request of a wire format on as it came (chat.Request.Extra)
// and answer in that format's native events. A request that needs its own format upstream (one that continues a
// stored response) is refused by a provider that is not one, or does not speak its format.
type FormatSpeaker interface {
	Speaks(f chat.Format) bool
}

// ChatHead is what a chat answer's first line says: its generation id, model and time, and how it is sent.
type ChatHead struct {
	GenerationID, Model, Provider string
	Created                       int64
	// Stream means server-sent events; IncludeUsage a usage chunk before their end.
	Stream, IncludeUsage bool
}

// ChatSink is where a chat call's answer goes: the HTTP adapter supplies it and owns the wire format.
type ChatSink interface {
	// Start is called once, before anything is sent.
	Start(h ChatHead)
	// Chunk hands on each piece of the answer that carries anything (chat.Chunk.Empty, or native events): for a
	// stream, to be sent at the next Flush; for an answer that is not streamed, to keep what Finish needs beyond
	// the gathered result (a sink of the upstream's own format may rebuild the answer from its native events), or
	// nothing. An error means the caller is gone, unless it is an *UpstreamError: the upstream's answer is one the
	// sink cannot put in the caller's format (malformed), which fails the call as the upstream's fault.
	Chunk(c chat.Chunk) error
	Flusher
	// Finish ends a whole answer and sends it: the usage (and cost) chunk and [DONE] for a stream, the
	// completion otherwise. Its error means what Chunk's does.
	Finish(r *chat.Result, cost domain.Micros) error
	// Fail ends a stream that broke after it started, with an error event its clients understand, and sends it.
	Fail(err error)
}

// ChatBody is a chat request's body as its wire format reads it (an inbound adapter's): the use case asks it, in
// this order, for the preset it names, to lay itself over that preset, and for the request it holds.
type ChatBody interface {
	// Preset is the preset the body names, nil when none; the reference leaves the body (a model "m@preset/x" is
	// then m).
	Preset() (*chat.PresetRef, error)
	// UnderPreset lays the body over a preset version's configuration: each field the body sets wins, the others
	// come from the configuration. The body so made is held to the bounds the caller's own is (its fields, and
	// maxBytes of them): past one, a 400 naming ref.Field (chat.PresetRef.Within). It returns the bytes of the
	// fields, with which a system prompt laid later counts (chat.SystemPrompt).
	UnderPreset(config map[string]any, ref chat.PresetRef, maxBytes int64) (int64, error)
	// Request decodes the body into a request held to the domain's rules (chat.Request.Validate); every error
	// names its field.
	Request() (chat.Request, error)
}

// ChatService is the chat completions use case. It sends the answer into sink and returns the generation id,
// also when it fails (a failed call has a record too, unless it failed validation).
type ChatService interface {
	Complete(ctx context.Context, by account.Principal, body ChatBody, caller generation.Caller, sink ChatSink) (string, error)
	// CountTokens counts the input tokens of the request body holds, as the call would send it (its preset
	// applied); it makes no call, record or charge.
	CountTokens(ctx context.Context, by account.Principal, body ChatBody) (TokenCount, error)
}
