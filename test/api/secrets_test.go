package api_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// syncBuffer is a log sink that concurrent request goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNoSecretInLogs drives every kind of request, at debug level, and checks no key appears in the logs.
func TestNoSecretInLogs(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	g := harness.Start(t, harness.WithLog(&logs))
	secret, hash := g.Key(t, nil)
	g.Do(t, "GET", "/key", secret, nil)
	g.Do(t, "GET", "/keys", secret, nil)
	g.Do(t, "GET", "/keys/"+hash, g.Admin, nil)
	g.Do(t, "PATCH", "/keys/"+hash, g.Admin, `{"name":`)
	g.Do(t, "GET", "/keys", "sk-sb-v1-wrong-secret-value", nil)
	out := logs.String()
	if !strings.Contains(out, `"request_id"`) {
		t.Fatalf("no request logs captured: %q", out)
	}
	for _, s := range []string{secret, g.Admin, "sk-sb-v1-wrong-secret-value", secret[len(secret)-20:]} {
		if strings.Contains(out, s) {
			t.Fatalf("a key reached the logs: %q", s)
		}
	}
}
