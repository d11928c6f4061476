package httpserver

import (
	"bufio"

	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the writes that reach its connections.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// serve starts srv on a loopback listener counting writes; it returns the address and the count.
func serve(t *testing.T, srv *Server) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	done := make(chan error, 1)
	go func() { done <- srv.Serve(countingListener{Listener: ln, writes: &writes}) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), &writes
}

// dial opens a connection with a deadline that bounds the test.
func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c, bufio.NewReader(c)
}

// rawResponse reads one response's head and body as sent.
func rawResponse(t *testing.T, br *bufio.Reader, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// The framing of a response, and how many writes it takes, by what the handler does.
func TestResponseFraming(t *testing.T) {
	t.Parallel()
	clip := strings.Repeat("a", 16<<10)
	tests := []struct {
		name    string
		method  string
		handler http.HandlerFunc
		body    string
		length  int64 // -1: chunked
		writes  int64
		check   func(t *testing.T, h http.Header)
	}{
		{"unflushed: Content-Length, one write", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "audio/mpeg")
			_, _ = io.WriteString(w, clip[:100])
			_, _ = io.WriteString(w, clip[100:])
		}, clip, int64(len(clip)), 1, nil},
		{"flushed: chunked, a write per flush and one for the end", "GET", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, clip)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "tail")
		}, clip + "tail", -1, 2, nil},
		{"flushed with nothing after: the terminator alone", "GET", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "x")
			w.(http.Flusher).Flush()
		}, "x", -1, 2, nil},
		{"larger than the buffer", "GET", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("b", 70<<10))
		}, strings.Repeat("b", 70<<10), -1, 3, nil},
		{"declared length, flushed", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "3")
			_, _ = io.WriteString(w, "ab")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "c")
			if _, err := io.WriteString(w, "d"); !errors.Is(err, http.ErrContentLength) {
				t.Errorf("write past the length: %v", err)
			}
		}, "abc", 3, 2, nil},
		{"a head larger than the buffer's headroom, chunked: still one write per flush", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Large", strings.Repeat("h", 3*headroom))
			_, _ = io.WriteString(w, clip)
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "tail")
		}, clip + "tail", -1, 2, func(t *testing.T, h http.Header) {
			if len(h.Get("X-Large")) != 3*headroom {
				t.Errorf("X-Large: %d bytes", len(h.Get("X-Large")))
			}
		}},
		{"a head larger than the headroom, unflushed", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Large", strings.Repeat("h", 3*headroom))
			_, _ = io.WriteString(w, clip)
		}, clip, int64(len(clip)), 1, nil},
		{"nothing written: Content-Length 0", "GET", func(w http.ResponseWriter, r *http.Request) {}, "", 0, 1, nil},
		{"HEAD: length of what would be sent, no body", "HEAD", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "hello")
		}, "", 5, 1, nil},
		{"204: no body, no length", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("write to a 204: %v", err)
			}
		}, "", -2, 1, func(t *testing.T, h http.Header) {
			if h.Get("Content-Length") != "" || h.Get("Transfer-Encoding") != "" {
				t.Errorf("204 with framing: %v", h)
			}
		}},
		{"304 drops Content-Type", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotModified)
		}, "", -2, 1, func(t *testing.T, h http.Header) {
			if h.Get("Content-Type") != "" {
				t.Errorf("304 with a Content-Type: %v", h)
			}
		}},
		{"sniffed type, Date", "GET", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "<html><body>x</body></html>")
		}, "<html><body>x</body></html>", 27, 1, func(t *testing.T, h http.Header) {
			if h.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
			if _, err := http.ParseTime(h.Get("Date")); err != nil {
				t.Errorf("Date %q: %v", h.Get("Date"), err)
			}
		}},
		{"no header injection; invalid names left out", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["X-Inject"] = []string{"a\r\nSet-Cookie: evil=1", " b\n"}
			w.Header()["Bad Name"] = []string{"v"}
			w.Header()["X-Colon:"] = []string{"v"}
		}, "", 0, 1, func(t *testing.T, h http.Header) {
			if got := h["X-Inject"]; len(got) != 2 || got[0] != "a  Set-Cookie: evil=1" || got[1] != "b" {
				t.Errorf("X-Inject %q", got)
			}
			if h.Get("Set-Cookie") != "" || len(h) != 3 { // X-Inject, Content-Length, Date
				t.Errorf("headers %v", h)
			}
		}},
		{"headers changed after WriteHeader are not sent", "GET", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Before", "1")
			w.WriteHeader(http.StatusAccepted)
			w.Header().Set("X-After", "1")
		}, "", 0, 1, func(t *testing.T, h http.Header) {
			if h.Get("X-Before") != "1" || h.Get("X-After") != "" {
				t.Errorf("headers %v", h)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr, writes := serve(t, &Server{Handler: tt.handler})
			c, br := dial(t, addr)
			req, _ := http.NewRequest(tt.method, "http://x/", nil)
			if err := req.Write(c); err != nil {
				t.Fatal(err)
			}
			resp, body := rawResponse(t, br, req)
			if body != tt.body {
				t.Errorf("body %.40q (%d bytes), want %.40q (%d)", body, len(body), tt.body, len(tt.body))
			}
			chunked := len(resp.TransferEncoding) > 0
			switch {
			case tt.length == -1 && !chunked:
				t.Errorf("not chunked: %v", resp.Header)
			case tt.length >= 0 && (chunked || resp.ContentLength != tt.length):
				t.Errorf("length %d (chunked %t), want %d", resp.ContentLength, chunked, tt.length)
			}
			if tt.check != nil {
				tt.check(t, resp.Header)
			}
			// The response is complete on the wire only once the handler returned: a second request on the
			// connection orders the count after it.
			req2, _ := http.NewRequest("GET", "http://x/", nil)
			req2.Header.Set("Connection", "close")
			if err := req2.Write(c); err != nil {
				t.Fatal(err)
			}
			_, _ = rawResponse(t, br, req2)
			if n := writes.Load() / 2; n != tt.writes {
				t.Errorf("%d writes per response, want %d", n, tt.writes)
			}
		})
	}
}

