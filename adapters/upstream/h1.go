package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/switchboard-ai/switchboard/adapters/internal/h1"
)

// Limits of the HTTP/1.1 transport.
const (
	dialTimeout         = 10 * time.Second
	dialKeepAlive       = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	// idleCheckEvery spaces the idle sweep's peeks at the pooled connections: one the upstream closed is closed
	// within it, not left in CLOSE_WAIT until its idle timeout (net/http's transport, with a reader on each
	// connection, notices at once).
	idleCheckEvery      = 5 * time.Second
	maxIdleConnsPerHost = 256
	// maxHeaderBytes bounds a response's status line and headers (1xx answers included), and its trailer.
	maxHeaderBytes = 1 << 20
	// streamBufferSize is the stream buffer's size (the caller's buffer for a body's reads): a read of a body
	// with nothing buffered goes straight into a buffer as large, as bufio does for a buffer as large as its own,
	// so one Read carries whatever the upstream sent meanwhile, for one write and one flush downstream.
	streamBufferSize = 16 << 10
	// readBufferSize is the stream buffer and room for a response's head, which comes in the same read as the
	// body's first bytes: a clip the upstream sent whole with a head of up to headRoom comes in one read, not
	// the stream buffer's worth less the head and then the rest (a read more for each call).
	headRoom        = 4 << 10
	readBufferSize  = streamBufferSize + headRoom
	writeBufferSize = 4 << 10
)

// h1Transport is an HTTP/1.1 client transport that does an exchange in the caller's goroutine: it takes a pooled
// connection (or dials one), writes the request through one buffer and one flush, and reads the status, the
// headers and then the body, as the caller reads it, from the connection's buffer. net/http's Transport hands
// each exchange to two goroutines of the connection's (a write loop and a read loop) and every body read to
// the read loop and back, each a goroutine wake-up; here there is nothing to hand over.
//
// It speaks HTTP/1.1 to TLS upstreams too, never HTTP/2: one connection per exchange in flight, as nginx's
// upstreams do, so that a slow or large stream never shares a connection's flow control, and a lost packet never
// stalls another caller's stream (HTTP/2's head-of-line blocking at the TCP level). Connections are cheap next to
// the streams a gateway carries.
//
// What it does not do goes to fallback, a net/http Transport: a request a proxy from the environment applies to,
// a scheme other than http and https, a body of unknown length, an Expect header, trailers or a transfer
// encoding of the request's own, CONNECT.
type h1Transport struct {
	fallback  *http.Transport
	proxy     func(*http.Request) (*url.URL, error)
	tlsConfig *tls.Config // cloned for each TLS connection; nil trusts the system's roots
	dialer    net.Dialer

	mu    sync.Mutex
	idle  map[connKey][]*conn // a LIFO stack per upstream: the most recently used connection is reused first
	sweep *time.Timer         // closes what is idle past the timeout or closed by its peer; set while the pool holds one
}

// newH1Transport builds the transport; tlsConfig is nil but in tests (a test server's roots).
func newH1Transport(tlsConfig *tls.Config) *h1Transport {
	return &h1Transport{
		fallback: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext,
			TLSClientConfig:       tlsConfig,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          512,
			MaxIdleConnsPerHost:   maxIdleConnsPerHost,
			IdleConnTimeout:       idleConnTimeout,
			TLSHandshakeTimeout:   tlsHandshakeTimeout,
			ExpectContinueTimeout: time.Second,
			ReadBufferSize:        streamBufferSize,
		},
		proxy:     http.ProxyFromEnvironment,
		tlsConfig: tlsConfig,
		dialer:    net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive},
	}
}

// connKey names the upstream a connection is to.
type connKey struct {
	tls  bool
	addr string // host:port
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.needsFallback(req) {
		return t.fallback.RoundTrip(req)
	}
	resp, err := t.roundTrip(req)
	if req.Body != nil {
		req.Body.Close()
	}
	return resp, err
}

// CloseIdleConnections closes the connections no exchange is using (http.Client.CloseIdleConnections calls it).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, stack := range idle {
		for _, c := range stack {
			c.close()
		}
	}
	t.fallback.CloseIdleConnections()
}

