package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// errStalled is what a test connection returns where a real one would wait for the upstream.
var errStalled = errors.New("the read would wait for the upstream")

// script is a connection's read side: what the upstream sent, in one piece, then nothing more.
type script struct {
	data    string
	stalled bool // a read found nothing more: a connection would have waited
}

func (s *script) Read(p []byte) (int, error) {
	if s.data == "" {
		s.stalled = true
		return 0, errStalled
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

func (s *script) Write(p []byte) (int, error) { return len(p), nil }

// scripted reads a response from raw as the transport reads it from a connection, without a network.
func scripted(t testing.TB, raw, method string, eof bool) (*http.Response, *body, error) {
	var rw io.ReadWriter = &script{data: raw}
	if eof {
		rw = struct {
			io.Reader
			io.Writer
		}{strings.NewReader(raw), io.Discard}
	}
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return readFrom(rw, a, method)
}

// readFrom reads a response as the transport does from a connection that reads from rw and closes tcp.
func readFrom(rw io.ReadWriter, tcp net.Conn, method string) (*http.Response, *body, error) {
	c := &conn{tcp: tcp, rw: rw, limit: math.MaxInt64}
	c.br = bufio.NewReaderSize(c, readBufferSize)
	req := httptest.NewRequest(method, "http://upstream/", nil)
	resp, reuse, err := c.read(req, method)
	if err != nil {
		return nil, nil, err
	}
	bd, _ := resp.Body.(*body)
	if bd != nil {
		bd.t, bd.ctx, bd.stop, bd.reuse = newH1Transport(nil), context.Background(), afterFunc(func() bool { return true }), reuse
	}
	return resp, bd, nil
}

// TestH1Framing: responses as upstreams send them, well and badly framed, read to their end.
func TestH1Framing(t *testing.T) {
	t.Parallel()
	huge := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("f", 90)+"\r\n", 11_000) + "\r\n"
	tests := []struct {
		name, raw, method string
		status            int
		length            int64
		body              string
		reuse             bool
		err               string // in the head or the body
	}{
		{name: "content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
			status: 200, length: 5, body: "hello", reuse: true},
		{name: "equal content-lengths", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length:  2\r\n\r\nok",
			status: 200, length: 2, body: "ok", reuse: true},
		{name: "empty", raw: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, reuse: true},
		{name: "chunked with extensions and a trailer",
			raw:    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n3;a=b\r\nabc\r\nA \r\n0123456789\r\n0\r\nX-Trailer: 1\r\nX-Other: 2\r\n\r\n",
			status: 200, length: -1, body: "abc0123456789", reuse: true},
		{name: "chunked, case aside", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			status: 200, length: -1, body: "ok", reuse: true},
		{name: "until close", raw: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, length: -1, body: "all of it"},
		{name: "connection close", raw: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
			status: 200, length: 2, body: "ok"},
		{name: "http/1.0", raw: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, length: 2, body: "ok"},
		{name: "http/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
			status: 200, length: 2, body: "ok", reuse: true},
		{name: "1xx before the answer",
			raw:    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
			status: 201, length: 2, body: "ok", reuse: true},
		{name: "head", method: http.MethodHead, raw: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
			status: 200, length: 1000, reuse: true},
		{name: "204", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", status: 204, reuse: true},
		{name: "304", raw: "HTTP/1.1 304 Not Modified\r\n\r\n", status: 304, reuse: true},
		{name: "no reason phrase", raw: "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", status: 404, reuse: true},

		{name: "truncated length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", err: "unexpected EOF"},
		{name: "truncated chunk", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", err: "unexpected EOF"},
		{name: "truncated before the last chunk", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
			err: "unexpected EOF"},
		{name: "truncated trailer", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", err: "unexpected EOF"},
		{name: "truncated head", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", err: "unexpected EOF"},
		{name: "truncated header line", raw: "HTTP/1.1 200 OK\r\nContent-Le", err: "malformed MIME header"},
		{name: "nothing", raw: "", err: "unexpected EOF"},
		{name: "garbage status line", raw: "SSH-2.0-OpenSSH_9.6\r\n\r\n", err: "malformed HTTP status line"},
		{name: "status of two digits", raw: "HTTP/1.1 20 OK\r\n\r\n", err: "malformed HTTP status line"},
		{name: "status below 100", raw: "HTTP/1.1 099 Hm\r\n\r\n", err: "malformed HTTP status line"},
		{name: "http/2 status line", raw: "HTTP/2.0 200 OK\r\n\r\n", err: "malformed HTTP status line"},
		{name: "101", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", err: "switched protocols"},
		{name: "malformed header", raw: "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", err: "malformed MIME header"},
		{name: "huge headers", raw: huge, err: errTooLarge.Error()},
		{name: "conflicting content-lengths", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
			err: "conflicting Content-Length"},
		{name: "negative content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: "bad Content-Length"},
		{name: "content-length past int64", raw: "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
			err: "bad Content-Length"},
		{name: "gzip transfer-encoding", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: "is not chunked"},
		{name: "chunked spelt with a Kelvin sign", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\nContent-Length: 2\r\n\r\nok",
			err: "is not chunked"},
		{name: "chunk size overflow", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n",
			err: "chunk size"},
		{name: "chunk size not hexadecimal", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n",
			err: "chunk size"},
		{name: "chunk size line too long", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" +
			strings.Repeat("e", readBufferSize) + "\r\n", err: "too long"},
		{name: "chunk extensions as padding", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 20) + "0\r\n\r\n", err: "too much non-data"},
		{name: "chunk extensions in proportion to the data", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strings.Repeat("400;"+strings.Repeat("e", 1000)+"\r\n"+strings.Repeat("d", 1024)+"\r\n", 40) + "0\r\n\r\n",
			status: 200, length: -1, body: strings.Repeat("d", 40*1024), reuse: true},
		{name: "one byte a chunk", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strings.Repeat("1\r\nx\r\n", 20_000) + "0\r\n\r\n", status: 200, length: -1, body: strings.Repeat("x", 20_000), reuse: true},
		{name: "chunk without its CRLF", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
			err: "does not end with CRLF"},
		{name: "huge trailer", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: " +
			strings.Repeat("t", maxHeaderBytes) + "\r\n\r\n", err: errTooLarge.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			resp, b, err := scripted(t, tt.raw, method, true)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(resp.Body)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || resp.ContentLength != tt.length || string(got) != tt.body {
				t.Fatalf("%d, length %d, body %q; want %d, %d, %q", resp.StatusCode, resp.ContentLength, got, tt.status, tt.length, tt.body)
			}
			if reuse := b == nil && !resp.Close || b != nil && b.reuse; reuse != tt.reuse {
				t.Errorf("reuse %v, want %v", reuse, tt.reuse)
			}
			if resp.Header.Get("Transfer-Encoding") != "" || resp.Header.Get("Content-Length") != "" && resp.TransferEncoding != nil {
				t.Errorf("framing headers left for the caller: %v", resp.Header)
			}
		})
	}
}

// TestH1ReadReturnsWhatIsBuffered: a Read returns every chunk already buffered and does not wait for the next
// once it has something; within a chunk it reads on (the upstream sent the chunk whole). At the last chunk the
// body ends in the same Read.
func TestH1ReadReturnsWhatIsBuffered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, chunks, want string
		err                error
		waits              bool // the Read asks the connection for the rest of a chunk
	}{
		{"chunks then a wait", "3\r\nabc\r\n4\r\ndefg\r\n1\r\nh\r\n", "abcdefgh", nil, false},
		{"part of a chunk", "3\r\nabc\r\n9\r\ndef", "abcdef", nil, true},
		{"up to a chunk's CRLF", "3\r\nabc\r\n2\r\nde", "abcde", nil, false},
		{"up to a size line", "3\r\nabc\r\n2", "abc", nil, false},
		{"the last chunk", "3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n", "abcd", io.EOF, false},
		{"up to the trailer", "3\r\nabc\r\n0\r\nX-T: 1\r\n", "abc", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := &script{data: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + tt.chunks}
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			resp, bd, err := readFrom(up, a, http.MethodGet)
			if err != nil {
				t.Fatal(err)
			}
			p := make([]byte, 100)
			n, err := resp.Body.Read(p)
			if string(p[:n]) != tt.want || err != tt.err || up.stalled != tt.waits {
				t.Fatalf("Read: %q %v, waited %v; want %q %v, %v", p[:n], err, up.stalled, tt.want, tt.err, tt.waits)
			}
			if done := bd.state.Load() == bodyFinished; done != (tt.err == io.EOF || tt.waits) {
				t.Errorf("finished %v after the read", done)
			}
			if tt.err == nil && !tt.waits {
				if _, err := resp.Body.Read(p); !errors.Is(err, errStalled) {
					t.Errorf("next Read: %v, want it to wait for the upstream", err)
				}
			}
		})
	}
}

// rawServer answers each connection with serve, for upstreams that do what net/http's server would not.
type rawServer struct {
	url     string
	accepts atomic.Int32
}

func newRawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + ln.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// readRequest reads one request and its body; false when the connection ended.
func readRequest(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return req, err == nil
}

// countingServer is an httptest server that counts the connections its clients opened.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	srv := httptest.NewUnstartedServer(h)
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func get(t *testing.T, rt http.RoundTripper, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestH1Reuse: a connection serves call after call while both sides let it, and answers come whole.
func TestH1Reuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, body string
		h                  http.HandlerFunc
		conns              int32
	}{
		{"content-length", http.MethodGet, "hello", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}, 1},
		{"chunked in many flushes with a trailer", http.MethodPost, strings.Repeat("0123456789", 50), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			for range 50 {
				io.WriteString(w, "0123456789")
				w.(http.Flusher).Flush()
			}
			w.Header().Set("X-Sum", "500")
		}, 1},
		{"head", http.MethodHead, "", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "5")
		}, 1},
		{"204", http.MethodDelete, "", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, 1},
		{"connection close", http.MethodGet, "bye", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, conns := countingServer(t, tt.h)
			rt := newH1Transport(nil)
			defer rt.CloseIdleConnections()
			for range 3 {
				resp, body := get(t, rt, tt.method, srv.URL+"/x?y=1")
				if body != tt.body || resp.Proto != "HTTP/1.1" || resp.Request == nil {
					t.Fatalf("%s %q, want %q", resp.Proto, body, tt.body)
				}
			}
			if n := conns.Load(); n != tt.conns {
				t.Fatalf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

// TestH1RequestOnTheWire: what the transport writes is what net/http would, but Accept-Encoding.
func TestH1RequestOnTheWire(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 4)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, ok := readRequest(br)
			if !ok {
				return
			}
			got <- req
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	send := func(method, body string, header http.Header) *http.Request {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.url+"/v1/a%20b?q=1", rd)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-got
	}
	r := send(http.MethodPost, `{"a":1}`, http.Header{"Authorization": {"Bearer k"}, "X-Two": {"1", " 2 "}})
	if r.RequestURI != "/v1/a%20b?q=1" || r.Host != strings.TrimPrefix(srv.url, "http://") || r.ContentLength != 7 ||
		r.UserAgent() != "Go-http-client/1.1" || r.Header.Get("Authorization") != "Bearer k" ||
		strings.Join(r.Header["X-Two"], ",") != "1,2" || r.Header.Get("Accept-Encoding") != "" || r.ProtoMinor != 1 {
		t.Errorf("POST arrived as %s %s %s, header %v", r.Method, r.RequestURI, r.Proto, r.Header)
	}
	if r := send(http.MethodPost, "", http.Header{"User-Agent": {"switchboard"}}); r.Header.Get("Content-Length") != "0" ||
		r.UserAgent() != "switchboard" {
		t.Errorf("POST without a body: %v", r.Header)
	}
	if r := send(http.MethodGet, "", http.Header{"User-Agent": {""}}); r.Header["Content-Length"] != nil || r.Header["User-Agent"] != nil {
		t.Errorf("GET: %v", r.Header)
	}
	if n := srv.accepts.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestH1RefusesMalformedRequests: a request net/http would refuse to write is an error, and nothing is sent.
func TestH1RefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, func(net.Conn, *bufio.Reader) {})
	rt := newH1Transport(nil)
	tests := []struct {
		name string
		edit func(*http.Request)
	}{
		{"header value with CRLF", func(r *http.Request) { r.Header.Set("X-A", "v\r\nX-Injected: 1") }},
		{"header value with NUL", func(r *http.Request) { r.Header.Set("X-A", "v\x00") }},
		{"header name with a space", func(r *http.Request) { r.Header["X A"] = []string{"v"} }},
		{"empty header name", func(r *http.Request) { r.Header[""] = []string{"v"} }},
		{"host with CRLF", func(r *http.Request) { r.Host = "a\r\nb" }},
		{"method with a space", func(r *http.Request) { r.Method = "GET /x" }},
		{"no host", func(r *http.Request) { r.URL.Host = "" }},
		{"content-length longer than the body", func(r *http.Request) { r.ContentLength = 10 }},
		{"content-length shorter than the body", func(r *http.Request) { r.ContentLength = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url, strings.NewReader("body"))
			tt.edit(req)
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
				t.Fatal("no error")
			}
		})
	}
	// The bodies' lengths are found out while writing, on a connection then closed unflushed.
	if n := srv.accepts.Load(); n > 2 {
		t.Errorf("%d connections for requests refused before any was needed", n)
	}
}