// Keep-alive: HTTP/1.1 keeps the connection unless asked not to; HTTP/1.0 only with keep-alive and a length; a
// body the handler left unread is read past when small, and closes the connection when large.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		_, _ = io.WriteString(w, "ok")
	})})
	big := strings.Repeat("x", maxPostHandlerReadBytes+1)
	tests := []struct {
		name, first string
		open        bool // the connection carries a second request
		close       bool // the first answer says Connection: close
	}{
		{"1.1", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", true, false},
		{"1.1 close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false, true},
		{"1.0", "GET / HTTP/1.0\r\n\r\n", false, false},
		{"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true, false},
		{"small body unread", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", true, false},
		{"chunked body unread", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true, false},
		{"large body unread", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(big)) + "\r\n\r\n" + big, false, true},
		{"large body read", "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(big)) + "\r\n\r\n" + big, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, br := dial(t, addr)
			go func() { _, _ = io.WriteString(c, tt.first+"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n") }()
			resp, body := rawResponse(t, br, nil)
			if body != "ok" || resp.Close != tt.close {
				t.Fatalf("first: %q, Connection: close %t", body, resp.Close)
			}
			second, err := http.ReadResponse(br, nil)
			if (err == nil) != tt.open {
				t.Fatalf("second request answered: %t (%v), want %t", err == nil, err, tt.open)
			}
			if err == nil {
				second.Body.Close()
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Expect: 100-continue: the interim answer is sent when the handler first reads the body, never before; a
// handler that does not read it answers without it and closes the connection (the body was never sent).
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
			return
		}
		_, _ = io.WriteString(w, "unread")
	})})
	head := "Host: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"

	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "POST /read HTTP/1.1\r\n"+head)
	if line, err := br.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim answer %q %v", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("after 100 Continue: %q", blank)
	}
	_, _ = io.WriteString(c, "hello")
	if _, body := rawResponse(t, br, nil); body != "hello" {
		t.Fatalf("body %q", body)
	}

	c, br = dial(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\n"+head)
	resp, body := rawResponse(t, br, nil)
	if resp.StatusCode != 200 || body != "unread" || !resp.Close {
		t.Fatalf("unread: %d %q Connection: close %t", resp.StatusCode, body, resp.Close)
	}
}