func (t *h1Transport) needsFallback(req *http.Request) bool {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.Method == http.MethodConnect ||
		outgoingLength(req) < 0 || len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 || req.Header.Get("Expect") != "" {
		return true
	}
	if t.proxy != nil {
		if u, err := t.proxy(req); u != nil || err != nil {
			return true
		}
	}
	return false
}

// outgoingLength is the request body's length as net/http reads it: -1 when unknown.
func outgoingLength(req *http.Request) int64 {
	if req.Body == nil || req.Body == http.NoBody {
		return 0
	}
	if req.ContentLength != 0 {
		return req.ContentLength
	}
	return -1
}

var (
	errTooLarge      = fmt.Errorf("the upstream's response headers exceed %d bytes", maxHeaderBytes)
	errClosedBody    = errors.New("http: read on closed response body")
	errSwitchingProt = errors.New("the upstream switched protocols (101), which the gateway does not ask for")
)

func (t *h1Transport) roundTrip(req *http.Request) (*http.Response, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host, uri, err := checkRequest(req, method)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := connKey{tls: req.URL.Scheme == "https", addr: req.URL.Host}
	if req.URL.Port() == "" {
		port := "80"
		if key.tls {
			port = "443"
		}
		key.addr = net.JoinHostPort(req.URL.Hostname(), port)
	}
	var c *conn
	var resp *http.Response
	var reuse bool
	var stop stopper
	for {
		if c, err = t.conn(ctx, key, req.URL.Hostname()); err != nil {
			break
		}
		stop = closeOnEnd(ctx, c)
		if resp, reuse, err = c.exchange(req, method, host, uri); err == nil {
			break
		}
		stop.stop()
		c.close()
		// An upstream may close an idle connection just as it is taken, after alive looked: a request that may be
		// sent twice and was not answered goes again, on another connection, as net/http does.
		var ua *unanswered
		if !errors.As(err, &ua) {
			break
		}
		if err = ua.err; !c.pooled || !replayable(req, method) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	reuse = reuse && !req.Close && !httpguts.HeaderValuesContainsToken(req.Header["Connection"], "close")
	if resp.Body != http.NoBody {
		b := resp.Body.(*body)
		b.t, b.ctx, b.stop, b.reuse = t, ctx, stop, reuse
		return resp, nil
	}
	t.release(c, stop, reuse)
	return resp, nil
}

// stopper stops closing a connection when a context ends (closeOnEnd), as context.AfterFunc's stop does: false when
// it is closed, or being closed.
type stopper interface{ stop() bool }

// afterFunc is context.AfterFunc's stop.
type afterFunc func() bool

func (f afterFunc) stop() bool { return f() }

// closeOnEnd has c closed when ctx ends. A call's context (Do's) holds the closing itself, without allocating;
// another has it as context.AfterFunc does.
func closeOnEnd(ctx context.Context, c *conn) stopper {
	if cl, ok := ctx.(*call); ok && cl.onEnd(c.closeFunc) {
		return cl
	}
	return afterFunc(context.AfterFunc(ctx, c.closeFunc))
}

// replayable is a request that may go twice: idempotent, and without a body to send again.
func replayable(req *http.Request, method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		if req.Header["Idempotency-Key"] == nil && req.Header["X-Idempotency-Key"] == nil {
			return false
		}
	}
	return outgoingLength(req) == 0
}

// checkRequest refuses what would put a malformed request on the wire, as net/http does, and returns the Host
// and the request-target.
func checkRequest(req *http.Request, method string) (host, uri string, err error) {
	if strings.IndexFunc(method, func(r rune) bool { return !httpguts.IsTokenRune(r) }) >= 0 {
		return "", "", fmt.Errorf("net/http: invalid method %q", method)
	}
	if req.URL.Host == "" {
		return "", "", errors.New("http: no Host in request URL")
	}
	host = req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) {
		return "", "", fmt.Errorf("http: invalid Host header %q", host)
	}
	// A query or opaque part set by hand is written as it is: a control byte in it would end the request line.
	uri = req.URL.RequestURI()
	if strings.ContainsFunc(uri, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", "", errors.New("net/http: can't write control character in Request.URL")
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return "", "", fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return "", "", fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	return host, uri, nil
}

