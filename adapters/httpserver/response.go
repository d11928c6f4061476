package httpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the http.ResponseWriter (and http.Flusher, and what http.ResponseController uses) of one request.
// What the handler writes is kept in a buffer of bufferSize until it flushes, the buffer fills or it returns.
type response struct {
	c      *conn
	req    *http.Request
	body   *bodyReader // nil when the request has none, else &ownBody
	cancel context.CancelFunc
	header http.Header
	// The request, its URL (when it is parsed in place) and its body as the handler reads it, allocated with the
	// response.
	request http.Request
	url     url.URL
	ownBody bodyReader
	// snapshot is the header as it was at WriteHeader, when the handler looked at it again before it was sent:
	// changes made after WriteHeader are not sent (as net/http).
	snapshot http.Header

	status           int
	wroteHeader      bool // the handler (or a first Write) called WriteHeader
	headSent         bool
	chunked          bool
	closeAfter       bool // the connection is closed after the response
	lingerClose      bool // ... after a half-close, the request's body being left unread
	isHEAD           bool
	wantsClose       bool
	wants10KeepAlive bool
	faultyFraming    bool  // the request's framing has the connection closed after it (frame)
	contentLength    int64 // declared by the handler (or set from what it wrote), -1 when unknown
	written          int64
	bufs             *buffers // nil until the first write
	err              error    // the connection's write failed: every later write fails with it
	done             bool
}

// bufferSize is what a response holds before it sends: a flush of a 16 KiB stream buffer, with the head and the
// chunk's framing, leaves in one write.
const bufferSize = 32 << 10

// A response's buffer keeps room in front of what the handler wrote, where the head and the chunk's size line are
// put before a send, and behind it, for the chunk's CRLF and the terminator: what leaves in one write is one
// stretch of one buffer, never a copy of the body into a second one (which doubled the memory a stream holds).
const (
	headroom = 1 << 10
	tailroom = len("\r\n0\r\n\r\n")
)

type buffers struct {
	b    []byte // b[headroom:] is what the handler wrote and was not sent yet; its capacity leaves tailroom
	head []byte // where the head and framing are put together before they go in front of it
}

var buffersPool = sync.Pool{New: func() any {
	return &buffers{b: make([]byte, headroom, headroom+bufferSize+tailroom), head: make([]byte, 0, headroom)}
}}

var (
	errAfterReturn = errors.New("httpserver: response written after its handler returned")
	errShortBody   = errors.New("httpserver: handler wrote fewer bytes than its Content-Length")
)

func (w *response) Header() http.Header {
	if w.wroteHeader && !w.headSent && w.snapshot == nil {
		w.snapshot = w.header.Clone()
	}
	return w.header
}

func (w *response) WriteHeader(code int) {
	if w.wroteHeader || w.done {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code)) // as net/http
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.writeInterim(code)
		return
	}
	w.wroteHeader, w.status = true, code
	if cl := get(w.header, "Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.header.Del("Content-Length")
		}
	}
}

// writeInterim sends a 1xx answer at once, with the header as it is but its framing (net/http's
// excludedHeadersNoBody): an interim answer has no body.
func (w *response) writeInterim(code int) {
	if w.headSent || w.err != nil {
		return
	}
	b := appendStatusLine(nil, code)
	b = w.appendFields(b, w.header, dropContentLength|dropTransferEncoding)
	w.send(append(b, "\r\n"...))
}

func (w *response) Write(p []byte) (int, error) { return write(w, p) }

func (w *response) WriteString(s string) (int, error) { return write(w, s) }