// TestH1ServerClosedIdle: an idle connection the upstream closed is found closed before it is used, and the call
// goes on a new one.
func TestH1ServerClosedIdle(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 4)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		c.Close()
		closed <- struct{}{}
	})
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	for i := range 3 {
		if _, body := get(t, rt, http.MethodPost, srv.url); body != "ok" {
			t.Fatalf("call %d: %q", i, body)
		}
		<-closed
	}
	if n := srv.accepts.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// TestH1RetriesWhatMayGoTwice: an upstream that closes a pooled connection as the next request comes (the race
// alive cannot see) gets an idempotent request again on a new connection; anything else fails, as with net/http.
func TestH1RetriesWhatMayGoTwice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method string
		header       http.Header
		body         string
		ok           bool
	}{
		{"GET", http.MethodGet, nil, "", true},
		{"HEAD", http.MethodHead, nil, "", true},
		{"POST with an idempotency key", http.MethodPost, http.Header{"Idempotency-Key": {"k1"}}, "", true},
		{"POST", http.MethodPost, nil, "{}", false},
		{"POST with a key and a body", http.MethodPost, http.Header{"Idempotency-Key": {"k1"}}, "{}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Each connection answers its first request and drops its second unanswered.
			srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				if req, ok := readRequest(br); ok {
					answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
					if req.Method == http.MethodHead {
						answer = strings.TrimSuffix(answer, "ok")
					}
					io.WriteString(c, answer)
					readRequest(br)
				}
			})
			rt := newH1Transport(nil)
			defer rt.CloseIdleConnections()
			for i := range 2 {
				req, _ := http.NewRequestWithContext(t.Context(), tt.method, srv.url, strings.NewReader(tt.body))
				for k, v := range tt.header {
					req.Header[k] = v
				}
				resp, err := rt.RoundTrip(req)
				if i == 1 && !tt.ok {
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("second call: %v, want io.ErrUnexpectedEOF", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if n := srv.accepts.Load(); n != 2 {
				t.Fatalf("%d connections, want 2", n)
			}
		})
	}
}