// release ends an exchange whose response was read to its end: the connection goes back to the pool when both
// sides let it and the request's context did not close it meanwhile.
func (t *h1Transport) release(c *conn, stop stopper, reuse bool) {
	if !stop.stop() || !reuse || c.br.Buffered() > 0 {
		c.close()
		return
	}
	now := time.Now()
	c.idleAt, c.pooled = now, true
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[connKey][]*conn{}
	}
	stack, stale := trimStale(t.idle[c.key], now)
	full := len(stack) >= maxIdleConnsPerHost
	if !full {
		stack = append(stack, c)
	}
	t.idle[c.key] = stack
	if t.sweep == nil {
		t.sweep = time.AfterFunc(idleCheckEvery, t.sweepIdle)
	}
	t.mu.Unlock()
	if full {
		stale = append(stale, c)
	}
	for _, s := range stale {
		s.close()
	}
}

// trimStale takes from the bottom of a stack, which is oldest first, the connections idle past the timeout.
func trimStale(stack []*conn, now time.Time) (kept, stale []*conn) {
	old := 0
	for old < len(stack) && now.Sub(stack[old].idleAt) > idleConnTimeout {
		old++
	}
	stale = slices.Clone(stack[:old])
	return slices.Delete(stack, 0, old), stale
}

// sweepIdle closes the connections idle past the timeout, of every upstream, even one no call goes to again, and
// those the upstream closed (or sent anything on: see alive), a peek each; it runs again when the oldest left
// will be past the timeout, or after idleCheckEvery if sooner.
func (t *h1Transport) sweepIdle() {
	now := time.Now()
	var stale []*conn
	next := time.Duration(-1)
	t.mu.Lock()
	for key, stack := range t.idle {
		stack, old := trimStale(stack, now)
		stale = append(stale, old...)
		stack = slices.DeleteFunc(stack, func(c *conn) bool {
			if c.quiet() {
				return false
			}
			stale = append(stale, c)
			return true
		})
		if len(stack) == 0 {
			delete(t.idle, key)
			continue
		}
		t.idle[key] = stack
		if d := idleConnTimeout - now.Sub(stack[0].idleAt); next < 0 || d < next {
			next = d
		}
	}
	if next >= 0 {
		// Past the oldest one's timeout: one idle for exactly the timeout is kept.
		t.sweep.Reset(min(next+time.Millisecond, idleCheckEvery))
	} else {
		t.sweep = nil
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// conn takes the most recently idle connection to key that is still open, or dials one.
func (t *h1Transport) conn(ctx context.Context, key connKey, hostname string) (*conn, error) {
	for {
		c, stale := t.pop(key)
		for _, s := range stale {
			s.close()
		}
		if c == nil {
			break
		}
		if c.alive() {
			return c, nil
		}
		c.close()
	}
	return t.dial(ctx, key, hostname)
}

// pop takes the top of key's stack; when that has been idle past the timeout, so has the rest: all of it is stale.
func (t *h1Transport) pop(key connKey) (c *conn, stale []*conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	stack := t.idle[key]
	if len(stack) == 0 {
		return nil, nil
	}
	top := stack[len(stack)-1]
	if time.Since(top.idleAt) > idleConnTimeout {
		delete(t.idle, key)
		return nil, stack
	}
	stack[len(stack)-1] = nil
	t.idle[key] = stack[:len(stack)-1]
	return top, nil
}

func (t *h1Transport) dial(ctx context.Context, key connKey, hostname string) (*conn, error) {
	nc, err := t.dialer.DialContext(ctx, "tcp", key.addr)
	if err != nil {
		return nil, err
	}
	c := &conn{tcp: nc, rw: nc, key: key, limit: math.MaxInt64}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	if key.tls {
		cfg := &tls.Config{}
		if t.tlsConfig != nil {
			cfg = t.tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = hostname
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, err
		}
		state := tc.ConnectionState()
		c.rw, c.tlsState = tc, &state
	}
	c.br = bufio.NewReaderSize(c, readBufferSize)
	c.bw = bufio.NewWriterSize(c.rw, writeBufferSize)
	c.closeFunc = c.close
	c.probe = func(fd uintptr) bool {
		c.open = peekWouldBlock(fd, c.peek[:])
		return true
	}
	return c, nil
}

// conn is one connection to an upstream. Reads go through limit, which bounds the bytes a response's headers
// may take.
type conn struct {
	tcp      net.Conn
	rw       io.ReadWriter // tcp, or the TLS connection over it
	raw      syscall.RawConn
	tlsState *tls.ConnectionState
	br       *bufio.Reader
	bw       *bufio.Writer
	limit    int64
	key      connKey
	idleAt   time.Time
	pooled   bool // it served an exchange before this one
	// closeFunc and probe are built once, for the calls that take a function: none allocates one per exchange.
	closeFunc func()
	probe     func(fd uintptr) bool
	open      bool // what probe saw
	peek      [1]byte
	sending   io.LimitedReader // the request body write sends, none between exchanges: a reader less to allocate
}

func (c *conn) Read(p []byte) (int, error) {
	if c.limit <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.limit {
		p = p[:c.limit]
	}
	n, err := c.rw.Read(p)
	c.limit -= int64(n)
	return n, err
}

// close closes the TCP connection, not a TLS one over it: that would first try to send a close_notify alert,
// which can wait on a full send buffer, where cancelling must not wait.
func (c *conn) close() { c.tcp.Close() }

// exchange writes req and reads the response's head. reuse says whether the connection may serve another
// exchange after this response's body. A failure before the first byte of an answer is an *unanswered.
func (c *conn) exchange(req *http.Request, method, host, uri string) (resp *http.Response, reuse bool, err error) {
	if err := c.write(req, method, host, uri); err != nil {
		// An upstream may answer before it has read the whole body (a 413, a 401) and close the connection, which
		// fails the write: its answer, when it has come, is the call's, as with net/http. The connection is done.
		if c.br.Buffered() > 0 || !c.quiet() {
			if resp, _, rerr := c.read(req, method); rerr == nil {
				return resp, false, nil
			}
		}
		return nil, false, &unanswered{err}
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, false, &unanswered{unexpected(err)}
	}
	return c.read(req, method)
}

// unanswered is an exchange that failed before the upstream answered anything.
type unanswered struct{ err error }

func (e *unanswered) Error() string { return e.err.Error() }

// write sends the request line, the headers and the body through the write buffer, with one flush: a small
// request is one write.
func (c *conn) write(req *http.Request, method, host, uri string) error {
	w := c.bw
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if ua, ok := req.Header["User-Agent"]; !ok {
		w.WriteString("User-Agent: Go-http-client/1.1\r\n")
	} else if len(ua) > 0 && ua[0] != "" {
		writeField(w, "User-Agent", ua[0])
	}
	n := outgoingLength(req)
	if n > 0 || (method != http.MethodGet && method != http.MethodHead) {
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), n, 10))
		w.WriteString("\r\n")
	}
	if req.Close && req.Header.Get("Connection") == "" {
		w.WriteString("Connection: close\r\n")
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vv {
			writeField(w, k, v)
		}
	}
	w.WriteString("\r\n")
	if n > 0 {
		c.sending = io.LimitedReader{R: req.Body, N: n}
		sent, err := w.ReadFrom(&c.sending)
		c.sending.R = nil
		if err != nil {
			return err
		}
		extra, err := io.Copy(io.Discard, req.Body)
		if err != nil {
			return err
		}
		if sent+extra != n {
			return fmt.Errorf("http: ContentLength=%d with Body length %d", n, sent+extra)
		}
	}
	return w.Flush()
}

