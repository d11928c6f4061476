package httpserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// pieces reads its byte slices one per read (a read asks for less: what is left of one is the next read's), and
// then ends: a request as it comes off a connection, in as many reads as it was cut into.
type pieces struct{ p [][]byte }

func (r *pieces) Read(b []byte) (int, error) {
	for len(r.p) > 0 && len(r.p[0]) == 0 {
		r.p = r.p[1:]
	}
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.p[0])
	r.p[0] = r.p[0][n:]
	return n, nil
}

// cutEvery cuts raw into pieces of step bytes (one piece when step is 0).
func cutEvery(raw []byte, step int) *pieces {
	if step <= 0 {
		return &pieces{[][]byte{raw}}
	}
	var p [][]byte
	for len(raw) > step {
		p, raw = append(p, raw[:step]), raw[step:]
	}
	return &pieces{append(p, raw)}
}

// pipeConn is a connection whose reads are its reader's; only Read is used of it.
type pipeConn struct {
	net.Conn
	r io.Reader
}

func (c pipeConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// served is a request as the server's handler would see it, or its refusal (status 0: not answered), with its body
// read to its end, and what is left on the connection after it.
type served struct {
	status  int
	reason  string
	req     *http.Request
	body    string
	bodyErr string
	rest    string
}

// netHTTP reads a request as net/http's server does: http.ReadRequest over a read buffer of the server's size, the
// connection read up to the head's bound, and the checks its server then makes (the ones this server made after
// http.ReadRequest before it had a parser of its own).
func netHTTP(raw []byte, r io.Reader) served {
	conn := &io.LimitedReader{R: r, N: headLimit} // as connReader bounds a head
	br := bufio.NewReaderSize(conn, 4<<10)
	req, err := http.ReadRequest(br)
	if err != nil {
		switch {
		case conn.N <= 0:
			return served{status: http.StatusRequestHeaderFieldsTooLarge}
		case strings.HasPrefix(err.Error(), "unsupported transfer encoding") ||
			strings.HasPrefix(err.Error(), "too many transfer encodings"):
			return served{status: http.StatusNotImplemented}
		case commonReadError(err):
			return served{}
		}
		return served{status: http.StatusBadRequest}
	}
	conn.N = math.MaxInt64
	// http.ReadRequest takes the Host field out of the header, which its server checks before: read again with
	// net/textproto, as http.ReadRequest read it.
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw)))
	_, _ = tp.ReadLine()
	head, _ := tp.ReadMIMEHeader()
	hosts, haveHost := head["Host"]
	switch {
	case req.ProtoMajor != 1:
		return served{status: http.StatusHTTPVersionNotSupported, reason: "unsupported protocol version"}
	case req.ProtoAtLeast(1, 1) && (!haveHost || len(hosts) == 0) && req.Method != http.MethodConnect:
		return served{status: http.StatusBadRequest, reason: "missing required Host header"}
	case len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]):
		return served{status: http.StatusBadRequest, reason: "malformed Host header"}
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return served{status: http.StatusBadRequest, reason: "invalid header name"}
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return served{status: http.StatusBadRequest, reason: "invalid header value"}
			}
		}
	}
	// net/http's own test of Expect (unexported): its token at a boundary of the first value.
	if req.Header.Get("Expect") != "" && !hasToken(req.Header.Get("Expect"), "100-continue") {
		return served{status: http.StatusExpectationFailed}
	}
	return readBody(served{req: req}, req.Body, br)
}

// ours reads a request as this server does (readHead), on a connection whose reads are r's.
func ours(r io.Reader) served {
	c := &conn{rwc: pipeConn{r: r}}
	c.r = connReader{c: c, remain: headLimit}
	c.br = bufio.NewReaderSize(&c.r, 4<<10)
	if _, err := c.br.Peek(1); err != nil { // serve's wait for a request
		return served{}
	}
	w := &response{c: c}
	if rej := c.readHead(w); rej != nil {
		return served{status: rej.status, reason: rej.reason}
	}
	c.r.remain = math.MaxInt64
	body := io.Reader(w.request.Body)
	if body == nil {
		body = &w.ownBody.src
	}
	return readBody(served{req: &w.request}, body, c.br)
}