// stallingServer is an upstream that reads a request, writes answer and then nothing until the client closes;
// waiting is closed once answer is written.
func stallingServer(t *testing.T, answer string) (srv *rawServer, waiting chan struct{}) {
	waiting = make(chan struct{})
	srv = newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, answer)
		close(waiting)
		br.ReadByte() // until the client closes
	})
	return srv, waiting
}

// TestH1Cancel: the request's context ends the exchange at once, wherever it is, with the context's error.
func TestH1Cancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer string // what the upstream writes before it stops
		body   bool   // whether the cancel comes while reading the body
	}{
		{"waiting for the head", "", false},
		{"in the middle of the head", "HTTP/1.1 200 OK\r\nContent-Ty", false},
		{"in a chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", true},
		{"in a body with a length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", true},
	}
	// Through Do the request goes with the call's context, which closes the connection itself (closeOnEnd).
	through := map[string]func(rt *h1Transport, req *http.Request) (*http.Response, error){
		"transport": func(rt *h1Transport, req *http.Request) (*http.Response, error) { return rt.RoundTrip(req) },
		"Do": func(rt *h1Transport, req *http.Request) (*http.Response, error) {
			return Do(req.Context(), &http.Client{Transport: rt}, req, Config{Timeout: time.Minute})
		},
	}
	for _, tt := range tests {
		for way, roundTrip := range through {
			t.Run(tt.name+" through "+way, func(t *testing.T) {
				t.Parallel()
				srv, waiting := stallingServer(t, tt.answer)
				rt := newH1Transport(nil)
				ctx, cancel := context.WithCancel(t.Context())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url, strings.NewReader("{}"))
				done := make(chan error, 1)
				go func() {
					resp, err := roundTrip(rt, req)
					if err == nil {
						if !tt.body {
							err = errors.New("a response")
						} else {
							var p [100]byte
							n, _ := resp.Body.Read(p[:])
							if string(p[:n]) != "hello" {
								err = fmt.Errorf("read %q", p[:n])
							} else {
								cancel()
								_, err = io.ReadAll(resp.Body)
							}
						}
					}
					done <- err
				}()
				<-waiting
				if !tt.body {
					cancel()
				}
				select {
				case err := <-done:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("err %v, want context.Canceled", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("still waiting 10 s after the cancel")
				}
			})
		}
	}
}

