package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// zeros is a request body of n zero bytes that takes no memory.
func zeros(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestH1EarlyAnswer: an upstream that answers before it has read a large body (a 413, a 401) and closes the
// connection fails the body's write; its answer is what the call returns, as with net/http's transport, so that
// the provider's status is classified, not a failure to reach it.
func TestH1EarlyAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		tls    bool
	}{
		{"413", http.StatusRequestEntityTooLarge, false},
		{"401", http.StatusUnauthorized, false},
		{"413 over TLS", http.StatusRequestEntityTooLarge, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Connection", "close")
				w.WriteHeader(tt.status)
				io.WriteString(w, `{"error":"early"}`)
			}))
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			std := srv.Client().Transport.(*http.Transport)
			for _, rt := range []http.RoundTripper{std, newH1Transport(std.TLSClientConfig)} {
				const size = 256 << 20 // past what the sockets' buffers take
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, zeros(size))
				req.ContentLength = size
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("%T: %v, want the upstream's %d", rt, err, tt.status)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status || !strings.Contains(string(b), "early") {
					t.Fatalf("%T: %d %q", rt, resp.StatusCode, b)
				}
			}
		})
	}
}

// TestH1RefusesControlBytesInTheURL: a URL built by hand whose query or opaque part holds a control byte (CR, LF,
// NUL, DEL) would write a second request or header onto the wire: it is refused before any connection, as
// net/http's transport refuses it ("can't write control character in Request.URL").
func TestH1RefusesControlBytesInTheURL(t *testing.T) {
	t.Parallel()
	arrived := make(chan string, 8)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(br)
			if !ok {
				return
			}
			arrived <- req.RequestURI
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	tests := []struct {
		name string
		edit func(*url.URL)
	}{
		{"query with CRLF", func(u *url.URL) { u.RawQuery = "a=1 HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /smuggled?b=2" }},
		{"query with NUL", func(u *url.URL) { u.RawQuery = "a=\x00" }},
		{"query with DEL", func(u *url.URL) { u.RawQuery = "a=\x7f" }},
		{"opaque with LF", func(u *url.URL) { u.Opaque = "/v1\nX-Injected: 1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.url+"/v1", nil)
			tt.edit(req.URL)
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
				t.Fatalf("no error; the upstream read %q", <-arrived)
			}
		})
	}
	if n := srv.accepts.Load(); n != 0 {
		t.Errorf("%d connections for requests refused before any was needed", n)
	}
}

// TestH1HeadPastTheBound: a head cut by the bound mid-line is too large, not malformed, whichever line is cut: an
// informational answer repeated past the bound, one long status line, one long header line.
func TestH1HeadPastTheBound(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw string }{
		{"100 continue flood", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxHeaderBytes/25+1) +
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{"long status line", "HTTP/1.1 200 " + strings.Repeat("O", maxHeaderBytes) + "\r\n\r\n"},
		{"long header line", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("l", maxHeaderBytes) + "\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := scripted(t, tt.raw, http.MethodGet, true); !errors.Is(err, errTooLarge) {
				t.Fatalf("err %v, want %v", err, errTooLarge)
			}
		})
	}
}

// batched is a server's connection whose writes, once hold is set, wait for flush: TLS records written one by
// one go out in one TCP write, so that the client's TLS connection reads them together.
type batched struct {
	net.Conn
	hold bool
	buf  []byte
}

func (b *batched) Write(p []byte) (int, error) {
	if !b.hold {
		return b.Conn.Write(p)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *batched) flush() error {
	_, err := b.Conn.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// TestH1TLSBytesAfterTheAnswer: an upstream that sends more than its answer (a Content-Length too short, an
// answer twice) over TLS, in a record of its own that came with the answer's: the client's TLS connection read
// it from the socket with the answer, so neither the read buffer nor the socket's peek sees it, and the
// connection must not serve the next call, which would read the stale bytes as its answer. net/http's transport
// sees them ("Unsolicited response received on idle HTTP channel") and closes the connection.
func TestH1TLSBytesAfterTheAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS() // for its certificate and the client's roots
	defer srv.Close()
	cert := srv.TLS.Certificates
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig
	raw := newRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		b := &batched{Conn: c}
		tc := tls.Server(b, &tls.Config{Certificates: cert})
		br := bufio.NewReader(tc)
		if tc.Handshake() != nil {
			return
		}
		b.hold = true
		for i := 0; ; i++ {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
			if i == 0 {
				io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")
			}
			if b.flush() != nil {
				return
			}
		}
	})
	url := "https://" + strings.TrimPrefix(raw.url, "http://")
	rt := newH1Transport(roots)
	defer rt.CloseIdleConnections()
	for i := range 2 {
		if _, body := get(t, rt, http.MethodGet, url); body != "fresh" {
			t.Fatalf("call %d read %q", i, body)
		}
	}
	if n := raw.accepts.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// closeCounted is a connection that says whether it was closed.