// A caller who leaves cancels the request's context, both while the handler waits on something else and when a
// write fails; a caller who stays does not.
func TestCallerLeavingCancels(t *testing.T) {
	t.Parallel()
	cancelled := make(chan error, 1)
	started := make(chan struct{}, 1)
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(10 * time.Second):
			cancelled <- nil
		}
	})})
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
	} {
		c, _ := dial(t, addr)
		_, _ = io.WriteString(c, req)
		<-started
		c.Close()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Errorf("%q: the caller left, the request's context: %v", req, err)
		}
	}
}

// A pipelined request read by the watch is served next, whole.
func TestWatchKeepsPipelinedByte(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		_, _ = io.WriteString(w, r.URL.Path)
	})})
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(2 * watchDelay) // let the watch's read begin: the next request's first byte goes to it
	_, _ = io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	close(release)
	if _, body := rawResponse(t, br, nil); body != "/slow" {
		t.Fatalf("first %q", body)
	}
	if _, body := rawResponse(t, br, nil); body != "/next" {
		t.Fatalf("second %q", body)
	}
}

// Shutdown closes idle connections, lets a running request finish (its answer says Connection: close), and
// returns once it has; Serve then returns http.ErrServerClosed.
func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	running, release := make(chan struct{}), make(chan struct{})
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(running)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	})}
	addr, _ := serve(t, srv)
	idle, idleBR := dial(t, addr)
	_, _ = io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_, _ = rawResponse(t, idleBR, nil)
	busy, busyBR := dial(t, addr)
	_, _ = io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-running

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a request running: %v", err)
	}
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection not closed: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("still accepting")
	}
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	close(release)
	resp, body := rawResponse(t, busyBR, nil)
	if body != "done" || !resp.Close {
		t.Errorf("drained request: %q, Connection: close %t", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// The timeouts end a connection that is too slow: a head not sent within ReadHeaderTimeout, an idle one past
// IdleTimeout, and a body not sent within ReadTimeout (the handler's read fails).
func TestTimeouts(t *testing.T) {
	t.Parallel()
	bodyErr := make(chan error, 1)
	const d = 50 * time.Millisecond
	addr, _ := serve(t, &Server{ReadHeaderTimeout: d, IdleTimeout: d, ReadTimeout: 4 * d,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			if r.Method == "POST" {
				bodyErr <- err
			}
		})})
	for _, tt := range []struct{ name, send string }{
		{"header", "GET / HTTP/1.1\r\nHost: x\r\n"},
		{"idle", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		c, br := dial(t, addr)
		_, _ = io.WriteString(c, tt.send)
		start := time.Now()
		_, _ = io.Copy(io.Discard, br) // until the server closes
		if time.Since(start) > 10*time.Second {
			t.Errorf("%s: the connection outlived its timeout", tt.name)
		}
	}
	c, _ := dial(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	var ne net.Error
	if err := <-bodyErr; !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a body slower than ReadTimeout: %v", err)
	}
}

// A keep-alive connection's next head is held to ReadHeaderTimeout from its first bytes, also when the wait for it
// read only part of it (the whole head read with them sets no deadline of its own), and served when it comes.
func TestNextHeadTimeout(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{ReadHeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Hour,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Path) })})
	for _, tc := range []struct {
		name, next string
		served     bool
	}{
		{"whole", "GET /b HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"part", "GET /b HTTP/1.1\r\nHost: x\r\n", false},
		{"whole after an empty line", "\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"part after an empty line", "\r\n\r\nGET /b HTTP/1.1\r\n", false},
	} {
		c, br := dial(t, addr)
		_, _ = io.WriteString(c, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") // after which an empty line is skipped
		if _, body := rawResponse(t, br, nil); body != "/a" {
			t.Fatalf("%s: first request: %q", tc.name, body)
		}
		_, _ = io.WriteString(c, tc.next)
		if tc.served {
			if _, body := rawResponse(t, br, nil); body != "/b" {
				t.Errorf("%s: next request: %q", tc.name, body)
			}
			continue
		}
		// closed by the head's timeout (the idle one is an hour away; dial's deadline ends the test otherwise)
		if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
			t.Errorf("%s: %q %v, want the connection closed without an answer", tc.name, b, err)
		}
	}
}

// A handler's panic closes its connection and nothing else.
func TestPanicClosesConnection(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		_, _ = io.WriteString(w, "ok")
	})})
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
		t.Fatalf("after a panic: %q %v", b, err)
	}
	c, br = dial(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, body := rawResponse(t, br, nil); body != "ok" {
		t.Fatalf("next connection: %q", body)
	}
}

