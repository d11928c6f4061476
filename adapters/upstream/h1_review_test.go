package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// zeros is a request body of n zero bytes that takes no memory.
func zeros(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestH1EarlyAnswer: an upstream that answers before it has read a large body (a 413, a 401) and closes the
// connection fails the body's write; its answer is what the call returns, as with net/http's transport, so that
// the provider's status is classified, not a failure to reach it.
func TestH1EarlyAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		tls    bool
	}{
		{"413", http.StatusRequestEntityTooLarge, false},
		{"401", http.StatusUnauthorized, false},
		{"413 over TLS", http.StatusRequestEntityTooLarge, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Connection", "close")
				w.WriteHeader(tt.status)
				io.WriteString(w, `{"error":"early"}`)
			}))
			if tt.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			std := srv.Client().Transport.(*http.Transport)
			for _, rt := range []http.RoundTripper{std, newH1Transport(std.TLSClientConfig)} {
				const size = 256 << 20 // past what the sockets' buffers take
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, zeros(size))
				req.ContentLength = size
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("%T: %v, want the upstream's %d", rt, err, tt.status)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status || !strings.Contains(string(b), "early") {
					t.Fatalf("%T: %d %q", rt, resp.StatusCode, b)
				}
			}
		})
	}
}
