package upstream

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestH1CloseAtTheEnd: a body closed before its end, when the rest of it comes (the upstream's chunked terminator
// after OpenAI's data: [DONE], which the stream stops at), is read to its end by Close and its connection serves
// the next call; one whose rest does not all come, or is more than the framing and a little data, closes its
// connection. The rest is in the socket before Close (waitReadable), for a test that does not depend on
// drainWait. Calls go through the transport, then through Do (the watchdog), as the providers' do.
func TestH1CloseAtTheEnd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads without waiting only on Linux")
	}
	t.Parallel()
	const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ne\r\ndata: [DONE]\n\n\r\n"
	tests := []struct {
		name, first, tail string // the answer, until the data read before Close; what the upstream sends then
		tls               bool
		conns             int32
	}{
		{"chunked terminator", chunked, "0\r\n\r\n", false, 1},
		{"chunked terminator over TLS", chunked, "0\r\n\r\n", true, 1},
		{"terminator and trailer", chunked, "0\r\nX-Sum: 1\r\n\r\n", false, 1},
		{"last chunk and terminator", chunked, "3\r\nend\r\n0\r\n\r\n", false, 1},
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "world", false, 1},
		{"nothing more yet", chunked, "", false, 4},
		{"terminator cut", chunked, "0\r\n", false, 4},
		{"terminator cut over TLS", chunked, "0\r\n", true, 4},
		{"more than the bound", chunked, "1001\r\n" + strings.Repeat("x", 0x1001) + "\r\n0\r\n\r\n", false, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next := make(chan struct{})
			var roots *tls.Config
			var cert []tls.Certificate
			if tt.tls {
				srv := httptest.NewUnstartedServer(nil)
				srv.StartTLS() // for its certificate and the client's roots
				defer srv.Close()
				cert, roots = srv.TLS.Certificates, srv.Client().Transport.(*http.Transport).TLSClientConfig
			}
			raw := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				var w io.Writer = c
				if tt.tls {
					tc := tls.Server(c, &tls.Config{Certificates: cert})
					w, br = tc, bufio.NewReader(tc)
				}
				for {
					if _, ok := readRequest(br); !ok {
						return
					}
					io.WriteString(w, tt.first)
					<-next
					io.WriteString(w, tt.tail)
				}
			})
			url := raw.url
			if tt.tls {
				url = "https://" + strings.TrimPrefix(url, "http://")
			}
			rt := newH1Transport(roots)
			defer rt.CloseIdleConnections()
			for i := range 4 {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
				var resp *http.Response
				var err error
				if i < 2 {
					resp, err = rt.RoundTrip(req)
				} else {
					resp, err = Do(req.Context(), &http.Client{Transport: rt}, req, Config{Timeout: time.Minute})
				}
				if err != nil {
					t.Fatal(err)
				}
				h1 := resp.Body
				if w, ok := h1.(*watchdog); ok {
					h1 = w.body
				}
				_, want, _ := strings.Cut(tt.first, "\r\n\r\n")
				want = strings.TrimSuffix(strings.TrimPrefix(want, "e\r\n"), "\r\n")
				p := make([]byte, 64)
				if n, err := resp.Body.Read(p); string(p[:n]) != want || err != nil {
					t.Fatalf("call %d read %q %v, want %q", i, p[:n], err, want)
				}
				next <- struct{}{}
				if tt.tail != "" {
					waitReadable(t, h1.(*body).c)
				}
				resp.Body.Close()
				if _, err := resp.Body.Read(p); err == nil {
					t.Fatalf("Read after Close: %v", err)
				}
			}
			if n := raw.accepts.Load(); n != tt.conns {
				t.Fatalf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

// waitReadable waits until c's socket holds something to read.
func waitReadable(t *testing.T, c *conn) {
	t.Helper()
	var peek [1]byte
	if err := c.raw.Read(func(fd uintptr) bool { return !peekWouldBlock(fd, peek[:]) }); err != nil {
		t.Fatal(err)
	}
}
