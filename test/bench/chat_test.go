package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// chatRig streams completions of 200 tokens from an OpenAI fake, directly and through a gateway.
type chatRig struct {
	fake            *fakes.OpenAI
	gw              *harness.Gateway
	key             string
	client          *http.Client
	direct, through []byte
}

func newChatRig(b *testing.B) *chatRig {
	fake := fakes.NewOpenAI(b, "sk-up")
	fake.Unrecorded = true
	gw := harness.Start(b, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up}
models:
  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: up-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
`, fake.BaseURL())))
	key, _ := gw.Key(b, nil)
	body := func(model string) []byte {
		b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 200, "stream": true,
			"stream_options": map[string]any{"include_usage": true},
			"messages":       []any{map[string]any{"role": "user", "content": "Write two hundred words."}}})
		return b
	}
	return &chatRig{fake: fake, gw: gw, key: key, direct: body("up-1"), through: body("chat"),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// call streams one completion and returns the time to its first token and to its end.
func (r *chatRig) call(b *testing.B, viaGateway bool) (first, total time.Duration) {
	url, body, auth := r.fake.BaseURL()+"/chat/completions", r.direct, "sk-up"
	if viaGateway {
		url, body, auth = r.gw.URL+"/chat/completions", r.through, r.key
	}
	start, resp := post(b, r.client, url, body, auth)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	tokens := 0
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"content":" w`)) {
			if tokens == 0 {
				first = time.Since(start)
			}
			tokens++
		}
	}
	if tokens != 200 || sc.Err() != nil {
		b.Fatalf("%d tokens, %v", tokens, sc.Err())
	}
	return first, time.Since(start)
}

// BenchmarkChatTimeToFirstToken streams a completion of 200 tokens at concurrency 1, directly from the fake and
// through the gateway alternately: the added time to the first token and to the last, at p50 and p99. The fake
// sends its tokens in a burst (the gateway relays the first while the rest pour in, on the same two cores), or
// paced 1 ms apart, still faster than a model writes.
func BenchmarkChatTimeToFirstToken(b *testing.B) {
	for _, tc := range []struct {
		name string
		gap  time.Duration
	}{{"burst", 0}, {"paced-1ms", time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newChatRig(b)
			r.fake.Default = fakes.Step{Gap: tc.gap}
			r.call(b, false) // warm: connections, caches
			r.call(b, true)
			var df, gf, dt, gt []time.Duration
			b.ResetTimer()
			for range b.N {
				f, t := r.call(b, false)
				df, dt = append(df, f), append(dt, t)
				f, t = r.call(b, true)
				gf, gt = append(gf, f), append(gt, t)
			}
			b.StopTimer()
			for _, q := range []struct {
				name string
				q    float64
			}{{"p50", 0.5}, {"p99", 0.99}} {
				b.ReportMetric(ms(quantile(df, q.q)), "direct-ttft-"+q.name+"-ms")
				b.ReportMetric(ms(quantile(gf, q.q)), "gateway-ttft-"+q.name+"-ms")
				b.ReportMetric(ms(quantile(gf, q.q)-quantile(df, q.q)), "added-ttft-"+q.name+"-ms")
				b.ReportMetric(ms(quantile(gt, q.q)-quantile(dt, q.q)), "added-total-"+q.name+"-ms")
			}
		})
	}
}
