package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
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

type envelopeConn struct{ net.Conn }

func (c *envelopeConn) Write(p []byte) (int, error) {
	if env, ok := netHTTPError(p); ok {
		if _, err := c.Conn.Write(env); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
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