// commonReadError is a read that failed for the connection's sake (closed, timed out), which net/http's server does
// not answer (its isCommonNetReadError).
func commonReadError(err error) bool {
	if err == io.EOF {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read"
}

func readBody(s served, body io.Reader, br *bufio.Reader) served {
	b, err := io.ReadAll(body)
	s.body = string(b)
	if err != nil {
		s.bodyErr = err.Error()
	}
	// What follows the body: the next request, or what a broken body left. A body that failed for good (a broken
	// trailer) leaves nothing that may be read as a request, and what is left of it depends on how far each read.
	if rest, _ := io.ReadAll(br); err == nil {
		s.rest = string(rest)
	}
	return s
}

// sameRequest holds this server's reading of raw to net/http's, raw coming cut into pieces by cut (called once for
// each): the same status (and reason) for a refused request; for one accepted, the same request (every field a
// handler sees but its context and remote address), the same body and body error, the same trailer after it, and the
// same bytes left after it on the connection.
func sameRequest(t *testing.T, raw []byte, how string, cut func() io.Reader) {
	t.Helper()
	want, got := netHTTP(raw, cut()), ours(cut())
	if want.status != got.status || want.reason != got.reason {
		t.Fatalf("%.300q (%s): status %d %q, net/http %d %q", raw, how, got.status, got.reason, want.status, want.reason)
	}
	if want.req == nil {
		return
	}
	w, g := want.req, got.req
	fields := []struct {
		name      string
		want, got any
	}{
		{"Method", w.Method, g.Method},
		{"RequestURI", w.RequestURI, g.RequestURI},
		{"URL", *w.URL, *g.URL},
		{"Proto", fmt.Sprint(w.Proto, w.ProtoMajor, w.ProtoMinor), fmt.Sprint(g.Proto, g.ProtoMajor, g.ProtoMinor)},
		{"Header", w.Header, g.Header},
		{"Host", w.Host, g.Host},
		{"ContentLength", w.ContentLength, g.ContentLength},
		{"TransferEncoding", w.TransferEncoding, g.TransferEncoding},
		{"Close", w.Close, g.Close},
		{"Trailer", w.Trailer, g.Trailer},
		{"no body", w.Body == http.NoBody, g.Body == http.NoBody},
		{"body", want.body, got.body},
		{"body error", want.bodyErr, got.bodyErr},
		{"left", want.rest, got.rest},
	}
	for _, f := range fields {
		if !reflect.DeepEqual(f.want, f.got) {
			t.Fatalf("%.300q (%s): %s %#v, net/http %#v", raw, how, f.name, f.got, f.want)
		}
	}
}

// readSeeds are requests for the function-level comparison, beyond the differential cases (requests): what
// net/textproto and http.ReadRequest accept or refuse at the edges.
var readSeeds = []string{
	"POST /api/v1/chat/completions HTTP/1.1\r\nHost: gateway.internal:8080\r\nAccept: application/json\r\n" +
		"Authorization: Bearer sk-1\r\ncontent-type: application/json\r\nuser-agent: OpenAI/JS 4.104.0\r\n" +
		"X-Stainless-Lang: js\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
	"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nA: 2\r\na: 3\r\nB:\r\nC: \t \r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: one\r\n two\r\n\tthree \t\r\nB: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA:\r\n folded\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: one\r\n   \r\n\r\n",
	"GET / HTTP/1.1\r\n\tHost: x\r\n\r\n",
	"GET / HTTP/1.1\nHost: x\nA: 1\n\nrest",
	"GET / HTTP/1.1\r\nHost: x\nA: 1\r\n\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: a\rb\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\n\r\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: caf\xc3\xa9 \x80\xff\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nCaf\xc3\xa9: 1\r\n\r\n",
	"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: caf\xc3\xa9\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA\x00: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: \x01\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\n: empty name\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA b: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nA b: 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA(b): 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nB:c:d\r\n\r\n",
	"GET / HTTP/1.1\r\nhOsT: x\r\nx-REQUEST-id: 1\r\n-x-: 2\r\n!#$%&'*+.^`|~: 3\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\nCache-Control: max-age=1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nPragma: no-cache, x\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.0\r\nHost: x\r\n\r\n",
	"GET / HTTP/0.0\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
	"GET / HTTP/0.9\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
	"GET / HTTP/0.0\r\nHost: x\r\nContent-Length: x\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET http://user:pw@h:80/p/q?r=1#f HTTP/1.1\r\nHost: other\r\n\r\n",
	"GET HTTP://H/ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET //x/y HTTP/1.1\r\nHost: x\r\n\r\n",
	"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",
	"CONNECT /rpc HTTP/1.1\r\nHost: h\r\n\r\n",
	"CONNECT h:bad:x HTTP/1.1\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a%20b/%2F?q=%zz&x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a!b(c)*'d HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /~u/a-b_c.d;p=1,2:3@h$&+ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a/../b HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /%2e%2e/%00/x%2fy HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://a@b@c/ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://h?x HTTP/1.1\r\nHost: x\r\n\r\n",
	"CONNECT h:443 HTTP/1.1\r\nHost: other\r\n\r\n",
	"GET /a?? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a?b? HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a?b=\xff\x80 HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a?b=\x7f HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET  HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: x\r\n\r\n",
	"GET / http/1.1\r\nHost: x\r\n\r\n",
	"G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
	" GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x:99999\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: \r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length:  3 \r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\nabcdefg",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1_0\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: a, b ,\r\n\r\n" +
		"1\r\nx\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\nnext",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: content-length\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: ,\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: a, trailer\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n \r\nContent-Length: 3\r\n\r\nabc",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA 1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\n\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: " + strings.Repeat("a", 5000) + "\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: A\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nTrailer: A\r\nContent-Length: 1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\nx",
	"POST / HTTP/1.1\r\nHost: x\r\nExpect: \r\nContent-Length: 1\r\n\r\nx",
	"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("A", 5000) + ": 1\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: " + strings.Repeat("v", 9000) + "\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Filler: f\r\n", 1200) + "\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n" + strings.Repeat(" b\r\n", 3000) + "\r\n",
	"GET / HTTP/1.1\r\nHost: x\r\n",
	// Lines a read buffer's worth long (or two), cut: bufio.Reader.ReadLine returns them in full pieces, and
	// textproto drops a line whose last piece the cut ended (dropCutLine).
	strings.Repeat("A", 4096),
	strings.Repeat("A", 4095) + "\r" + strings.Repeat("A", 4096),
	strings.Repeat("A", 4095) + "\r",
	"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("A", 8189),
	"GET / HTTP/1.1\r\nHost: x\r\nX: 1\r\n " + strings.Repeat("\x01", 4095),
	"GET / HTTP/1.1\r\nHost: x\r\nX: 1\r\n\t " + strings.Repeat("\x01", 4096),
	"GET / HTTP/1.1\r\nHost: x\r\nX: 1\r\n \t ",
	"GET / HTTP/1.1\r\n " + strings.Repeat("a", 4095),
	"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n  ",
	"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r",
	"GET / HTTP/1.1\r\nHost: x\r\nA 1",
	"GET / HTTP/1.1\r",
	"GET / HTTP/1.1",
	"\r\n",
	"\n\n",
}

// readCases are the requests both comparisons start from: the server-level differential cases and readSeeds.
func readCases() []string {
	return append(append([]string(nil), requests...), readSeeds...)
}

// TestReadRequestMatchesNetHTTP reads every case in one piece, a few bytes at a time, cut in two at every byte (the
// head split across two reads of the connection, anywhere in it), and cut there by a read that times out, as
// http.ReadRequest reads it (sameRequest).
func TestReadRequestMatchesNetHTTP(t *testing.T) {
	t.Parallel()
	for _, raw := range readCases() {
		b := []byte(raw)
		for _, step := range []int{0, 1, 7} {
			if step == 1 && len(b) > 64<<10 {
				continue
			}
			sameRequest(t, b, fmt.Sprintf("step %d", step), func() io.Reader { return cutEvery(b, step) })
		}
		if len(b) > 8<<10 {
			continue
		}
		for at := 1; at < len(b); at++ {
			sameRequest(t, b, fmt.Sprintf("cut at %d", at), func() io.Reader {
				return &pieces{[][]byte{b[:at:at], b[at:]}}
			})
		}
		// A read that times out (a caller that stalls) after a first piece, not the end of the connection.
		for at := 1; at <= len(b); at++ {
			sameRequest(t, b[:at], "then a timeout", func() io.Reader { return timesOut{&pieces{[][]byte{b[:at:at]}}} })
		}
	}
}

// timesOut reads r and then fails with a timeout, as a connection's read whose deadline passed.
type timesOut struct{ r io.Reader }

func (t timesOut) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		err = os.ErrDeadlineExceeded
	}
	return n, err
}

