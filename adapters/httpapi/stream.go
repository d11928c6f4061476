package httpapi

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// streamIdle bounds how long one chunk may take to reach a slow caller; there is no total write timeout.
const streamIdle = 60 * time.Second

// flushWriter writes a stream to the response: Write hands bytes to the response's buffers, Flush sends them
// (a no-op when nothing was written since the last), as ports.Flusher says: what was written since the last
// flush leaves in one write on the connection (httpserver's response buffers it). Its write deadline is an idle one: pushed
// streamIdle ahead by the first write and by the first after each quarter of it, rather than on every chunk. A
// timer marks the quarter, so a write reads no clock in between (a stream of 200 tokens read it 200 times); the
// handler stops it when the response is done.
type flushWriter struct {
	c       *gin.Context
	rc      *http.ResponseController
	started bool
	unsent  bool // written since the last flush
	// quarter fires a quarter of streamIdle after the deadline was pushed and sets stale: the next write pushes
	// it again. nil before the first write.
	quarter *time.Timer
	stale   atomic.Bool
}

func newFlushWriter(c *gin.Context) flushWriter {
	return flushWriter{c: c, rc: http.NewResponseController(c.Writer)}
}

func (s *flushWriter) start(status int) {
	s.c.Writer.Header().Set("Cache-Control", "no-store")
	s.c.Writer.WriteHeader(status)
	s.started = true
}

func (s *flushWriter) Write(p []byte) error {
	if s.quarter == nil || s.stale.Load() {
		s.pushDeadline()
	}
	s.unsent = true
	_, err := s.c.Writer.Write(p)
	return err
}

// pushDeadline moves the write deadline streamIdle ahead and sets the timer for a quarter of it.
func (s *flushWriter) pushDeadline() {
	s.stale.Store(false)
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamIdle))
	if s.quarter == nil {
		s.quarter = time.AfterFunc(streamIdle/4, s.quarterPassed)
		return
	}
	s.quarter.Reset(streamIdle / 4)
}

func (s *flushWriter) quarterPassed() { s.stale.Store(true) }

// stop stops the timer once the response is done (a timer left running would keep the writer for up to 15 s).
func (s *flushWriter) stop() {
	if s.quarter != nil {
		s.quarter.Stop()
	}
}

func (s *flushWriter) Flush() error {
	if !s.unsent {
		return nil
	}
	s.unsent = false
	return s.rc.Flush()
}
