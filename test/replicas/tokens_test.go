package replicas_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestTokenLimitAcrossReplicas: a key's tokens per minute hold across three gateway processes sharing one Redis:
// each call's tokens, as the upstream counts them, are counted once, whichever replica made it, and once the key
// has used its minute's tokens every replica refuses it, with the same Retry-After.
func TestTokenLimitAcrossReplicas(t *testing.T) {
	f := newFleet(t, 3)
	k := f.key(t, map[string]any{"name": "tokens"})
	// A call of the fake's uses 8 tokens (2 of prompt, 6 of completion): 40 a minute is five calls, a token regained
	// every 1.5 s.
	f.mgmt(t, 1, "PATCH", "/keys/"+k.hash, map[string]any{"tokens_per_minute": 40}, http.StatusOK, nil)
	body, _ := json.Marshal(map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "Hi there"}}})
	call := func(r int) *http.Response {
		req, err := http.NewRequest("POST", f.replicas[r].url+"/api/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+k.secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		resp.Body.Close()
		return resp
	}
	start := time.Now()
	for i := range 5 {
		resp := call(i % 3)
		if want := strconv.Itoa(40 - 8*i); resp.StatusCode != http.StatusOK || resp.Header.Get("X-RateLimit-Remaining-Tokens") != want {
			t.Fatalf("call %d on replica %d: %d, %q tokens left, want 200 and %s (counted across the replicas)", i, i%3,
				resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining-Tokens"), want)
		}
	}
	for r := range 3 {
		resp := call(r)
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 2 {
			t.Fatalf("replica %d once the key used its 40 tokens (%v after the first call): %d, Retry-After %q, want 429 and 1 to 2 s",
				r, time.Since(start), resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	t.Logf("MEASURED tokens per minute: 40, five calls of 8 tokens through three replicas admitted, then all three refuse (%v for the eight calls)",
		time.Since(start))
}
