package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// streamIdle bounds how long one chunk may take to reach a slow caller; there is no total write timeout.
const streamIdle = 60 * time.Second

// flushWriter writes a stream to the response as it arrives, flushing each chunk. Its write deadline is an idle
// one: pushed streamIdle ahead whenever a quarter of it has passed, rather than on every chunk.
type flushWriter struct {
	c        *gin.Context
	rc       *http.ResponseController
	started  bool
	deadline time.Time
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
	if now := time.Now(); s.deadline.Sub(now) < 3*streamIdle/4 {
		s.deadline = now.Add(streamIdle)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
	if _, err := s.c.Writer.Write(p); err != nil {
		return err
	}
	return s.rc.Flush()
}