// write keeps p for the next send, sending what is kept whenever the buffer fills.
func write[T []byte | string](w *response, p T) (int, error) {
	if w.done {
		return 0, errAfterReturn
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength != -1 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	if w.err != nil {
		return 0, w.err
	}
	n := 0
	for n < len(p) {
		if w.bufs == nil {
			w.bufs = buffersPool.Get().(*buffers)
		}
		b := &w.bufs.b
		if len(*b) == cap(*b)-tailroom {
			if err := w.flush(false); err != nil {
				return n, err
			}
			continue
		}
		k := copy((*b)[len(*b):cap(*b)-tailroom], p[n:])
		*b = (*b)[:len(*b)+k]
		n += k
		w.written += int64(k)
	}
	return n, nil
}

func (w *response) Flush() { _ = w.FlushError() }

// FlushError sends the head, if not sent yet, and what was written since the last send, in one write.
func (w *response) FlushError() error {
	if w.done {
		return errAfterReturn
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.flush(false)
}

// SetWriteDeadline and SetReadDeadline serve http.ResponseController.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

func (w *response) SetReadDeadline(t time.Time) error { return w.c.rwc.SetReadDeadline(t) }

// finish ends the response once the handler returned: what is left leaves in one write, with a Content-Length
// when the handler never flushed, or with the chunked terminator.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	_ = w.flush(true)
	w.release() // kept when the send failed
	w.done = true
	if w.contentLength != -1 && bodyAllowedForStatus(w.status) && !w.isHEAD && w.written != w.contentLength {
		w.closeAfter = true // the caller would read the next response as the rest of this one
		w.failed(errShortBody)
	}
	if w.err != nil || w.c.srv.shutting.Load() {
		w.closeAfter = true
	}
	if w.body != nil {
		if !w.closeAfter && !w.body.sawEOF {
			w.closeAfter = true // sent with its head before the handler was done with the body: not read to its end
		}
		// A goroutine the handler left must not read on: the connection's read buffer goes to the next request,
		// or to another connection.
		_ = w.body.Close()
	}
}

// release gives the buffers back once what they held is sent: a stream waiting for its upstream holds none.
func (w *response) release() {
	if w.bufs == nil {
		return
	}
	w.bufs.b = w.bufs.b[:headroom]
	if cap(w.bufs.head) <= 4*headroom {
		w.bufs.head = w.bufs.head[:0]
		buffersPool.Put(w.bufs)
	}
	w.bufs = nil
}

// flush sends the head, if not sent yet, and what is pending (as a chunk when chunked), and for the last the
// chunked terminator, in one write.
func (w *response) flush(last bool) error {
	if w.err != nil {
		return w.err
	}
	if w.bufs == nil {
		w.bufs = buffersPool.Get().(*buffers)
	}
	b := w.bufs.b
	pending := b[headroom:]
	front := w.bufs.head[:0]
	if !w.headSent {
		front = w.appendHead(front, last, pending)
		w.headSent = true
	}
	if w.isHEAD {
		b = b[:headroom]
	} else if len(pending) > 0 && w.chunked {
		front = strconv.AppendInt(front, int64(len(pending)), 16)
		front = append(front, "\r\n"...)
		b = append(b, "\r\n"...)
	}
	if last && w.chunked {
		b = append(b, "0\r\n\r\n"...)
	}
	w.bufs.head = front // grown for a large head: kept for the pool up to a bound
	var out []byte
	if len(front) <= headroom {
		out = b[headroom-len(front):]
		copy(out, front)
	} else {
		out = append(append(make([]byte, 0, len(front)+len(b)-headroom), front...), b[headroom:]...)
	}
	var err error
	if len(out) > 0 {
		err = w.send(out)
	}
	w.release()
	return err
}

// send writes b to the connection; a failure fails the response and cancels the request.
func (w *response) send(b []byte) error {
	if _, err := w.c.rwc.Write(b); err != nil {
		w.failed(err)
		return err
	}
	return nil
}

func (w *response) failed(err error) {
	if w.err == nil {
		w.err = err
	}
	w.closeAfter = true
	w.cancel()
}

// Fields the server sets or removes itself, as net/http's chunkWriter.writeHeader decides them.
const (
	dropContentLength = 1 << iota
	dropTransferEncoding
	dropConnection
	dropContentType
)

// appendHead appends the status line and header fields; last says the handler has returned, and pending is all
// it wrote then (a Content-Length is set from it).
func (w *response) appendHead(out []byte, last bool, pending []byte) []byte {
	h := w.header
	if w.snapshot != nil {
		h = w.snapshot
	}
	code := w.status
	bodyOK := bodyAllowedForStatus(code)
	var drop int
	te := get(h, "Transfer-Encoding")
	hasTE := te != ""
	var setLength, setConnection, setType string
	if last && !hasTE && bodyOK && !has(h, "Content-Length") && (!w.isHEAD || len(pending) > 0) {
		w.contentLength = int64(len(pending))
		setLength = strconv.Itoa(len(pending))
	}
	// HTTP/1.0 keep-alive: only with a length, and when the handler asked for it.
	if w.wants10KeepAlive && get(h, "Content-Length") != "" && get(h, "Connection") == "keep-alive" {
		w.closeAfter = false
	}
	hasCL := w.contentLength != -1
	if w.wants10KeepAlive && (w.isHEAD || hasCL || !bodyOK) {
		if _, set := h["Connection"]; !set {
			setConnection = "keep-alive"
		}
	} else if !w.req.ProtoAtLeast(1, 1) || w.wantsClose {
		w.closeAfter = true
	}
	if get(h, "Connection") == "close" || w.c.srv.shutting.Load() {
		w.closeAfter = true
	}
	if w.body != nil && w.body.expect && !w.body.sawEOF {
		// The caller waits for 100 Continue to send the body, which the handler never read.
		w.closeAfter = true
	}
	if w.req.ContentLength != 0 && !w.closeAfter && w.body != nil && !w.body.sawEOF {
		w.discardBody()
	}
	if bodyOK {
		_, haveType := h["Content-Type"]
		if get(h, "Content-Encoding") == "" && !haveType && !hasTE && len(pending) > 0 {
			setType = http.DetectContentType(pending)
		}
	} else {
		drop |= dropContentLength | dropTransferEncoding
		if code == http.StatusNotModified {
			drop |= dropContentType
		}
	}
	if hasCL && hasTE && te != "identity" {
		drop |= dropContentLength
		hasCL = false
		setLength = ""
	}
	switch {
	case w.isHEAD || !bodyOK:
		drop |= dropTransferEncoding
	case hasCL:
		drop |= dropTransferEncoding
	case w.req.ProtoAtLeast(1, 1) && te == "identity":
		w.closeAfter = true
		drop |= dropTransferEncoding
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		drop |= dropTransferEncoding // set below
	default: // HTTP/1.0 without a length: the body ends with the connection
		w.closeAfter = true
		drop |= dropTransferEncoding
	}
	if w.chunked {
		drop |= dropContentLength
		setLength = ""
	}
	if w.closeAfter && !httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		drop |= dropConnection
		setConnection = ""
		if w.req.ProtoAtLeast(1, 1) {
			setConnection = "close"
		}
	}

	out = appendStatusLine(out, code)
	if setLength != "" {
		out = append(append(append(out, "Content-Length: "...), setLength...), "\r\n"...)
	}
	if setType != "" {
		out = append(append(append(out, "Content-Type: "...), setType...), "\r\n"...)
	}
	if setConnection != "" {
		out = append(append(append(out, "Connection: "...), setConnection...), "\r\n"...)
	}
	if w.chunked {
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	}
	if !has(h, "Date") {
		out = appendDate(append(out, "Date: "...), time.Now())
		out = append(out, "\r\n"...)
	}
	out = w.appendFields(out, h, drop)
	return append(out, "\r\n"...)
}

