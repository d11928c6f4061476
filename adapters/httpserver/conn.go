package httpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/internal/h1"
)

// conn is one client connection, served by one goroutine (serve), request after request.
type conn struct {
	srv    *Server
	rwc    net.Conn
	remote string
	r      connReader
	br     *bufio.Reader
	// idleSince is when the connection began to wait for a request (UnixNano), 0 while it serves one; fresh
	// while it has not had one yet.
	idleSince atomic.Int64
	fresh     atomic.Bool
	// afterPost says the last request was a POST. (Its method is a part of the string that holds its whole head,
	// up to 1 MB, which the connection must not keep while it waits for the next one.)
	afterPost bool
	keys      []string // scratch for sorting a response's header names

	// The watch for a caller who leaves (watch): guarded by mu.
	mu       sync.Mutex
	timer    *time.Timer
	watched  *response // the response whose caller is watched for, nil when none
	reading  bool      // a read of the connection is under way in the timer's goroutine
	aborted  bool      // ... and was cut by unwatch
	readDone chan struct{}
	gone     bool // the read found the connection closed or broken
}

func (c *conn) setIdle(fresh bool) {
	c.fresh.Store(fresh)
	c.idleSince.Store(time.Now().UnixNano())
}

// connReader reads the connection for the bufio.Reader: up to a limit while a request's head is read, and first the
// byte a watch read, if it read one.
type connReader struct {
	c       *conn
	remain  int64
	hasByte bool
	byteBuf [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.remain <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.remain {
		p = p[:r.remain]
	}
	var n int
	var err error
	if r.hasByte {
		p[0], r.hasByte, n = r.byteBuf[0], false, 1
	} else {
		n, err = r.c.rwc.Read(p)
	}
	r.remain -= int64(n)
	return n, err
}

// maxHeaderBytes bounds a request's line and headers, as net/http's default; past it the answer is 431. What
// is read of the connection for a request's head is bounded by headLimit (net/http's initialReadLimitSize).
const (
	maxHeaderBytes = http.DefaultMaxHeaderBytes
	headLimit      = maxHeaderBytes + 4096
)

func (c *conn) serve() {
	s := c.srv
	if ra := c.rwc.RemoteAddr(); ra != nil {
		c.remote = ra.String()
	}
	base := s.BaseContext
	if base == nil {
		base = context.Background()
	}
	base = context.WithValue(base, http.LocalAddrContextKey, c.rwc.LocalAddr())
	c.r = connReader{c: c, remain: math.MaxInt64}
	c.br = bufferPool.Get().(*bufio.Reader)
	c.br.Reset(&c.r)
	var inFlight *response
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler && s.Log != nil {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			s.Log.Error("http: panic serving a request", "remote", c.remote, "panic", fmt.Sprint(p), "stack", string(buf))
		}
		if inFlight != nil {
			inFlight.cancel()
			c.unwatch()
			if inFlight.body != nil {
				_ = inFlight.body.Close() // as finish: no goroutine the handler left reads on
			}
		}
		_ = c.rwc.Close()
		c.br.Reset(nil)
		bufferPool.Put(c.br)
		s.forget(c)
	}()

	_ = c.rwc.SetReadDeadline(deadline(s.readHeaderTimeout()))
	// The connection is busy from the first bytes of a request on: a shutdown closes it only before.
	c.r.remain = headLimit
	if _, err := c.br.Peek(1); err != nil {
		return
	}
	for {
		c.idleSince.Store(0)
		// A request read during a shutdown is served (with Connection: close): it was sent before the caller could
		// know.
		w, rej := c.readRequest(base)
		if rej != nil {
			if rej.status != 0 {
				c.reject(rej)
			}
			return
		}
		inFlight = w
		s.Handler.ServeHTTP(w, w.req)
		inFlight = nil
		w.finish()
		c.unwatch()
		w.cancel()
		if w.closeAfter || c.gone {
			if w.lingerClose {
				c.closeWriteAndWait()
			}
			return
		}
		if s.shutting.Load() {
			return
		}
		_ = c.rwc.SetWriteDeadline(time.Time{}) // a stream's own deadline must not outlive it
		c.setIdle(false)
		// Wait for the next request before its header timeout starts, as net/http does (and as it does, a
		// connection that ends within 4 bytes of a next request is closed without an answer).
		_ = c.rwc.SetReadDeadline(deadline(s.idleTimeout()))
		if _, err := c.br.Peek(4); err != nil {
			return
		}
		// The head's timeout bounds the reads of the head: one that came whole with the wait's read is read from
		// the buffer, with no read to bound (readRequest sets the body's deadline next), and needs no timer set on
		// the way from its arrival to its handler.
		if !headBuffered(c.br) {
			_ = c.rwc.SetReadDeadline(deadline(s.readHeaderTimeout()))
		}
		c.r.remain = headLimit // as net/http: what the wait for the request read is not counted
	}
}

// rejection is a request refused before any handler: status 0 for one not answered (the connection failed).
type rejection struct {
	status int
	reason string
}

