package ports

import (
	"context"
	"io"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/catalog"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
)

// VideoSubmission is a job to start at a provider.
type VideoSubmission struct {
	UpstreamModel string
	Request       video.Request
	// Options is the matched provider's passthrough, already stripped of callback and URL keys.
	Options map[string]any
}

// VideoState is what a provider says of a job when polled.
type VideoState struct {
	Status  video.Status
	Outputs []video.Output
	Error   string
	// Seconds is the length of the video, when the provider says.
	Seconds int
	// PollAfter is the provider's suggested wait before the next poll (0: no suggestion).
	PollAfter time.Duration
	ExpiresAt *time.Time
	// Retention, when the provider gives no expiry of its own, is how long it keeps the outputs from now.
	Retention time.Duration
}

// VideoContent is a download in progress: the body streams; Status is 200, or 206 for a range.
type VideoContent struct {
	Body          io.ReadCloser
	Status        int
	ContentType   string
	ContentLength int64 // -1 when unknown
	ContentRange  string
}

// VideoProvider is one upstream's video protocol. Errors are *UpstreamError, but for downloads of a file the
// provider no longer has (video.ErrExpired) and of a range outside it (video.ErrRangeNotValid).
type VideoProvider interface {
	Submit(ctx context.Context, s VideoSubmission) (upstreamID string, err error)
	Poll(ctx context.Context, upstreamID string) (VideoState, error)
	// Download fetches an output, passing a byte range ("bytes=0-99") through when one is given.
	Download(ctx context.Context, upstreamID string, out video.Output, byteRange string) (VideoContent, error)
}

// VideoStore keeps video jobs; a restart loses none.
type VideoStore interface {
	CreateJob(ctx context.Context, j video.Job) error
	// Job returns video.ErrNotFound for an unknown id.
	Job(ctx context.Context, id string) (video.Job, error)
	// UpdateJob applies change to the locked job and stores it.
	UpdateJob(ctx context.Context, id string, change func(*video.Job) error) (video.Job, error)
	// ClaimPoll moves a running job's next poll to next, if it was due at now: only one poller (of all replicas)
	// wins a given poll.
	ClaimPoll(ctx context.Context, id string, now, next time.Time) (bool, error)
	// DueJobs lists running jobs due for a poll at now.
	DueJobs(ctx context.Context, now time.Time, limit int) ([]string, error)
	// ListJobs reads a page of jobs, newest first, after the filter's cursor (keyset: no count, no offset).
	ListJobs(ctx context.Context, f VideoFilter) (VideoPage, error)
}

// VideoFilter selects a page of video jobs: of one workspace (empty: every one), after a cursor (nil: from the
// newest), at most Limit (generation.PageSize bounds it).
type VideoFilter struct {
	WorkspaceID string
	After       *generation.Cursor
	Limit       int
}

// VideoPage is a page of video jobs, newest first; Next is where the next page starts, nil after the last.
type VideoPage struct {
	Jobs []video.Job
	Next *generation.Cursor
}

// VideoSink is where downloaded content goes: the HTTP adapter supplies it.
type VideoSink interface {
	// Start is called once, before the first byte, with what the caller is told of the content.
	Start(c VideoContent)
	// Write hands a chunk on, to be sent at the next Flush; an error means the caller is gone.
	Write(p []byte) error
	Flusher
}

// VideoModel is a configured video model as listed to callers.
type VideoModel struct {
	Model   catalog.Model
	Created time.Time
}

// VideoService is the video use case.
type VideoService interface {
	Create(ctx context.Context, by account.Principal, req video.Request, caller generation.Caller) (video.Job, error)
	// Get returns the job, refreshed from the provider when a poll is due.
	Get(ctx context.Context, by account.Principal, id string) (video.Job, error)
	// Content streams output index of a completed job into sink, refreshing the job first as Get does.
	Content(ctx context.Context, by account.Principal, id string, index int, byteRange string, sink VideoSink) error
	// List pages through the jobs the caller sees (a management key: every workspace's), newest first, each
	// with its status as of now (not refreshed from the provider).
	List(ctx context.Context, by account.Principal, f VideoFilter) (VideoPage, error)
	Models() []VideoModel
}
