package app

import (
	"errors"
	"io"
	"sync"
)

// bufPool holds the buffers that carry a stream from upstream to caller: one per stream in flight.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// errCallerGone marks a stream the caller stopped reading.
var errCallerGone = errors.New("the caller went away")

// writer is where a stream goes: an audio or a video sink.
type writer interface{ Write(p []byte) error }

// pump sends first (when there is one) and then the rest of body to sink as it arrives, and returns the bytes
// sent. A failed read is an upstream failure; a failed write means the caller is gone.
func pump(sink writer, body io.Reader, buf, first []byte) (int64, error) {
	var sent int64
	if len(first) > 0 {
		if err := sink.Write(first); err != nil {
			return 0, errCallerGone
		}
		sent = int64(len(first))
	}
	for {
		n, err := body.Read(buf)
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
