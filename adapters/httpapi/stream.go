package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// streamIdle bounds how long one chunk may take to reach a slow caller; there is no total write timeout.
const streamIdle = 60 * time.Second

// flushWriter writes a stream to the response: Write hands bytes to the response's buffers, Flush sends them
// (a no-op when nothing was written since the last), as ports.Flusher says: what was written since the last
// flush leaves in one write on the connection (envelopeConn.hold). Its write deadline is an idle one: pushed
// streamIdle ahead whenever a quarter of it has passed, rather than on every chunk.
type flushWriter struct {
	c        *gin.Context
	rc       *http.ResponseController
	conn     *envelopeConn // nil when the request did not come through envelopeListener
	started  bool
	unsent   bool // written since the last flush
	deadline time.Time
}

func newFlushWriter(c *gin.Context) flushWriter {
	return flushWriter{c: c, rc: http.NewResponseController(c.Writer), conn: heldConn(c.Request.Context())}
}

func (s *flushWriter) start(status int) {
	s.c.Writer.Header().Set("Cache-Control", "no-store")
	s.c.Writer.WriteHeader(status)
	s.started = true
}

func (s *flushWriter) Write(p []byte) error {
	if now := time.Now(); s.deadline.Sub(now) < 3*streamIdle/4 {
		s.deadline = now.Add(streamIdle)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
	s.unsent = true
	if s.conn != nil {
		s.conn.hold()
	}
	_, err := s.c.Writer.Write(p)
	return err
}

func (s *flushWriter) Flush() error {
	if !s.unsent {
		return nil
	}
	s.unsent = false
	err := s.rc.Flush()
	if s.conn != nil {
		if rerr := s.conn.release(); err == nil {
			err = rerr
		}
	}
	return err
}