func writeField(w *bufio.Writer, k, v string) {
	w.WriteString(k)
	w.WriteString(": ")
	w.WriteString(textproto.TrimString(v))
	w.WriteString("\r\n")
}

// answer is a response with its body and its Transfer-Encoding, in one allocation.
type answer struct {
	resp http.Response
	body body
	te   [1]string
}

// newBody is the answer's body, reading from c as mode frames it.
func (a *answer) newBody(c *conn, mode int, left int64) *body {
	a.body.c, a.body.mode, a.body.left = c, mode, left
	return &a.body
}

// read reads a response's status line and headers, skipping 1xx answers, and frames its body (RFC 9112, 6.3).
func (c *conn) read(req *http.Request, method string) (*http.Response, bool, error) {
	c.limit = maxHeaderBytes
	defer func() { c.limit = math.MaxInt64 }()
	a := &answer{}
	resp := &a.resp
	for {
		*resp = http.Response{} // nothing of a 1xx answer's is the final one's
		if err := c.readHead(resp); err != nil {
			return nil, false, c.headError(err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, false, errSwitchingProt
		}
		if resp.StatusCode >= 200 {
			break
		}
	}
	resp.Request, resp.TLS = req, c.tlsState
	h := resp.Header
	http11 := resp.ProtoAtLeast(1, 1)
	if http11 {
		resp.Close = httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	} else {
		resp.Close = !httpguts.HeaderValuesContainsToken(h["Connection"], "keep-alive")
	}
	chunked := false
	if te, ok := h["Transfer-Encoding"]; ok {
		delete(h, "Transfer-Encoding")
		if http11 {
			if len(te) != 1 || !h1.EqualFoldASCII(textproto.TrimString(te[0]), "chunked") {
				return nil, false, fmt.Errorf("the upstream's Transfer-Encoding %q is not chunked", te)
			}
			chunked = true
			delete(h, "Content-Length")
			a.te[0] = "chunked"
			resp.TransferEncoding = a.te[:]
		}
	}
	length, err := contentLength(h["Content-Length"])
	if err != nil {
		return nil, false, err
	}
	resp.ContentLength = length
	switch {
	case method == http.MethodHead:
		resp.Body = http.NoBody
	case resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified:
		resp.Body, resp.ContentLength = http.NoBody, 0
	case chunked:
		resp.Body, resp.ContentLength = a.newBody(c, chunkHeader, 0), -1
	case length == 0:
		resp.Body = http.NoBody
	case length > 0:
		resp.Body = a.newBody(c, lengthData, length)
	default:
		resp.Body, resp.Close = a.newBody(c, untilClose, 0), true
	}
	return resp, !resp.Close, nil
}

// headError is the error for a head that could not be read: one past the bound may have been cut mid-line, and
// read as malformed.
func (c *conn) headError(err error) error {
	if c.limit <= 0 {
		return errTooLarge
	}
	return unexpected(err)
}

// statusLine parses "HTTP/1.1 200 OK" into resp.
func statusLine(line string, resp *http.Response) error {
	proto, status, ok := strings.Cut(line, " ")
	major, minor, vok := http.ParseHTTPVersion(proto)
	status = strings.TrimLeft(status, " ")
	code, _, _ := strings.Cut(status, " ")
	n, err := strconv.ParseUint(code, 10, 16)
	if !ok || !vok || major != 1 || len(code) != 3 || err != nil || n < 100 {
		return fmt.Errorf("malformed HTTP status line %q", h1.Truncate(line))
	}
	resp.Status, resp.StatusCode, resp.Proto, resp.ProtoMajor, resp.ProtoMinor = status, int(n), proto, major, minor
	return nil
}

// contentLength is the Content-Length given (-1 when none): several are an error unless they agree.
func contentLength(values []string) (int64, error) {
	if len(values) == 0 {
		return -1, nil
	}
	first := textproto.TrimString(values[0])
	for _, v := range values[1:] {
		if textproto.TrimString(v) != first {
			return 0, fmt.Errorf("the upstream sent conflicting Content-Length headers %q", values)
		}
	}
	if first == "" {
		return -1, nil
	}
	n, err := strconv.ParseUint(first, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("the upstream sent a bad Content-Length %q", h1.Truncate(first))
	}
	return int64(n), nil
}

// unexpected is the error for a response that ended early: never a clean EOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// How a body is framed, and for chunked bodies what comes next.
const (
	lengthData   = iota // Content-Length: left bytes to come
	untilClose          // no length: the body ends when the upstream closes the connection
	chunkHeader         // a chunk's size line
	chunkData           // left bytes of a chunk's data
	chunkEnd            // the CRLF after a chunk's data
	chunkTrailer        // the trailer's fields, up to a blank line
)

// Who has a body's connection.
const (
	bodyReading  = iota // the body: its reads use the connection
	bodyFinished        // the body reached its end or failed: the connection is pooled or closed
	bodyClosed          // Close came first and closed the connection
)

// body is a response body read from its connection's buffer in the caller's goroutine. A Read returns every
// chunk already buffered and does not wait for the next once it has something, so a stream's flushes go on as
// they come; within a chunk, which the upstream sent whole, it reads on to the chunk's end (or p's), as net/http's
// chunked reader does: a chunk the network or the upstream's write buffer cut in two goes on in one piece, not
// as a read and a write downstream for each part. At its end the connection goes back to the pool at once, even
// before the caller reads the io.EOF.
type body struct {
	// mu is held by a Read, and by a Close while it drains: a Close that comes while a Read waits closes the
	// connection instead.
	mu      sync.Mutex
	c       *conn
	t       *h1Transport
	ctx     context.Context
	stop    stopper // stops closing the connection when ctx ends
	reuse   bool
	state   atomic.Int32
	mode    int
	left    int64 // bytes left of the body (lengthData) or the chunk (chunkData)
	trailer int   // trailer bytes read
	excess  int64 // chunk size lines' bytes past what the data read so far allows (see chunkSize)
	err     error // what every later Read returns
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() == bodyClosed {
		return 0, errClosedBody
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := b.read(p)
	switch {
	case err == io.EOF:
		b.err = io.EOF
		b.finish(b.reuse)
	case err != nil:
		b.finish(false)
		if b.state.Load() == bodyClosed {
			err = errClosedBody
		} else if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.err = err
		if n > 0 {
			return n, nil // the error comes with the next Read
		}
	}
	return n, err
}

func (b *body) read(p []byte) (int, error) {
	br := b.c.br
	switch b.mode {
	case lengthData:
		n, err := b.readData(p[:min(int64(len(p)), b.left)])
		b.left -= int64(n)
		if b.left == 0 {
			return n, io.EOF
		}
		return n, unexpected(err)
	case untilClose:
		return b.readData(p)
	}
	n := 0
	for {
		switch b.mode {
		case chunkData:
			if n == len(p) {
				return n, nil
			}
			m, err := b.readData(p[n:min(int64(len(p)), int64(n)+b.left)])
			n += m
			b.left -= int64(m)
			if err != nil {
				return n, unexpected(err)
			}
			if b.left == 0 {
				b.mode = chunkEnd
			}
		case chunkEnd:
			if n > 0 && br.Buffered() < 2 {
				return n, nil
			}
			crlf, err := br.Peek(2)
			if err != nil {
				return n, unexpected(err)
			}
			if string(crlf) != "\r\n" {
				return n, errors.New("malformed chunked encoding: a chunk's data does not end with CRLF")
			}
			br.Discard(2)
			b.mode = chunkHeader
		case chunkHeader:
			if n > 0 && !lineBuffered(br) {
				return n, nil
			}
			size, err := b.chunkSize(br)
			if err != nil {
				return n, err
			}
			if size == 0 {
				b.mode = chunkTrailer
			} else {
				b.mode, b.left = chunkData, size
			}
		case chunkTrailer:
			if n > 0 && !lineBuffered(br) {
				return n, nil
			}
			empty, err := b.trailerLine(br)
			if err != nil {
				return n, err
			}
			if empty {
				return n, io.EOF
			}
		}
	}
}

// readData reads body bytes into p: those buffered, or when none are and p is a stream buffer's size or more,
// straight from the connection (bufio would read through its buffer, which is larger by the head's room, and
// leave its last bytes for another Read: another write and flush downstream).
func (b *body) readData(p []byte) (int, error) {
	if b.c.br.Buffered() == 0 && len(p) >= streamBufferSize {
		return b.c.Read(p)
	}
	return b.c.br.Read(p)
}

// lineBuffered says whether a whole line is in the buffer, to be read without waiting.
func lineBuffered(br *bufio.Reader) bool {
	buf, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(buf, '\n') >= 0
}

// maxChunkExcess bounds the bytes of chunk size lines (extensions above all) past 16 a chunk and twice its data,
// as net/http's chunked reader does: extensions are ignored, but an upstream must not make the gateway read
// without end for little data (a byte a chunk is streaming, and fine; "1;<a kilobyte>\r\nx\r\n" is not).
const maxChunkExcess = 16 << 10

// chunkSize reads a chunk's size line: hexadecimal digits, then extensions, which are ignored; and counts the
// line against maxChunkExcess.
func (b *body) chunkSize(br *bufio.Reader) (int64, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return 0, errors.New("malformed chunked encoding: a chunk size line is too long")
	}
	if err != nil {
		return 0, unexpected(err)
	}
	b.excess += int64(len(line)) + 2 // and the CRLF after the chunk's data
	line, _, _ = bytes.Cut(line, []byte(";"))
	line = bytes.TrimRight(line, " \t\r\n")
	n, err := strconv.ParseUint(string(line), 16, 63)
	if err != nil {
		return 0, fmt.Errorf("malformed chunked encoding: chunk size %q", h1.Truncate(string(line)))
	}
	b.excess = max(b.excess-16-2*min(int64(n), maxChunkExcess), 0) // min: 2n must not overflow
	if b.excess > maxChunkExcess {
		return 0, errors.New("malformed chunked encoding: too much non-data (chunk extensions) for the data")
	}
	return int64(n), nil
}

// trailerLine reads one line of the trailer, which is discarded, and says whether it was the blank line that
// ends the body.
func (b *body) trailerLine(br *bufio.Reader) (bool, error) {
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		n += len(line)
		b.trailer += len(line)
		if b.trailer > maxHeaderBytes {
			return false, errTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return false, unexpected(err)
		}
		return n == len(line) && len(bytes.TrimRight(line, "\r\n")) == 0, nil
	}
}

