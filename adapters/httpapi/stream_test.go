package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/ports"
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

// TestStreamYield: a stream yields its core once, at its first flush that sends bytes, when its request is the only
// one its server has in flight, and never otherwise.
func TestStreamYield(t *testing.T) {
	t.Parallel()
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	for _, tt := range []struct {
		name     string
		inFlight int64 // the server's requests in flight, this one's included; 0: nothing counts them
		steps    string
		yields   int
	}{
		{"alone, a stream", 1, "wfwfwf", 1},
		{"alone, a flush with nothing written first", 1, "fwf", 1},
		{"alone, nothing sent", 1, "f", 0},
		{"alone, one whole answer", 1, "wwf", 1},
		{"another request in flight", 2, "wfwf", 0},
		{"uncounted", 0, "wfwf", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest(http.MethodPost, "/chat/completions", nil)
			if tt.inFlight > 0 {
				r := newRequest(c, c.Request.Context())
				r.inFlight = new(atomic.Int64)
				r.inFlight.Store(tt.inFlight)
			}
			s := newFlushWriter(c)
			yields := 0
			s.yield = func() { yields++ }
			s.start(http.StatusOK)
			for _, step := range tt.steps {
				var err error
				if step == 'w' {
					err = s.Write([]byte("data: x\n\n"))
				} else {
					err = s.Flush()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if yields != tt.yields {
				t.Fatalf("yielded %d times, want %d", yields, tt.yields)
			}
		})
	}
}

// TestInFlight: observe counts the server's requests in flight, a request's own included, and not after it ended.
func TestInFlight(t *testing.T) {
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	e := gin.New()
	e.Use(observe(ports.NoMetrics{}))
	var first *request
	entered, release := make(chan struct{}), make(chan struct{})
	e.GET("/hold", func(c *gin.Context) {
		first = requestOf(c)
		close(entered)
		<-release
	})
	alone := make(chan bool, 1)
	e.GET("/ask", func(c *gin.Context) { alone <- requestOf(c).alone() })
	done := make(chan struct{})
	go func() {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/hold", nil))
		close(done)
	}()
	<-entered
	if !first.alone() {
		t.Fatal("the only request in flight is not alone")
	}
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/ask", nil))
	if <-alone {
		t.Fatal("a request beside another in flight is alone")
	}
	close(release)
	<-done
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/ask", nil))
	if !<-alone {
		t.Fatal("a request after the other ended is not alone")
	}
}
