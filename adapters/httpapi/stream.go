package httpapi

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/ports"
)

// streamIdle bounds how long one chunk may take to reach a slow caller; there is no total write timeout.
const streamIdle = 60 * time.Second

// flushWriter writes a stream to the response: Write hands bytes to the response's buffers, Flush sends them
// (a no-op when nothing was written since the last), as ports.Flusher says. Its write deadline is an idle
// one: pushed streamIdle ahead by the first write and by the first after each quarter of it that a clock shared
// by every stream counts (streamQuarters), rather than on every chunk. A write reads no clock in between (a
// stream of 200 tokens read it 200 times), and a stream has no timer of its own to arm and stop.
type flushWriter struct {
	c       *gin.Context
	rc      http.ResponseController
	started bool
	unsent  bool // written since the last flush
	// quarters counts quarters of streamIdle; pushed is its count when the deadline was last pushed, if armed.
	quarters *quarterClock
	pushed   uint64
	armed    bool
	// values holds the values of the headers a sink sets (header): a slice of each is the header's.
	values [2]string
	used   int
}

// newFlushWriter controls the response under gin's writer: gin's Flush drops the error of a flush that failed
// (the caller gone), which a stream must hear at once rather than at its next write, a chunk later.
func newFlushWriter(c *gin.Context) flushWriter {
	var w http.ResponseWriter = c.Writer
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		w = u.Unwrap()
	}
	return flushWriter{c: c, rc: *http.NewResponseController(w), quarters: &streamQuarters}
}

// noStore is a stream's Cache-Control: one slice for every stream (which no one writes to), where Header.Set
// allocated one a call.
var noStore = []string{"no-store"}

func (s *flushWriter) start(status int) {
	s.c.Writer.Header()["Cache-Control"] = noStore
	s.c.Writer.WriteHeader(status)
	s.started = true
}

// header sets the response's header name, given in its canonical form, to value, in one of the writer's slots
// while one is free (Header.Set allocated a slice a call): a sink sets a header or two once.
func (s *flushWriter) header(name, value string) {
	h := s.c.Writer.Header()
	if s.used == len(s.values) {
		h.Set(name, value)
		return
	}
	s.values[s.used] = value
	h[name] = s.values[s.used : s.used+1 : s.used+1]
	s.used++
}

func (s *flushWriter) Write(p []byte) error {
	if q := s.quarters.now(); !s.armed || q != s.pushed {
		s.pushed, s.armed = q, true
		_ = s.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	}
	s.unsent = true
	_, err := s.c.Writer.Write(p)
	return err
}

// Flush sends what was written since the last flush; its error is the connection's (the caller gone), which
// net/http's server also answers by cancelling the request's context.
func (s *flushWriter) Flush() error {
	if !s.unsent {
		return nil
	}
	s.unsent = false
	return s.rc.Flush()
}

// startAnswer sets an answer's generation id and, for a stream, its event-stream headers, and sends its head.
func (s *flushWriter) startAnswer(h ports.ChatHead) {
	s.header("X-Generation-Id", h.GenerationID)
	if h.Stream {
		hdr := s.c.Writer.Header()
		hdr["Content-Type"], hdr["X-Accel-Buffering"] = eventStream, noBuffering
		s.start(http.StatusOK)
	}
}

// whole sends an answer that is not streamed: b, a JSON body (or err, its encoding's failure), at once.
func (s *flushWriter) whole(b []byte, err error) error {
	if err != nil {
		return err
	}
	s.header("Content-Type", "application/json; charset=utf-8")
	s.start(http.StatusOK)
	if err := s.Write(b); err != nil {
		return err
	}
	return s.Flush()
}

// quarterClock counts the quarters of streamIdle that passed since its first use. A stream whose deadline was
// pushed at count n, writing while the count is still n, pushed it less than a quarter of streamIdle ago.
type quarterClock struct {
	once sync.Once
	n    atomic.Uint64
}

// streamQuarters is the clock of every stream; its ticker runs from the first stream on.
var streamQuarters quarterClock

func (q *quarterClock) now() uint64 {
	q.once.Do(func() {
		go func() {
			for range time.Tick(streamIdle / 4) {
				q.n.Add(1)
			}
		}()
	})
	return q.n.Load()
}
