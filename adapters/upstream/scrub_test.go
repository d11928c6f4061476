package upstream_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
)

func TestScrub(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain words stay", "plain words stay"},
		{"key sk-abcdefgh12345678 leaked", "key [REDACTED] leaked"},
		{"Authorization: Bearer abc.def-ghi_jkl", "Authorization: [REDACTED]"},
		{"google AIzaSyA0123456789abcdefghijklmnop", "google [REDACTED]"},
		{"hex 0123456789abcdef0123456789abcdef end", "hex [REDACTED] end"},
		{"b64 QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlq==", "b64 [REDACTED]"},
		{"configured hunter2hunter2 here", "configured [REDACTED] here"},
		{"short pw1 stays", "short pw1 stays"},
	}
	for _, tt := range tests {
		if got := upstream.Scrub(tt.in, "hunter2hunter2", "pw1"); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestFailedScrubsWhatTheRequestCarried: the provider's message and raw body lose the credential the request
// sent, whatever header carried it.
func TestFailedScrubsWhatTheRequestCarried(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"Authorization", "Xi-Api-Key", "X-Goog-Api-Key"} {
		req := httptest.NewRequest(http.MethodPost, "http://p/v1?key=querysecret1", nil)
		req.Header.Set(h, "Token plainsecret1")
		resp := &http.Response{StatusCode: 400, Header: http.Header{}, Request: req}
		e := upstream.Failed(resp, []byte(`{"error":"plainsecret1 querysecret1"}`), "you sent Token plainsecret1, querysecret1")
		for _, s := range []string{"plainsecret1", "querysecret1"} {
			if strings.Contains(e.Reason, s) || strings.Contains(e.Raw, s) {
				t.Errorf("%s: %q survived: reason %q, raw %q", h, s, e.Reason, e.Raw)
			}
		}
	}
}

// FuzzScrub: no input makes Scrub panic, and a configured credential never survives it.
func FuzzScrub(f *testing.F) {
	f.Add("you sent Bearer sk-abcdefgh12345678", "sk-abcdefgh12345678")
	f.Add("AIzaSyA0123456789abcdefghijklmnop \x00\xff", "hunter2hunter2")
	f.Add(strings.Repeat("a", 100), "aaaaaaaa")
	f.Fuzz(func(t *testing.T, text, secret string) {
		out := upstream.Scrub(text, secret)
		if len(secret) < 8 || strings.Contains(secret, "\x00") {
			return
		}
		if strings.Contains(strings.ReplaceAll(out, upstream.Redacted, "\x00"), secret) {
			t.Fatalf("%q survived: %q", secret, out)
		}
	})
}