// Reject renders what the server refuses itself.
func TestReject(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.NotFoundHandler(), Reject: func(status int, reason string) (string, []byte) {
		return "application/json", []byte(`{"status":` + itoa(status) + `,"reason":"` + reason + `"}`)
	}})
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\n\r\n")
	resp, body := rawResponse(t, br, nil)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" ||
		body != `{"status":400,"reason":"missing required Host header"}` || !resp.Close {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}

}

// A head past the limit is answered 431, and the connection is half-closed so that a client done writing reads it.
func TestHeadTooLarge(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.NotFoundHandler()})
	c, br := dial(t, addr)
	go func() {
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX: "+strings.Repeat("a", maxHeaderBytes+4096)+"\r\n\r\n")
	}()
	if resp, _ := rawResponse(t, br, nil); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// A connection accepted before a shutdown, whose request arrives during it, is answered (with Connection: close),
// as net/http's server answers it: its caller sent the request before it could know.
func TestShutdownAnswersNewConnection(t *testing.T) {
	t.Parallel()
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "done")
	})}
	addr, _ := serve(t, srv)
	fresh, freshBR := dial(t, addr)
	other, otherBR := dial(t, addr) // accepted after fresh: once it is answered, fresh is accepted
	_, _ = io.WriteString(other, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	_, _ = rawResponse(t, otherBR, nil)

	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	for !srv.shutting.Load() {
		runtime.Gosched()
	}
	_, _ = io.WriteString(fresh, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(freshBR, nil)
	if err != nil {
		t.Fatalf("request sent during the shutdown: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "done" || !resp.Close {
		t.Errorf("request sent during the shutdown: %q, Connection: close %t", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// A body read after its handler returned (by a goroutine the handler left) fails with http.ErrBodyReadAfterClose,
// as net/http's does, instead of reading the connection's read buffer, which the server reuses for the next request
// or, once the connection is closed, for another connection.
func TestBodyReadAfterReturn(t *testing.T) {
	t.Parallel()
	leaked := make(chan io.Reader, 1)
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked <- r.Body
	})}
	addr, _ := serve(t, srv)
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\nab")
	_, _ = rawResponse(t, br, nil)
	for {
		srv.mu.Lock()
		n := len(srv.conns)
		srv.mu.Unlock()
		if n == 0 {
			break
		}
		runtime.Gosched()
	}
	body := <-leaked
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		_, err = body.Read(make([]byte, 8))
		return err
	}()
	if !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("read after the handler returned: %v", err)
	}
}

// A 1xx answer carries the header as it is but its framing (Content-Length, Transfer-Encoding), as net/http's does:
// an interim answer has no body.
func TestInterimHasNoFraming(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("Content-Length", "2")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Transfer-Encoding")
		_, _ = io.WriteString(w, "hi")
	})})
	c, br := dial(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	interim, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if interim.StatusCode != http.StatusEarlyHints || interim.Header.Get("Link") == "" ||
		interim.Header.Get("Content-Length") != "" || len(interim.TransferEncoding) != 0 {
		t.Errorf("interim %d %v", interim.StatusCode, interim.Header)
	}
	if resp, body := rawResponse(t, br, nil); resp.StatusCode != http.StatusOK || body != "hi" {
		t.Errorf("final %d %q", resp.StatusCode, body)
	}
}

