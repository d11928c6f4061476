package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/ports"
)

// MaxEvent bounds one server-sent event of text (chat): a provider that sends a longer one has broken its stream.
const MaxEvent = 4 << 20

// MaxAudioEvent bounds one event that carries audio (Gemini's speech sends base64 PCM in its events, as much as
// a whole clip in one: about 42 MB for the longest its models make).
const MaxAudioEvent = 128 << 20

// SSE reads server-sent events (text/event-stream) from an upstream: `data:` lines, joined with newlines when an
// event has several, ended by a blank line; `event:` names; comments and other fields skipped. LF and CRLF end
// lines.
//
// Its read buffer is borrowed from a pool and given back when the stream is over: when Next returns an error
// (which it then returns again), or at Close. An event's data never points into it (Next copies each line's
// value into data), so what Next handed out stays valid until the next call as before.
type SSE struct {
	r    *bufio.Reader // nil once the stream is over
	err  error         // why it is over
	max  int
	data bytes.Buffer
	long []byte
}

// NewSSE reads events of at most MaxEvent bytes from body through a buffer of 4 KiB, the size of the caller's
// write buffer: the upstream connection below already reads 16 KiB at a time, so a larger one here would only
// hold more per stream.
func NewSSE(body io.Reader) *SSE { return NewSSESized(body, MaxEvent) }

// NewSSESized is NewSSE for events of at most max bytes.
func NewSSESized(body io.Reader, max int) *SSE {
	s := &SSE{}
	s.Init(body, max)
	return s
}

// Init readies a zero SSE to read events of at most max bytes from body, as NewSSESized's does: for an SSE held by
// value in a stream decoder, one allocation with it.
func (s *SSE) Init(body io.Reader, max int) {
	r := readers.Get().(*bufio.Reader)
	r.Reset(body)
	s.r, s.max = r, max
}

// readers are the read buffers of streams that are over: every stream had allocated its own (about a tenth of
// the bytes a streamed chat call allocated).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// Close ends a stream whose protocol ended it with an event of its own (OpenAI's data: [DONE]) before its body
// ended: the read buffer goes back to the pool, and Next returns io.EOF from then on.
func (s *SSE) Close() { s.end(io.EOF) }

// end gives the read buffer back, without the body it read, and keeps err for Next.
func (s *SSE) end(err error) {
	if s.r == nil {
		return
	}
	s.r.Reset(nil)
	readers.Put(s.r)
	s.r, s.err = nil, err
}

// ErrEventTooLarge is a stream whose event passed its bound.
var ErrEventTooLarge = errors.New("a server-sent event is larger than the gateway accepts")

// Next returns the next event's name and data (valid until the next call); io.EOF when the stream ended
// between events.
func (s *SSE) Next() (event string, data []byte, err error) {
	if s.r == nil {
		return "", nil, s.err
	}
	s.data.Reset()
	fields, hasData := false, false
	for {
		line, err := s.line()
		if err == io.EOF && fields {
			s.end(io.EOF)
			return event, s.data.Bytes(), nil // a last event without its blank line
		}
		if err != nil {
			s.end(err)
			return "", nil, err
		}
		if len(line) == 0 {
			if fields {
				return event, s.data.Bytes(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if hasData {
				s.data.WriteByte('\n')
			}
			s.data.Write(value)
			fields, hasData = true, true
			if s.data.Len() > s.max {
				s.end(ErrEventTooLarge)
				return "", nil, ErrEventTooLarge
			}
		case "event":
			event, fields = string(value), true
		}
	}
}

// line reads one line without its ending; it is valid until the next read.
func (s *SSE) line() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull { // a long line: gather it
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > s.max {
				return nil, ErrEventTooLarge
			}
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// Broke is the error for a stream that ended (or failed to read) before its answer was whole: an
// *ports.UpstreamError or a caller who went away as they are, anything else a break worth failing over.
func Broke(err error, status int) error {
	var ue *ports.UpstreamError
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return err
	}
	return &ports.UpstreamError{Status: status, Kind: domain.KindUpstream, Retryable: true,
		Reason: "the provider's stream broke off", Err: err}
}

// BadEvent is the error for a stream event that is not the JSON the protocol promises; the event is kept for
// the record, scrubbed of anything shaped like a secret.
func BadEvent(data []byte, status int, err error) error {
	return &ports.UpstreamError{Status: status, Kind: domain.KindUpstream, Retryable: true,
		Reason: "the provider sent an event that is not JSON", Raw: generation.TruncateRaw([]byte(Scrub(string(data)))), Err: err}
}

// EventFailed classifies an error event in a stream as the same error answered with status would be, its
// message and the event scrubbed as error bodies are.
func EventFailed(status int, msg string, data []byte) *ports.UpstreamError {
	return Classify(status, Scrub(msg), nil, []byte(Scrub(string(data))))
}
