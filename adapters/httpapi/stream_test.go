package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// deadlineRecorder is a response that keeps the write deadlines set on it (http.ResponseController finds
// SetWriteDeadline under gin's writer).
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (r *deadlineRecorder) SetWriteDeadline(d time.Time) error {
	r.deadlines = append(r.deadlines, d)
	return nil
}

// TestStreamWriteDeadline: a stream's idle write deadline is pushed streamIdle ahead by its first write and by
// the first write after each quarter of it (q: the clock counts one), and by no other write.
func TestStreamWriteDeadline(t *testing.T) {
	t.Parallel()
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	for _, tt := range []struct {
		name   string
		steps  string // w a write, q a quarter of streamIdle passing
		pushes int
	}{
		{"no write", "", 0},
		{"one write", "w", 1},
		{"writes within a quarter", "wwwww", 1},
		{"a quarter passes between writes", "wwqww", 2},
		{"quarters pass without a write", "wqqqww", 2},
		{"a write every quarter", "wqwqwqw", 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			c, _ := gin.CreateTestContext(rec)
			c.Request = httptest.NewRequest(http.MethodPost, "/chat/completions", nil)
			s := newFlushWriter(c)
			s.quarters = &quarterClock{}
			s.quarters.once.Do(func() {}) // counted by the test, not by a ticker
			s.start(http.StatusOK)
			for i, step := range tt.steps {
				switch step {
				case 'w':
					n, before := len(rec.deadlines), time.Now()
					if err := s.Write([]byte("x")); err != nil {
						t.Fatal(err)
					}
					after := time.Now()
					if len(rec.deadlines) > n {
						if d := rec.deadlines[n]; d.Before(before.Add(streamIdle)) || d.After(after.Add(streamIdle)) {
							t.Fatalf("step %d pushed the deadline %v past the write, want %v", i, d.Sub(before), streamIdle)
						}
					}
				case 'q':
					s.quarters.n.Add(1)
				}
			}
			if len(rec.deadlines) != tt.pushes {
				t.Fatalf("the deadline was pushed %d times, want %d", len(rec.deadlines), tt.pushes)
			}
		})
	}
}

// failingFlush is a response whose flushes fail, as the server's do once the caller is gone.
type failingFlush struct{ *httptest.ResponseRecorder }

var errFlush = errors.New("flush: broken pipe")

func (failingFlush) FlushError() error { return errFlush }

// TestStreamFlushError: a flush that fails reaches the stream at once, through gin's writer (whose own Flush
// drops the error).
func TestStreamFlushError(t *testing.T) {
	t.Parallel()
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	c, _ := gin.CreateTestContext(failingFlush{httptest.NewRecorder()})
	w := newFlushWriter(c)
	w.start(http.StatusOK)
	if err := w.Write([]byte("data: x\n\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); !errors.Is(err, errFlush) {
		t.Fatalf("Flush = %v, want %v", err, errFlush)
	}
}
