package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// net/http answers some requests itself, before any handler runs, in plain text: a request line, URL or header it
// cannot parse (400, e.g. GET /presets/%zz), headers past MaxHeaderBytes (431), a transfer coding it does not
// know (501). It writes each as one fixed-shape message straight to the connection and closes it. envelopeListener
// recognises those messages on the way out and sends the same status in the error envelope instead, so every
// answer a caller gets is the envelope. (Plain HTTP only: under TLS the bytes seen here are encrypted; the
// gateway serves plain HTTP behind whatever terminates TLS.)

// netHTTPErrorHeaders are the headers net/http gives exactly those messages (net/http's errorHeaders).
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{Conn: c}, nil
}

// envelopeConn also gathers a streamed response's writes between hold and release into one system call (see
// hold).
type envelopeConn struct {
	net.Conn
	held *[]byte // while holding: the writes not sent yet
}

func (c *envelopeConn) Write(p []byte) (int, error) {
	if c.held != nil {
		return c.gather(p)
	}
	if env, ok := netHTTPError(p); ok {
		if _, err := c.Conn.Write(env); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// heldPool holds the buffers of connections holding their writes: one per stream between a write and its flush,
// none while a stream waits for its upstream. They fit what one flush of a stream carries (its 16 KiB buffer,
// chunk framing and the response's headers); a larger write is not gathered.
var heldPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// hold gathers what the connection is written from now on until release, which sends it in one write. net/http
// writes a response through a 4 KiB buffer: a flush of 16 KiB of audio took a write for the buffer (headers and
// chunk size first), one for the rest and one for the chunk's trailing CRLF, each a system call and a wakeup of
// the caller. Only the request's handler writes to its connection, and the server releases what a handler left
// held once it returns (releaseHeld), so nothing stays held past the response.
func (c *envelopeConn) hold() {
	if c.held == nil {
		c.held = heldPool.Get().(*[]byte)
	}
}

// gather keeps p for release, or, when it does not fit, sends what is held and then p.
func (c *envelopeConn) gather(p []byte) (int, error) {
	h := c.held
	if len(*h)+len(p) > cap(*h) {
		if err := c.send(); err != nil {
			return 0, err
		}
		if len(p) > cap(*h) {
			return c.Conn.Write(p)
		}
	}
	*h = append(*h, p...)
	return len(p), nil
}

// send writes what is held, and goes on holding.
func (c *envelopeConn) send() error {
	h := c.held
	if len(*h) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*h)
	*h = (*h)[:0]
	return err
}

// release sends what is held in one write and stops holding.
func (c *envelopeConn) release() error {
	if c.held == nil {
		return nil
	}
	err := c.send()
	heldPool.Put(c.held)
	c.held = nil
	return err
}

type connKey struct{}

// withConn marks a connection's context with it, for heldConn (http.Server.ConnContext).
func withConn(ctx context.Context, c net.Conn) context.Context {
	if ec, ok := c.(*envelopeConn); ok {
		return context.WithValue(ctx, connKey{}, ec)
	}
	return ctx
}

// heldConn is the connection a request came on, or nil when it did not come through envelopeListener (tests
// serving the handler themselves): its writes are then never held.
func heldConn(ctx context.Context) *envelopeConn {
	c, _ := ctx.Value(connKey{}).(*envelopeConn)
	return c
}

// releaseHeld serves a request with h, then sends what its handler left held on the connection.
func releaseHeld(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if c := heldConn(r.Context()); c != nil {
			_ = c.release() // a connection that failed fails net/http's own write that follows
		}
	})
}

// CloseWrite keeps net/http's half-close after a 431 (it lets the client read the answer).
func (c *envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPError recognises a whole plain-text answer of net/http's own ("HTTP/1.1 400 Bad Request" + its error
// headers + a short text) and returns it rewritten in the envelope. Responses from handlers never match: they
// always carry Date and X-Request-Id.
func netHTTPError(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	line, rest, ok := bytes.Cut(p, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(line, []byte(proto)) || len(line) < len(proto)+3 ||
		!bytes.HasPrefix(rest, []byte(netHTTPErrorHeaders[2:])) {
		return nil, false
	}
	status, err := strconv.Atoi(string(line[len(proto) : len(proto)+3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	msg := "the request could not be parsed: malformed request line, URL (such as a bad percent-escape) or header"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		msg = fmt.Sprintf("request headers are larger than the server accepts (%d bytes)", http.DefaultMaxHeaderBytes)
	case http.StatusNotImplemented:
		msg = "unsupported transfer encoding"
	case http.StatusBadRequest:
		// net/http's own reasons are fixed texts ("missing required Host header", "malformed Host header"...).
		if _, why, ok := bytes.Cut(rest[len(netHTTPErrorHeaders)-2:], []byte("Bad Request: ")); ok && len(why) < 200 {
			msg = "the request could not be parsed: " + string(why)
		}
	}
	body, _ := json.Marshal(errorEnvelope{Error: errorObject{Code: status, Message: msg,
		Metadata: map[string]any{"reason": "malformed_request"}}})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body), true
}