type closeCounted struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeCounted) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// TestH1IdleTimeout: a pooled connection is closed once it has been idle for the timeout even when no call to
// its upstream comes again (net/http's transport closes each after IdleConnTimeout), and not before.
func TestH1IdleTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rt := newH1Transport(nil)
		pooled := func(addr string) *closeCounted {
			a, b := net.Pipe()
			t.Cleanup(func() { b.Close() })
			cc := &closeCounted{Conn: a}
			c := &conn{tcp: cc, key: connKey{addr: addr}}
			c.br = bufio.NewReader(cc)
			rt.release(c, afterFunc(func() bool { return true }), true)
			return cc
		}
		first, other := pooled("a:80"), pooled("b:80")
		time.Sleep(idleConnTimeout / 2)
		second := pooled("a:80")
		time.Sleep(idleConnTimeout/2 + time.Second)
		synctest.Wait()
		if !first.closed.Load() || !other.closed.Load() || second.closed.Load() {
			t.Fatalf("after the timeout: closed %v %v, and %v idle for half of it", first.closed.Load(), other.closed.Load(),
				second.closed.Load())
		}
		time.Sleep(idleConnTimeout / 2)
		synctest.Wait()
		if !second.closed.Load() {
			t.Fatal("the second connection is open past its timeout")
		}
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if len(rt.idle) != 0 {
			t.Fatalf("the pool holds %v", rt.idle)
		}
	})
}

// slowTransport answers once answer is closed (or fails with the request's context); its body gives "hello",
// then waits for the request's context.
type slowTransport struct{ answer chan struct{} }

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-s.answer:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Body: &stalledBody{ctx: req.Context(), first: "hello"}}, nil
}

type stalledBody struct {
	ctx   context.Context
	first string
}

func (b *stalledBody) Read(p []byte) (int, error) {
	if b.first != "" {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (b *stalledBody) Close() error { return nil }

// TestDoWithoutATimeout: a Config whose Timeout is 0 puts no bound on the wait for the first byte (it used to
// time the call out at once); the idle timeout still bounds the wait between reads once bytes came.
func TestDoWithoutATimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		answer := make(chan struct{})
		client := &http.Client{Transport: slowTransport{answer: answer}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://upstream/", nil)
		done := make(chan error, 1)
		var resp *http.Response
		go func() {
			var err error
			resp, err = Do(req.Context(), client, req, Config{IdleTimeout: time.Minute})
			done <- err
		}()
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Do ended before the upstream answered: %v", err)
		default:
		}
		close(answer)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p [8]byte
		if n, err := resp.Body.Read(p[:]); string(p[:n]) != "hello" || err != nil {
			t.Fatalf("first read %q, %v", p[:n], err)
		}
		start := time.Now()
		_, err := resp.Body.Read(p[:])
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != domain.KindTimeout || time.Since(start) != time.Minute {
			t.Fatalf("idle read ended after %v with %v, want a timeout after a minute", time.Since(start), err)
		}
	})
}

// TestH1SweepClosesWhatThePeerClosed: the idle sweep, which runs every idleCheckEvery while the pool holds a
// connection, closes one the upstream closed (rather than leave its socket in CLOSE_WAIT until the idle
// timeout), and keeps one still open.
func TestH1SweepClosesWhatThePeerClosed(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("peeks at sockets on Linux only")
	}
	hangUp := make(chan struct{})
	answer := func(hang bool) func(c net.Conn, br *bufio.Reader) {
		return func(c net.Conn, br *bufio.Reader) {
			for {
				if _, ok := readRequest(br); !ok {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				if hang {
					<-hangUp
					return // the server closes the connection
				}
			}
		}
	}
	closing, open := newRawServer(t, answer(true)), newRawServer(t, answer(false))
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	get(t, rt, http.MethodGet, closing.url)
	get(t, rt, http.MethodGet, open.url)
	pooled := func() (out []*conn) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for _, stack := range rt.idle {
			out = append(out, stack...)
		}
		return out
	}
	if n := len(pooled()); n != 2 {
		t.Fatalf("%d pooled connections, want 2", n)
	}
	var hungUp *conn
	for _, c := range pooled() {
		if "http://"+c.key.addr == closing.url {
			hungUp = c
		}
	}
	close(hangUp)
	var buf [1]byte // wait until the FIN is in: the socket becomes readable
	if err := hungUp.raw.Read(func(fd uintptr) bool { return !peekWouldBlock(fd, buf[:]) }); err != nil {
		t.Fatal(err)
	}
	rt.sweepIdle()
	left := pooled()
	if len(left) != 1 || "http://"+left[0].key.addr != open.url {
		t.Fatalf("after the sweep the pool holds %d connections, want the open one", len(left))
	}
	if _, err := hungUp.tcp.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the connection the upstream closed is still open: %v", err)
	}
}

// TestDoTransportFailures: a call that gets no answer (nothing listens, the upstream closes the connection, its
// head is malformed) is the provider's failure, retryable, with its cause kept for the record. Do classified it
// after ending the call's context, which then read as the caller's going away: context.Canceled came back in its
// place, the cause was lost and the gateway saw a cancelled call.
func TestDoTransportFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()
	closes := newRawServer(t, func(c net.Conn, br *bufio.Reader) { readRequest(br) })
	malformed := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nno colon\r\n\r\n")
		}
	})
	for _, tt := range []struct {
		name, url string
		cause     func(error) bool
	}{
		{"refused", refused, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
		{"closed", closes.url, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"malformed head", malformed.url, func(err error) bool { return strings.Contains(err.Error(), "malformed MIME header") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
			_, err := Do(t.Context(), NewHTTPClient(), req, Config{Timeout: time.Minute})
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindUpstream || !ue.Retryable || !tt.cause(ue.Err) {
				t.Fatalf("err %v, want the provider's failure with its cause", err)
			}
		})
	}
}