// appendFields appends h's fields, but for those dropped, sorted by name, as net/http does: a name that is not a
// valid token is left out, and CR and LF in a value become spaces, so a header can never end early or add one.
func (w *response) appendFields(out []byte, h http.Header, drop int) []byte {
	keys := w.c.keys[:0]
	for k := range h {
		if dropped(k, drop) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range h[k] {
			out = append(append(out, k...), ": "...)
			out = appendValue(out, v)
			out = append(out, "\r\n"...)
		}
	}
	clear(keys)
	w.c.keys = keys[:0]
	return out
}

func dropped(k string, drop int) bool {
	switch k {
	case "Content-Length":
		return drop&dropContentLength != 0
	case "Transfer-Encoding":
		return drop&dropTransferEncoding != 0
	case "Connection":
		return drop&dropConnection != 0
	case "Content-Type":
		return drop&dropContentType != 0
	}
	return false
}

// appendValue appends v with CR and LF as spaces and then trimmed of spaces and tabs (net/http's
// headerNewlineToSpace and textproto.TrimString).
func appendValue(out []byte, v string) []byte {
	if plainValue(v) {
		return append(out, v...)
	}
	start := len(out)
	for i := 0; i < len(v); i++ {
		b := v[i]
		if b == '\r' || b == '\n' {
			b = ' '
		}
		out = append(out, b)
	}
	val := out[start:]
	lead := 0
	for lead < len(val) && (val[lead] == ' ' || val[lead] == '\t') {
		lead++
	}
	end := len(val)
	for end > lead && (val[end-1] == ' ' || val[end-1] == '\t') {
		end--
	}
	n := copy(val, val[lead:end])
	return out[:start+n]
}