// TestHeadPastBound: a head past the bound is a 431, but for one with a malformed line well before it (net/http
// finds it before it reads that far), a 400.
func TestHeadPastBound(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", headLimit)
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\nX: " + long + "\r\n\r\n",
		"GET /" + long + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nno colon\r\nX: " + long + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: 1\r\n", headLimit/6+1) + "\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: 1\r\n", headLimit/6-2000) + "X\x01: 1\r\n" + long,
	} {
		for _, step := range []int{0, 1000} {
			sameRequest(t, []byte(raw), fmt.Sprintf("step %d", step), func() io.Reader { return cutEvery([]byte(raw), step) })
		}
	}
}

// FuzzReadRequest: whatever the bytes, and however they come (and end: with the connection, or a read that times
// out), this server reads a request as http.ReadRequest does and refuses what net/http's server refuses
// (sameRequest). Its seeds run in every go test.
func FuzzReadRequest(f *testing.F) {
	for _, raw := range readCases() {
		if len(raw) <= 16<<10 {
			for _, step := range []uint8{0, 1, 7} {
				f.Add([]byte(raw), step)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, step uint8) {
		sameRequest(t, raw, fmt.Sprintf("step %d", step), func() io.Reader { return cutEvery(raw, int(step)) })
		sameRequest(t, raw, fmt.Sprintf("step %d, then a timeout", step), func() io.Reader {
			return timesOut{cutEvery(raw, int(step))}
		})
	})
}

// sdkHead is a chat call's head as the OpenAI JavaScript SDK sends one.
const sdkHead = "POST /api/v1/chat/completions HTTP/1.1\r\nHost: gateway.internal:8080\r\n" +
	"Accept: application/json\r\n" +
	"Authorization: Bearer sk-sb-v1-0123456789abcdef0123456789abcdef0123456789abcdef\r\n" +
	"Content-Type: application/json\r\nUser-Agent: OpenAI/JS 4.104.0\r\nX-Stainless-Lang: js\r\n" +
	"X-Stainless-Package-Version: 4.104.0\r\nX-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\n" +
	"X-Stainless-Runtime: node\r\nX-Stainless-Runtime-Version: v22.11.0\r\nX-Stainless-Retry-Count: 0\r\n" +
	"Accept-Encoding: gzip,deflate\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"

// BenchmarkReadHead reads an SDK's head with readHead, and with http.ReadRequest and the checks of every field the
// server then made, as it did before (but for its scan of the head for Host fields).
func BenchmarkReadHead(b *testing.B) {
	raw := []byte(sdkHead)
	b.Run("readHead", func(b *testing.B) {
		r := bytes.NewReader(raw)
		c := &conn{rwc: pipeConn{r: r}}
		c.r = connReader{c: c}
		c.br = bufio.NewReaderSize(&c.r, 4<<10)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(raw)
			c.r.remain = headLimit
			c.br.Reset(&c.r)
			_, _ = c.br.Peek(1)
			if rej := c.readHead(&response{c: c}); rej != nil {
				b.Fatal(rej)
			}
		}
	})
	b.Run("http.ReadRequest", func(b *testing.B) {
		r := bytes.NewReader(raw)
		br := bufio.NewReaderSize(r, 4<<10)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(raw)
			br.Reset(r)
			req, err := http.ReadRequest(br)
			if err != nil {
				b.Fatal(err)
			}
			for k, vv := range req.Header {
				if !httpguts.ValidHeaderFieldName(k) {
					b.Fatal(k)
				}
				for _, v := range vv {
					if !httpguts.ValidHeaderFieldValue(v) {
						b.Fatal(v)
					}
				}
			}
		}
	})
}