// TestH1StreamsAsItComes: a chunk is read when it comes, not when the next one does.
func TestH1StreamsAsItComes(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
		<-next
		io.WriteString(c, "6\r\nsecond\r\n0\r\n\r\n")
	})
	rt := newH1Transport(nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := make([]byte, 100)
	read := make(chan string, 1)
	go func() {
		n, _ := resp.Body.Read(p)
		read <- string(p[:n])
	}()
	select {
	case got := <-read:
		if got != "first" {
			t.Fatalf("first Read %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first chunk is not read before the second comes")
	}
	close(next)
	if rest, err := io.ReadAll(resp.Body); string(rest) != "second" || err != nil {
		t.Fatalf("rest %q %v", rest, err)
	}
}

// TestH1TLS: HTTPS upstreams are spoken to in HTTP/1.1 over TLS, one connection for sequential calls.
func TestH1TLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %v", r.Proto, r.TLS != nil)
	}))
	srv.EnableHTTP2 = true
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	rt := newH1Transport(srv.Client().Transport.(*http.Transport).TLSClientConfig)
	defer rt.CloseIdleConnections()
	for range 3 {
		resp, body := get(t, rt, http.MethodGet, srv.URL)
		if body != "HTTP/1.1 true" || resp.TLS == nil || !resp.TLS.HandshakeComplete {
			t.Fatalf("%q, TLS %v", body, resp.TLS)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if _, err := newH1Transport(nil).RoundTrip(req); err == nil {
		t.Fatal("a server the system's roots do not know was trusted")
	}
}

// TestH1Fallback: what the lean path does not do goes through net/http's transport.
func TestH1Fallback(t *testing.T) {
	t.Parallel()
	proxied := make(chan string, 1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied <- r.URL.String()
		io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	rt := newH1Transport(nil)
	proxyURL, _ := url.Parse(proxy.URL)
	rt.proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "upstream.example" {
			return proxyURL, nil
		}
		return nil, nil
	}
	rt.fallback.Proxy = rt.proxy
	if _, body := get(t, rt, http.MethodGet, "http://upstream.example/v1"); body != "via proxy" || <-proxied != "http://upstream.example/v1" {
		t.Fatalf("proxied call: %q", body)
	}

	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%v %s", r.TransferEncoding, b)
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, io.MultiReader(strings.NewReader("unknown length")))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "[chunked] unknown length" || conns.Load() != 1 {
		t.Fatalf("body of unknown length: %q", b)
	}
}