// TestAppendValue: a header value goes out as net/http writes it, CR and LF as spaces and then trimmed of spaces
// and tabs, whether it takes the plain path or not.
func TestAppendValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"text/event-stream", "text/event-stream"},
		{"a b\tc", "a b\tc"},
		{" a", "a"},
		{"a\t", "a"},
		{"\t a \t", "a"},
		{"a\r\nb", "a  b"},
		{"a\n", "a"},
		{"\r\n", ""},
		{"  ", ""},
	} {
		if got := string(appendValue([]byte("X: "), tt.in)); got != "X: "+tt.want {
			t.Errorf("appendValue(%q) = %q, want %q", tt.in, got, "X: "+tt.want)
		}
	}
}

// BenchmarkAppendHead is the head of a chat stream's response, as the gateway's middleware and sink set it.
func BenchmarkAppendHead(b *testing.B) {
	req, _ := http.NewRequest(http.MethodPost, "http://x/api/v1/chat/completions", nil)
	w := &response{c: &conn{srv: &Server{}}, req: req, status: http.StatusOK, contentLength: -1, header: http.Header{
		"X-Request-Id": {"req-0123456789abcdef01234567"}, "X-Ratelimit-Limit": {"6000"}, "X-Ratelimit-Remaining": {"5999"},
		"X-Ratelimit-Reset": {"1700000060"}, "X-Generation-Id": {"gen-1700000000-AbCdEfGhIjKlMnOpQrSt"},
		"Content-Type": {"text/event-stream"}, "X-Accel-Buffering": {"no"}, "Cache-Control": {"no-store"}}}
	buf := make([]byte, 0, headroom)
	b.ReportAllocs()
	for range b.N {
		w.chunked = false
		buf = w.appendHead(buf[:0], false, nil)
	}
}

// TestIdleConnectionKeepsNoHead: a connection waiting for its next request keeps nothing of the last one's head (the
// string its method, target, names and values are parts of), measured on the heap with many connections.
func TestIdleConnectionKeepsNoHead(t *testing.T) {
	addr, _ := serve(t, &Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})})
	head := []byte("POST / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("v", 200<<10) + "\r\nContent-Length: 0\r\n\r\n")
	const conns = 50
	before := heapInUse()
	for range conns {
		c, br := dial(t, addr)
		if _, err := c.Write(head); err != nil {
			t.Fatal(err)
		}
		if resp, _ := rawResponse(t, br, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// Each connection's read buffers (4 KiB here and there), its goroutine's state and its timers; the head is 200 KiB.
	if perConn := (int64(heapInUse()) - int64(before)) / conns; perConn > 32<<10 {
		t.Errorf("a connection keeps %d bytes after a head of %d", perConn, len(head))
	}
}

// TestFaultyFramingCloses: a request whose body a proxy in front may have framed otherwise (a Transfer-Encoding
// beside a Content-Length, or in HTTP/1.0) is answered, with Connection: close, and the connection closed, as RFC
// 9112 section 6 has it (net/http reads on), so that what follows it is never read as a request of its own.
func TestFaultyFramingCloses(t *testing.T) {
	addr, _ := serve(t, &Server{Handler: echo})
	for _, raw := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: y\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: y\r\n\r\n",
		"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
		"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
	} {
		c, br := dial(t, addr)
		if _, err := c.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, _ := rawResponse(t, br, nil)
		if http11 := strings.HasPrefix(raw, "POST / HTTP/1.1"); http11 && !resp.Close { // HTTP/1.0's close goes unsaid
			t.Errorf("%.60q: answered without Connection: close", raw)
		}
		if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("%.60q: the connection went on (%d bytes, %v)", raw, n, err)
		}
	}
}
