package app

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// bufPool holds the buffers that carry a stream from upstream to caller: one per stream in flight. 16 KiB, as
// the upstream connection's read buffer (adapters/upstream): one read takes what that buffer holds.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// downloadPool holds the buffers that carry video downloads: larger, as downloads are large and fast, so each
// read and write moves more per system call.
var downloadPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// errCallerGone marks a stream the caller stopped reading.
var errCallerGone = errors.New("the caller went away")

// callerLeft reports a call that failed because its caller went away: a write to the caller failed
// (errCallerGone), or the caller's request ended (ctx, the request's context) while the call was under way,
// whatever the failure the upstream's side then gave (a read cut, a local engine killed). That is read from the
// caller's context, never from the error: an upstream's own failure — its watchdog's timeout among them, which
// ends the upstream call's context and not the caller's — leaves the caller's context live, whatever error it
// carries. The gateway's own shutdown also ends the request's context: shutdownCut tells it apart.
func callerLeft(ctx context.Context, err error) bool {
	return err != nil && (errors.Is(err, errCallerGone) || ctx.Err() != nil)
}

// writer is where a stream of bytes goes: a modality's sink.
type writer interface {
	Write(p []byte) error
	ports.Flusher
}

// flushing reads an upstream's answer for a sink: before each read, as a read may wait for the upstream, it
// flushes what the sink holds. Whatever one read brings — a run of audio, every server-sent event the
// connection had — thus leaves in one write, and nothing the gateway has waits with it. A flush that fails
// fails the read with errCallerGone.
type flushing struct {
	r    io.Reader
	sink ports.Flusher
}

func (f flushing) Read(p []byte) (int, error) {
	if err := f.sink.Flush(); err != nil {
		return 0, errCallerGone
	}
	return f.r.Read(p)
}

// firstBytes waits for the first bytes of a streamed answer, so that a provider that fails before sending any
// can still be failed over, and says whether they are the whole answer (the read that brought them ended it). An
// answer that ends empty is the provider's failure: what names what it lacks.
func firstBytes(body io.Reader, buf []byte, status int, what string) ([]byte, bool, error) {
	for {
		n, err := body.Read(buf)
		if n > 0 {
			return buf[:n], err == io.EOF, nil // another failure comes again with the next read
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = &ports.UpstreamError{Status: status, Kind: domain.KindUpstream, Retryable: true, Reason: "the provider sent no " + what}
		}
		return nil, false, err
	}
}

// pump sends first (when there is one) at once, then the rest of body to sink as it arrives, flushing what
// arrived together in one write, and returns the bytes sent. What arrives with the answer's end is not flushed:
// the response's end sends it with its own framing in one write (a flush first cost a write of its own, and the
// caller's wait for it). ended says first is the whole answer. A failed read is an upstream failure; a failed
// write or flush means the caller is gone.
func pump(sink writer, body io.Reader, buf, first []byte, ended bool) (int64, error) {
	var sent int64
	if len(first) > 0 {
		if sink.Write(first) != nil || !ended && sink.Flush() != nil {
			return 0, errCallerGone
		}
		sent = int64(len(first))
	}
	if ended {
		return sent, nil
	}
	in := flushing{r: body, sink: sink}
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if werr := sink.Write(buf[:n]); werr != nil {
				return sent, errCallerGone
			}
			sent += int64(n)
		}
		if err == io.EOF {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
	}
}
