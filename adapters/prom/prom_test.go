package prom

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// TestSeries: what the metrics counted by their label values, from goroutines at once, is what /metrics shows,
// and a call counts with no allocation once its labels came (WithLabelValues made Request's status a string
// each time).
func TestSeries(t *testing.T) {
	m := New()
	count := func() {
		m.Request(ports.RequestMetric{Route: "/api/v1/chat/completions", Method: "POST", Status: 200, KeyKind: "inference",
			Bytes: 10, Took: time.Millisecond})
		m.Request(ports.RequestMetric{Method: "GET", Status: 404, KeyKind: "none"})
		m.Upstream("openai", "openai/gpt", ports.UpstreamOK, time.Millisecond)
		m.Upstream("openai", "openai/gpt", "timeout", time.Second)
		m.Overhead("chat", 100*time.Microsecond)
		m.CacheLookup("keys", true)
		m.CacheLookup("keys", false)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				count()
			}
		})
	}
	wg.Wait()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got := rec.Body.String()
	for _, want := range []string{
		`switchboard_http_requests_total{key_kind="inference",method="POST",route="/api/v1/chat/completions",status="200"} 100`,
		`switchboard_http_requests_total{key_kind="none",method="GET",route="unmatched",status="404"} 100`,
		`switchboard_http_request_duration_seconds_count{method="POST",route="/api/v1/chat/completions"} 100`,
		`switchboard_http_response_bytes_total{route="/api/v1/chat/completions"} 1000`,
		`switchboard_upstream_requests_total{model="openai/gpt",outcome="ok",provider="openai"} 100`,
		`switchboard_upstream_requests_total{model="openai/gpt",outcome="timeout",provider="openai"} 100`,
		`switchboard_upstream_latency_seconds_count{model="openai/gpt",provider="openai"} 200`,
		`switchboard_gateway_overhead_seconds_count{modality="chat"} 100`,
		`switchboard_cache_lookups_total{cache="keys",result="hit"} 100`,
		`switchboard_cache_lookups_total{cache="keys",result="miss"} 100`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, `switchboard_http_response_bytes_total{route="unmatched"}`) {
		t.Error("a route that sent no bytes has a response bytes series")
	}
	if n := testing.AllocsPerRun(100, count); n != 0 {
		t.Errorf("%v allocations counting a call, want 0", n)
	}
}