// readRequest reads the next request (readHead) and makes its response.
func (c *conn) readRequest(base context.Context) (*response, *rejection) {
	s := c.srv
	t0 := time.Now()
	if c.afterPost {
		// RFC 9112 section 2.2: a server should ignore empty lines before a request (old clients sent CRLF after a
		// POST body).
		peek, _ := c.br.Peek(4)
		_, _ = c.br.Discard(leadingCRLF(peek))
	}
	// The request, its URL and its body's reader are the response's: one allocation for all of them.
	w := &response{c: c, header: make(http.Header), contentLength: -1}
	if rej := c.readHead(w); rej != nil {
		return nil, rej
	}
	c.r.remain = math.MaxInt64
	req := &w.request
	c.afterPost = req.Method == http.MethodPost

	ctx, cancel := context.WithCancel(base)
	// The request is this server's own, just parsed: it takes its context in place, where WithContext made a copy
	// of it on the heap (its copy here stays on the stack).
	*req = *req.WithContext(ctx)
	req.RemoteAddr = c.remote
	if s.ReadTimeout > 0 {
		_ = c.rwc.SetReadDeadline(t0.Add(s.ReadTimeout))
	} else {
		_ = c.rwc.SetReadDeadline(time.Time{})
	}
	if s.WriteTimeout > 0 {
		_ = c.rwc.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	}
	w.req, w.cancel, w.isHEAD = req, cancel, req.Method == http.MethodHead
	connection := get(req.Header, "Connection")
	w.wantsClose = req.Close || hasToken(connection, "close") || w.faultyFraming
	w.wants10KeepAlive = req.ProtoMajor == 1 && req.ProtoMinor == 0 && hasToken(connection, "keep-alive") && !w.faultyFraming
	if req.Body == http.NoBody {
		c.watch(w)
	} else {
		w.ownBody.w = w
		w.ownBody.expect = expectsContinue(req) && req.ProtoAtLeast(1, 1) && req.ContentLength != 0
		w.body = &w.ownBody
		req.Body = w.body
	}
	return w, nil
}

// headBuffered reports whether br holds a request's whole head: it does not begin with an empty line (the CRLF
// an old client sent after a POST's body, which readRequest skips), and an empty line ends it.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return len(b) > 0 && b[0] != '\r' && b[0] != '\n' && h1.Len(b) >= 0
}

// leadingCRLF counts the CR and LF bytes at the start of peek.
func leadingCRLF(peek []byte) int {
	n := 0
	for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
		n++
	}
	return n
}

// reject answers a refused request and closes the connection (after a lingering half-close for a head too large,
// whose sender may still be writing it).
func (c *conn) reject(r *rejection) {
	ct, body := "text/plain; charset=utf-8", []byte(fmt.Sprintf("%d %s", r.status, http.StatusText(r.status)))
	if r.reason != "" {
		body = fmt.Appendf(body, ": %s", r.reason)
	}
	if c.srv.Reject != nil {
		ct, body = c.srv.Reject(r.status, r.reason)
	}
	msg := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		r.status, http.StatusText(r.status), ct, len(body))
	_ = c.rwc.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
	if _, err := c.rwc.Write(append(msg, body...)); err == nil && r.status == http.StatusRequestHeaderFieldsTooLarge {
		c.closeWriteAndWait()
	}
}

// rejectWriteTimeout bounds the write of a refusal to a caller who does not read.
const rejectWriteTimeout = 10 * time.Second

// rstAvoidanceDelay is how long a half-closed connection is kept before it is closed (net/http's): closing it
// with unread data sends a reset, which may make the client drop the answer it has not read yet.
const rstAvoidanceDelay = 500 * time.Millisecond

func (c *conn) closeWriteAndWait() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	time.Sleep(rstAvoidanceDelay)
}

// watch arms the watch for w's caller leaving: if w's handler still runs watchDelay from now, a read of the
// connection (in the timer's goroutine) waits for what the caller sends next. An error (the caller closed or
// reset the connection) cancels the request's context; a byte (a pipelined request) is kept for the next read. A
// connection that holds a pipelined request already is not watched.
func (c *conn) watch(w *response) {
	if c.br.Buffered() > 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched = w
	if c.timer == nil {
		c.timer = time.AfterFunc(watchDelay, c.watchRead)
		return
	}
	c.timer.Reset(watchDelay)
}

func (c *conn) watchRead() {
	c.mu.Lock()
	w := c.watched
	if w == nil || c.reading {
		// Nothing to watch, or a late run of the timer armed for the previous request (unwatch found it not
		// started yet) already watches this one.
		c.mu.Unlock()
		return
	}
	c.reading, c.readDone = true, make(chan struct{})
	// The body is read: ReadTimeout has done its work, and must not end a long answer (as net/http's background
	// read, which clears the deadline too).
	_ = c.rwc.SetReadDeadline(time.Time{})
	c.mu.Unlock()

	n, err := c.rwc.Read(c.r.byteBuf[:])

	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.hasByte = n == 1
	if err != nil && !c.aborted {
		c.gone = true
		w.cancel()
	}
	c.reading = false
	close(c.readDone)
}

// unwatch stops the watch, cutting its read if one is under way, and waits for it to end.
func (c *conn) unwatch() {
	if c.timer == nil {
		return
	}
	c.mu.Lock()
	c.watched = nil
	c.timer.Stop()
	if !c.reading {
		c.mu.Unlock()
		return
	}
	c.aborted = true
	_ = c.rwc.SetReadDeadline(time.Unix(1, 0))
	done := c.readDone
	c.mu.Unlock()
	<-done
	c.mu.Lock()
	c.aborted = false
	c.mu.Unlock()
}