// TestH1Concurrent: calls in parallel each get their own connection and their own answer.
func TestH1Concurrent(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := len(r.URL.Query().Get("n"))
		for i := range n {
			fmt.Fprintf(w, "%s-%d|", r.URL.Query().Get("n"), i)
			if i%7 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	})
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				n := strings.Repeat("x", 1+(g*20+i)%40)
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"?n="+n, strings.NewReader(n))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				var want strings.Builder
				for j := range len(n) {
					fmt.Fprintf(&want, "%s-%d|", n, j)
				}
				if err != nil || string(b) != want.String() {
					t.Errorf("call %d/%d: %.40q %v", g, i, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n > 16 {
		t.Errorf("%d connections for 16 callers", n)
	}
}

// TestH1CloseWhileReading: Close from another goroutine unblocks a Read waiting for the upstream.
func TestH1CloseWhileReading(t *testing.T) {
	t.Parallel()
	up := &waiting{data: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", reading: make(chan struct{}), closed: make(chan struct{})}
	resp, _, err := readFrom(up, closer{closed: up.closed}, http.MethodGet)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	if n, err := resp.Body.Read(p); string(p[:n]) != "hello" || err != nil {
		t.Fatalf("first Read %q %v", p[:n], err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(p)
		done <- err
	}()
	<-up.reading
	resp.Body.Close()
	select {
	case err := <-done:
		if err != errClosedBody {
			t.Fatalf("Read: %v, want %v", err, errClosedBody)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waiting 10 s after Close")
	}
}

// waiting is a connection's read side that sends data, then waits until the connection is closed.
type waiting struct {
	data            string
	reading, closed chan struct{}
}

func (w *waiting) Read(p []byte) (int, error) {
	if w.data != "" {
		n := copy(p, w.data)
		w.data = w.data[n:]
		return n, nil
	}
	close(w.reading)
	<-w.closed
	return 0, net.ErrClosed
}

func (w *waiting) Write(p []byte) (int, error) { return len(p), nil }

// closer is a connection whose Close is all that is used.
type closer struct {
	net.Conn
	closed chan struct{}
}

func (c closer) Close() error {
	close(c.closed)
	return nil
}

// TestH1CloseBeforeTheEnd: a body closed before its end closes its connection, which no other call then gets.
func TestH1CloseBeforeTheEnd(t *testing.T) {
	t.Parallel()
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 100_000))
	})
	rt := newH1Transport(nil)
	defer rt.CloseIdleConnections()
	for range 2 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		var p [10]byte
		resp.Body.Read(p[:])
		resp.Body.Close()
		if _, err := resp.Body.Read(p[:]); err == nil {
			t.Fatal("Read after Close")
		}
	}
	if _, body := get(t, rt, http.MethodGet, srv.URL); len(body) != 100_000 {
		t.Fatalf("%d bytes", len(body))
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// FuzzH1Response: no response makes the transport panic or read past what it was sent.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nrest",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("e", 9000) + "\r\nx\r\n1;" +
			strings.Repeat("e", 9000) + "\r\ny\r\n0\r\n\r\n",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, head bool) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		resp, _, err := scripted(t, raw, method, true)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(resp.Body)
		if len(b) > len(raw) {
			t.Fatalf("read %d bytes from %d", len(b), len(raw))
		}
	})
}