// finish ends the exchange once, from Read: the connection is pooled when reuse, else closed. Close may have
// come first, and closed it.
func (b *body) finish(reuse bool) {
	if !b.state.CompareAndSwap(bodyReading, bodyFinished) {
		return
	}
	b.t.release(b.c, b.stop, reuse)
}

// Close closes the connection unless the body reached its end, or reaches it soon (drain); it may come while a
// Read waits, and unblocks it.
func (b *body) Close() error {
	if b.mu.TryLock() {
		if b.state.Load() == bodyReading {
			b.drain()
		}
		b.mu.Unlock()
	}
	if b.state.Swap(bodyClosed) == bodyReading {
		b.stop.stop()
		b.c.close()
	}
	return nil
}

// drainLimit and drainWait bound what Close reads to reach a body's end, and how long it waits for it: the
// framing that follows the last data (the chunked terminator, a trailer) and a little data, which an upstream
// sends with that data or just after it; not a body the caller left, nor an upstream that holds its answer open.
const (
	drainLimit = 4 << 10
	drainWait  = 5 * time.Millisecond
)

// drain reads the rest of a body closed before its end, when it is within drainLimit and comes within drainWait,
// so that the connection goes back to the pool (as at the end of a Read). A stream whose protocol ends it with an
// event of its own (OpenAI's data: [DONE]) is closed there, and the upstream's chunked terminator, written just
// after that event in a write of its own, had most often not been read yet: closing the connection for it made
// the next call dial, and wait for the connect and the upstream's accept before its request went out (benche2e's
// chat with -token-gap: a new connection for about half the calls, 0.35 ms more on their way to the upstream).
func (b *body) drain() {
	c := b.c
	if c.tcp.SetReadDeadline(time.Now().Add(drainWait)) != nil {
		return
	}
	var scratch [512]byte
	var err error
	for n, total := 0, 0; err == nil && total < drainLimit; total += n {
		n, err = b.read(scratch[:])
	}
	if err == io.EOF && c.tcp.SetReadDeadline(time.Time{}) == nil {
		b.err = io.EOF
		b.finish(b.reuse)
	}
}

// alive says whether an idle connection is still open: nothing to read and no error, without waiting. A server
// that closed it (FIN, or a TLS close_notify) or sent anything unasked makes it unusable.
func (c *conn) alive() bool {
	if !c.quiet() {
		return false
	}
	tc, ok := c.rw.(*tls.Conn)
	if !ok {
		return true
	}
	// A TLS connection may hold records it read from the socket with the answer's, where the peek cannot see
	// them: a read that cannot wait finds them (a timeout leaves the connection usable).
	tc.SetReadDeadline(aLongTimeAgo)
	_, err := tc.Read(c.peek[:])
	tc.SetReadDeadline(time.Time{})
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// quiet says whether the socket has nothing to read and no error, without waiting or reading anything.
func (c *conn) quiet() bool {
	return c.raw == nil || (c.raw.Read(c.probe) == nil && c.open)
}

// aLongTimeAgo is a deadline already past: a read with it returns what is buffered, or a timeout at once.
var aLongTimeAgo = time.Unix(1, 0)