// get is h.Get for a name in its canonical form, which Get would check and make anew.
func get(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// plainValue reports whether v is appended as it is: no CR or LF in it, no space or tab around it (most values).
func plainValue(v string) bool {
	if v == "" {
		return true
	}
	first, last := v[0], v[len(v)-1]
	return first != ' ' && first != '\t' && last != ' ' && last != '\t' &&
		strings.IndexByte(v, '\r') < 0 && strings.IndexByte(v, '\n') < 0
}

func has(h http.Header, k string) bool {
	_, ok := h[k]
	return ok
}

func appendStatusLine(out []byte, code int) []byte {
	out = strconv.AppendInt(append(out, "HTTP/1.1 "...), int64(code), 10)
	if text := http.StatusText(code); text != "" {
		out = append(append(out, ' '), text...)
	} else {
		out = strconv.AppendInt(append(out, " status code "...), int64(code), 10)
	}
	return append(out, "\r\n"...)
}

func bodyAllowedForStatus(status int) bool {
	return (status < 100 || status > 199) && status != http.StatusNoContent && status != http.StatusNotModified
}

// dateCache is the Date field's value for one second.
type dateCache struct {
	sec int64
	b   []byte
}

var date atomic.Pointer[dateCache]

func appendDate(out []byte, now time.Time) []byte {
	sec := now.Unix()
	d := date.Load()
	if d == nil || d.sec != sec {
		d = &dateCache{sec: sec, b: now.UTC().AppendFormat(nil, http.TimeFormat)}
		date.Store(d)
	}
	return append(out, d.b...)
}

// maxPostHandlerReadBytes is how much of a request's body the server reads past what the handler read, to
// keep the connection: net/http's bound.
const maxPostHandlerReadBytes = 256 << 10

// discardBody reads what the handler left of the request's body, when that is little, so that the connection
// can carry the next request; otherwise the connection is closed after the response.
func (w *response) discardBody() {
	b := w.body
	if w.req.ContentLength > 0 && w.req.ContentLength-b.n >= maxPostHandlerReadBytes {
		w.tooLarge()
		return
	}
	if b.closed {
		w.closeAfter = true
		return
	}
	_, err := io.CopyN(io.Discard, b, maxPostHandlerReadBytes+1)
	switch {
	case err == nil:
		w.tooLarge()
	case err != io.EOF:
		w.closeAfter = true // a broken body: what follows on the wire is no request
	}
}

func (w *response) tooLarge() {
	w.closeAfter, w.lingerClose = true, true
}

// bodyReader is the request's body as the handler reads it (src, as it comes off the connection): it sends 100
// Continue on the first read when the caller asked for it, arms the watch for the caller leaving once the body is
// read, and never reads past the body's end to close it (net/http's body would read the rest, however large, on
// Close). Its mutex makes
// a read by a goroutine the handler left end before the body is closed when the handler returns, as net/http's.
type bodyReader struct {
	mu     sync.Mutex
	w      *response
	src    wireBody
	n      int64
	expect bool // 100 Continue is owed on the first read
	sent   bool // ... and was sent
	sawEOF bool
	closed bool
}

var continueLine = []byte("HTTP/1.1 100 Continue\r\n\r\n")

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.expect && !b.sent {
		b.sent = true
		if !b.w.headSent && b.w.err == nil {
			if b.w.send(continueLine) != nil {
				return 0, b.w.err
			}
		}
	}
	n, err := b.src.Read(p)
	b.n += int64(n)
	if err == io.EOF && !b.sawEOF {
		b.sawEOF = true
		b.w.c.watch(b.w)
	}
	return n, err
}

// Close stops the handler's reads; what it left unread is dealt with when the response is sent.
func (b *bodyReader) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}