// TestH1UnderTheWatchdog: through Do, an upstream too slow for the first byte or idle mid-body is a timeout,
// and a caller who goes away gets the context's error, whichever part of the exchange was under way.
func TestH1UnderTheWatchdog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, answer string
		cancel       bool        // the caller goes away, and gets context.Canceled
		kind         domain.Kind // of the *ports.UpstreamError otherwise
	}{
		{"no answer", "", false, domain.KindTimeout},
		{"idle mid-body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", false, domain.KindTimeout},
		{"caller gone before the head", "", true, 0},
		{"caller gone mid-body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, waiting := stallingServer(t, tt.answer)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				go func() {
					<-waiting
					cancel()
				}()
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url, strings.NewReader("{}"))
			wait := 50 * time.Millisecond
			if tt.cancel {
				wait = time.Minute
			}
			resp, err := Do(req.Context(), NewHTTPClient(), req, Config{Timeout: wait, IdleTimeout: wait})
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			var ue *ports.UpstreamError
			switch {
			case tt.cancel && !errors.Is(err, context.Canceled):
				t.Fatalf("err %v, want context.Canceled", err)
			case !tt.cancel && (!errors.As(err, &ue) || ue.Kind != tt.kind):
				t.Fatalf("err %v, want an upstream error of kind %v", err, tt.kind)
			}
		})
	}
}

