package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
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
// one its server has in flight, and never otherwise. A flush only reads the request's record: one without a
// record (no observe before the handler) is left as it is, where the flush put a record of its own on it.
func TestStreamYield(t *testing.T) {
	t.Parallel()
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	for _, tt := range []struct {
		name     string
		inFlight int64 // the server's requests in flight, this one's included; 0: nothing counts them; -1: no record
		steps    string
		yields   int
	}{
		{"alone, a stream", 1, "wfwfwf", 1},
		{"alone, a flush with nothing written first", 1, "fwf", 1},
		{"alone, nothing sent", 1, "f", 0},
		{"alone, one whole answer", 1, "wwf", 1},
		{"another request in flight", 2, "wfwf", 0},
		{"uncounted", 0, "wfwf", 0},
		{"no record", -1, "wfwf", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest(http.MethodPost, "/chat/completions", nil)
			if tt.inFlight >= 0 {
				r := newRequest(c, c.Request.Context())
				if tt.inFlight > 0 {
					r.inFlight = new(atomic.Int64)
					r.inFlight.Store(tt.inFlight)
				}
			}
			req := c.Request
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
			if c.Request != req {
				t.Fatal("a flush replaced the request")
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

// probeChat answers a chat call with errProbe, and says whether its request was the only one in flight (alone);
// a call while panicWith is set panics with it instead, once.
type probeChat struct {
	panicWith any
	alone     bool
}

var errProbe = errors.New("probe")

func (p *probeChat) Complete(ctx context.Context, _ account.Principal, _ chat.Body, _ generation.Caller, _ ports.ChatSink) (string, error) {
	if v := p.panicWith; v != nil {
		p.panicWith = nil
		panic(v)
	}
	p.alone = recordOf(ctx).alone()
	return "", errProbe
}

// TestInFlightEnds: whichever way a request ends in the server's middleware — answered, refused before its handler,
// panicking, aborted, on no route or a method its route does not take — it is no longer counted in flight after.
func TestInFlightEnds(t *testing.T) {
	t.Parallel()
	call := sdkRequest("/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[]}`)
	for _, tt := range []struct {
		name      string
		req       string // the first request, as sent; empty: call
		panicWith any
	}{
		{"answered", "", nil},
		{"a panic", "", "boom"},
		{"an aborted handler", "", http.ErrAbortHandler},
		{"refused by guard", "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", nil},
		{"too large", "POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", nil},
		{"no route", "GET /api/v1/nowhere HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"no such method", "GET /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			probe := &probeChat{panicWith: tt.panicWith}
			h := NewServer(Config{BasePath: "/api/v1", MaxBodyBytes: 1 << 20}, slog.New(slog.DiscardHandler), nil, stubAuth{},
				stubLimiter{}, 0, ports.NoMetrics{}, MetricsEndpoint{}, Tracing{}, Handlers{Chat: NewChatHandler(probe)}).Handler()
			serve := func(raw []byte) {
				defer func() {
					if p := recover(); p != nil && p != http.ErrAbortHandler { //nolint:errorlint // the sentinel, as net/http compares it
						panic(p)
					}
				}()
				r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
				if err != nil {
					t.Fatal(err)
				}
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			first := call
			if tt.req != "" {
				first = []byte(tt.req)
			}
			serve(first)
			serve(call)
			if !probe.alone {
				t.Fatal("a request after the first ended is not alone in flight")
			}
		})
	}
}