// TestGatheredHeadNotKept: a connection waiting for its next request keeps nothing of a head it gathered (one that
// came in pieces), measured on the heap with many connections.
func TestGatheredHeadNotKept(t *testing.T) {
	head := []byte("GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Filler: f\r\n", 2500) + "\r\n")
	const conns = 200
	kept := make([]*conn, conns)
	before := heapInUse()
	for i := range kept {
		c := &conn{rwc: pipeConn{r: cutEvery(head, 1000)}}
		c.r = connReader{c: c, remain: headLimit}
		c.br = bufio.NewReaderSize(&c.r, 4<<10)
		if rej := c.readHead(&response{c: c}); rej != nil {
			t.Fatalf("refused: %d", rej.status)
		}
		kept[i] = c
	}
	perConn := (int64(heapInUse()) - int64(before)) / conns
	runtime.KeepAlive(kept)
	// A connection's read buffer (4 KiB) and its own struct; the head is 32 KiB.
	if perConn > 8<<10 {
		t.Errorf("a connection keeps %d bytes after a head of %d", perConn, len(head))
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestKeptValueKeepsNoHead: a header value kept past its request (a request id in a generation record waiting in
// the spool) keeps only itself, not the head it came in, when that head is large; a small head's strings share one.
func TestKeptValueKeepsNoHead(t *testing.T) {
	head := []byte("POST / HTTP/1.1\r\nHost: x\r\nX-Request-Id: req-1\r\nX: " + strings.Repeat("v", 200<<10) + "\r\n\r\n")
	const requests = 50
	kept := make([]string, 0, requests)
	before := heapInUse()
	for range requests {
		var u url.URL
		var req http.Request
		if _, err := parseRequest(head, &u, &req); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, req.Header.Get("X-Request-Id"))
	}
	if perRequest := (int64(heapInUse()) - int64(before)) / requests; perRequest > 4<<10 {
		t.Errorf("a kept request id keeps %d bytes of a head of %d", perRequest, len(head))
	}
	runtime.KeepAlive(kept)
}