// countingScript is a script that counts the reads of the connection and what each asked for.
type countingScript struct {
	script
	reads []int
}

func (s *countingScript) Read(p []byte) (int, error) {
	s.reads = append(s.reads, len(p))
	return s.script.Read(p)
}

// TestH1ReadsOfTheConnection: a body the upstream sent whole with its head, a stream buffer's worth, comes in the
// head's read; the rest of a longer one, once what that read brought is taken, goes straight from the connection
// into the caller's buffer, a stream buffer's worth a read, not through the read buffer (larger by the head's room,
// which would leave a remainder for a Read, and a write downstream, of its own each time).
func TestH1ReadsOfTheConnection(t *testing.T) {
	t.Parallel()
	const head = "HTTP/1.1 200 OK\r\nContent-Type: audio/pcm\r\nX-Request-Id: req_1\r\nContent-Length: 65536\r\n\r\n"
	first := readBufferSize - len(head) // of the long body, with the head
	tests := []struct {
		name, raw string
		reads     []int // what each read of the connection asked for
		bodyReads []int // what each Read of the body returned
	}{
		{"a clip sent whole", "HTTP/1.1 200 OK\r\nContent-Length: 16384\r\n\r\n" + strings.Repeat("a", 16384),
			[]int{readBufferSize}, []int{16384}},
		{"a chunked clip sent whole", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4000\r\n" + strings.Repeat("a", 16384) + "\r\n0\r\n\r\n",
			[]int{readBufferSize}, []int{16384}},
		{"a long body", head + strings.Repeat("a", 65536), []int{readBufferSize, streamBufferSize, streamBufferSize, readBufferSize},
			[]int{streamBufferSize, first - streamBufferSize, streamBufferSize, streamBufferSize, 65536 - first - 2*streamBufferSize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := &countingScript{script: script{data: tt.raw}}
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			resp, _, err := readFrom(up, a, http.MethodGet)
			if err != nil {
				t.Fatal(err)
			}
			p := make([]byte, streamBufferSize)
			var got []int
			for err == nil {
				var n int
				n, err = resp.Body.Read(p)
				got = append(got, n)
			}
			if err != io.EOF || !slices.Equal(got, tt.bodyReads) || !slices.Equal(up.reads, tt.reads) {
				t.Errorf("body reads %v, %v; want %v, EOF; reads of the connection asked for %v, want %v", got, err, tt.bodyReads,
					up.reads, tt.reads)
			}
		})
	}
}
