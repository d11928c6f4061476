package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

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

// answering is an upstream that answers every request on a connection with raw, as it is.
func answering(t *testing.T, raw string) *rawServer {
	return newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			if _, err := io.WriteString(c, raw); err != nil {
				return
			}
		}
	})
}

// call makes a call through Do with the shared client and reads its answer to the end.
func call(ctx context.Context, client *http.Client, url string, cfg Config) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"m"}`))
	if err != nil {
		return nil, "", err
	}
	resp, err := Do(ctx, client, req, cfg)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

var patient = Config{Timeout: time.Minute, IdleTimeout: time.Minute}

// TestRefusesMalformedFraming: what net/http's client refuses of an upstream's framing is refused, as the
// provider's failure: chunk-size lines ended by a bare LF or by CR CR LF, or longer than any size (CVE-2025-22871,
// which a hand-written client accepted), an empty Content-Length, a malformed trailer line, a negative length.
// None of them reads as a whole answer.
func TestRefusesMalformedFraming(t *testing.T) {
	t.Parallel()
	const chunked = "HTTP/1.1 200 OK\r\nContent-Type: audio/pcm\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tt := range []struct{ name, raw string }{
		{"chunk size ended by a bare LF", chunked + "f8\n" + strings.Repeat("a", 0xf8) + "\r\n0\r\n\r\n"},
		{"chunk size ended by CR CR LF", chunked + "f8\r\r\n" + strings.Repeat("a", 0xf8) + "\r\n0\r\n\r\n"},
		{"a 20-digit chunk size", chunked + "00000000000000000005\r\nhello\r\n0\r\n\r\n"},
		{"a chunk size past 64 bits", chunked + "10000000000000000\r\nhello\r\n0\r\n\r\n"},
		{"the last chunk ended by a bare LF", chunked + "5\r\nhello\r\n0\n\r\n"},
		{"a junk trailer line", chunked + "5\r\nhello\r\n0\r\nnot a field\r\n\r\n"},
		{"an empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nhello"},
		{"a negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello"},
		{"two Content-Lengths that differ", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := answering(t, tt.raw)
			client := NewHTTPClient()
			defer client.CloseIdleConnections()
			resp, body, err := call(t.Context(), client, up.url, patient)
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindUpstream || !ue.Retryable {
				t.Fatalf("read %q (%v), err %v: want the provider's failure", body, resp != nil, err)
			}
		})
	}
}

// TestWellFramed: the framings upstreams send are read whole, on one connection reused call after call: a
// Content-Length, chunks with extensions and trailers, a body until the connection closes.
func TestWellFramed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, raw string
		conns     int32 // connections for three calls
	}{
		{"Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 1},
		{"chunked, with an extension and a trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nhel\r\n2\r\nlo\r\n0\r\nX-Trailer: t\r\n\r\n", 1},
		{"until the close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					if _, ok := readRequest(br); !ok {
						return
					}
					if _, err := io.WriteString(c, tt.raw); err != nil || strings.Contains(tt.raw, "close") {
						return
					}
				}
			})
			client := NewHTTPClient()
			defer client.CloseIdleConnections()
			for i := range 3 {
				if _, body, err := call(t.Context(), client, up.url, patient); err != nil || body != "hello" {
					t.Fatalf("call %d: %q %v", i, body, err)
				}
			}
			if n := up.accepts.Load(); n != tt.conns {
				t.Fatalf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

// TestRequestOnTheWire: a call's request asks for no encoding (bodies come as the upstream sends them), has its
// length, and goes over HTTP/1.1 to a plain upstream.
func TestRequestOnTheWire(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	up := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, ok := readRequest(br)
		if !ok {
			return
		}
		got <- req
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	client := NewHTTPClient()
	defer client.CloseIdleConnections()
	if _, _, err := call(t.Context(), client, up.url+"/v1/audio/speech", patient); err != nil {
		t.Fatal(err)
	}
	req := <-got
	if req.Proto != "HTTP/1.1" || req.Header["Accept-Encoding"] != nil || req.ContentLength != int64(len(`{"model":"m"}`)) ||
		req.URL.Path != "/v1/audio/speech" {
		t.Fatalf("%s %s, length %d, header %v", req.Proto, req.URL, req.ContentLength, req.Header)
	}
}

// TestHTTP2ToTLSUpstreams: a TLS upstream that offers HTTP/2 is spoken to in HTTP/2, every call in flight sharing
// one connection.
func TestHTTP2ToTLSUpstreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var arrived sync.WaitGroup
	const calls = 20
	arrived.Add(calls)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/hold" {
			arrived.Done()
			<-release // every call in flight at once
		}
		fmt.Fprintf(w, "%s", r.Proto)
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
	client := NewHTTPClient()
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	defer client.CloseIdleConnections()
	if _, body, err := call(t.Context(), client, srv.URL, patient); err != nil || body != "HTTP/2.0" { // the connection
		t.Fatalf("%q %v", body, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			resp, body, err := call(t.Context(), client, srv.URL+"/hold", patient)
			if err == nil && (resp.ProtoMajor != 2 || body != "HTTP/2.0") {
				err = fmt.Errorf("%s answered %q", resp.Proto, body)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// stallingServer answers each request with answer and then says nothing more until the client goes; waiting is
// closed once the answer is written.
func stallingServer(t *testing.T, answer string) (*rawServer, chan struct{}) {
	waiting := make(chan struct{})
	var once sync.Once
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); !ok {
			return
		}
		io.WriteString(c, answer)
		once.Do(func() { close(waiting) })
		br.ReadByte() // until the client closes
	})
	return srv, waiting
}

// TestUnderTheWatchdog: through Do, an upstream too slow for the first byte or idle mid-body is a timeout, and a
// caller who goes away gets the context's error, whichever part of the exchange was under way.
func TestUnderTheWatchdog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, answer string
		cancel       bool        // the caller goes away, and gets context.Canceled
		kind         domain.Kind // of the *ports.UpstreamError otherwise
	}{
		{"no answer", "", false, domain.KindTimeout},
		{"idle mid-body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", false, domain.KindTimeout},
		{"caller gone before the head", "", true, 0},
		{"caller gone mid-head", "HTTP/1.1 200 OK\r\nContent-Ty", true, 0},
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
			wait := 50 * time.Millisecond
			if tt.cancel {
				wait = time.Minute
			}
			_, _, err := call(ctx, NewHTTPClient(), srv.url, Config{Timeout: wait, IdleTimeout: wait})
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

// TestDoWithoutATimeout: a Config whose Timeout is 0 puts no bound on the wait for the first byte; the idle
// timeout still bounds the wait between reads once bytes came.
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

// TestIdleTimeoutShorterThanTheFirstBytes: once bytes came, the idle timeout bounds the wait for the next, even when
// it is shorter than the timeout for the first: a stream that stalled after its first token waited for the
// first-byte timeout (an hour here) before it was timed out.
func TestIdleTimeoutShorterThanTheFirstBytes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		answer := make(chan struct{})
		close(answer)
		client := &http.Client{Transport: slowTransport{answer: answer}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://upstream/", nil)
		resp, err := Do(req.Context(), client, req, Config{Timeout: time.Hour, IdleTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p [8]byte
		if n, err := resp.Body.Read(p[:]); string(p[:n]) != "hello" || err != nil {
			t.Fatalf("first read %q, %v", p[:n], err)
		}
		start := time.Now()
		_, err = resp.Body.Read(p[:])
		var ue *ports.UpstreamError
		if !errors.As(err, &ue) || ue.Kind != domain.KindTimeout || time.Since(start) != time.Minute {
			t.Fatalf("idle read ended after %v with %v, want a timeout after the idle minute", time.Since(start), err)
		}
	})
}

// TestDoTransportFailures: a call that gets no answer (nothing listens, the upstream closes the connection, its
// head is malformed) is the provider's failure, retryable, with its cause kept for the record, not the caller's
// going away.
func TestDoTransportFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()
	closes := newRawServer(t, func(c net.Conn, br *bufio.Reader) { readRequest(br) })
	malformed := answering(t, "HTTP/1.1 200 OK\r\nno colon\r\n\r\n")
	tooLarge := answering(t, "HTTP/1.1 200 OK\r\nX-Long: "+strings.Repeat("l", maxHeaderBytes)+"\r\n\r\n")
	for _, tt := range []struct {
		name, url string
		cause     func(error) bool
	}{
		{"refused", refused, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
		{"closed", closes.url, func(err error) bool { return errors.Is(err, io.EOF) }},
		{"malformed head", malformed.url, func(err error) bool { return strings.Contains(err.Error(), "malformed MIME header") }},
		{"head past the bound", tooLarge.url, func(err error) bool { return strings.Contains(err.Error(), "headers exceeded") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := call(t.Context(), NewHTTPClient(), tt.url, patient)
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindUpstream || !ue.Retryable || !tt.cause(ue.Err) {
				t.Fatalf("err %v, want the provider's failure with its cause", err)
			}
		})
	}
}

// TestRedirectPolicy: the credentials go on only while every hop stays on the call's origin (scheme, host, port);
// once one leaves it, the rest go without them, back on the origin included; past maxRedirects the call stops.
// A query's other keys stay as written.
func TestRedirectPolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		hops []string // the call's URL, then each redirect's
		kept bool
	}{
		{"same origin", []string{"https://api.example/v1/a", "https://api.example/v1/b"}, true},
		{"same origin, default port spelled out", []string{"https://api.example/v1/a", "https://api.example:443/v1/b"}, true},
		{"host in another case", []string{"https://api.example/v1/a", "https://API.example/v1/b"}, true},
		{"another host", []string{"https://api.example/v1/a", "https://storage.example/f"}, false},
		{"a subdomain", []string{"https://example.com/v1/a", "https://files.example.com/f"}, false},
		{"another port", []string{"https://api.example/v1/a", "https://api.example:8443/v1/b"}, false},
		{"down to plain HTTP", []string{"https://api.example/v1/a", "http://api.example/v1/b"}, false},
		{"away and back", []string{"https://api.example/v1/a", "https://evil.example/x", "https://api.example/v1/b"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var via []*http.Request
			for _, u := range tt.hops[:len(tt.hops)-1] {
				r := httptest.NewRequest(http.MethodPost, u, nil)
				via = append(via, r)
			}
			req := httptest.NewRequest(http.MethodPost, tt.hops[len(tt.hops)-1]+"?alt=sse&key=k1&X-Goog-Signature=a%2Fb&Api_Key=k2", nil)
			req.Header = http.Header{"Authorization": {"Bearer k"}, "X-Api-Key": {"k"}, "Xi-Api-Key": {"k"}, "X-Goog-Api-Key": {"k"},
				"Cookie": {"s=k"}, "X-Session-Token": {"k"}, "Anthropic-Version": {"2023-06-01"}, "Range": {"bytes=0-9"}}
			if err := Redirect(req, via); err != nil {
				t.Fatal(err)
			}
			wantHeaders, wantQuery := 8, "alt=sse&key=k1&X-Goog-Signature=a%2Fb&Api_Key=k2"
			if !tt.kept {
				wantHeaders, wantQuery = 2, "alt=sse&X-Goog-Signature=a%2Fb"
			}
			if len(req.Header) != wantHeaders || req.Header.Get("Range") == "" || req.Header.Get("Anthropic-Version") == "" ||
				req.URL.RawQuery != wantQuery {
				t.Fatalf("header %v, query %q; want %d headers and %q", req.Header, req.URL.RawQuery, wantHeaders, wantQuery)
			}
		})
	}
	via := make([]*http.Request, maxRedirects)
	for i := range via {
		via[i] = httptest.NewRequest(http.MethodGet, "https://api.example/", nil)
	}
	if err := Redirect(httptest.NewRequest(http.MethodGet, "https://api.example/", nil), via); err == nil {
		t.Fatalf("a redirect past %d followed", maxRedirects)
	}
}

// TestPostIsOneWrite: a request built by Endpoint.Post leaves in one write, its head and body together: net/http's
// transport flushes the head on its own first for a body it does not know to be in memory, which cost the
// upstream a wake-up more on every call.
func TestPostIsOneWrite(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"tts-1","input":"Hello there.","voice":"alloy"}`)
	first := make(chan string, 1)
	up := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf) // the first read takes what the first write sent
		first <- string(buf[:n])
		if _, ok := readRequest(bufio.NewReader(io.MultiReader(strings.NewReader(string(buf[:n])), c))); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	client := NewHTTPClient()
	defer client.CloseIdleConnections()
	req, err := ParseEndpoint(up.url+"/v1/audio/speech").Post(body, http.Header{"Authorization": {"Bearer k"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Do(t.Context(), client, req, patient)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-first; !strings.HasSuffix(got, "\r\n\r\n"+string(body)) {
		t.Fatalf("the first write carried %q, want the head and the body", got)
	}
}
