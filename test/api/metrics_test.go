package api_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
	"github.com/switchboard-ai/switchboard/test/readme"
)

// scrape reads GET /metrics as Prometheus would.
func scrape(t *testing.T, g *harness.Gateway) map[string]*dto.MetricFamily {
	t.Helper()
	r := g.Do(t, "GET", "/metrics", "", nil)
	if r.Status != 200 {
		t.Fatalf("GET /metrics: %d %s", r.Status, r.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include want; found says whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, found bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if labels[k] != w {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func TestMetrics(t *testing.T) {
	u := newUpstreams(t)
	// A chat model beside the speech model (the line goes on the models list).
	chatModel := "  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: gpt, pricing: {per_million_prompt_tokens: 1}}]}"
	g := harness.Start(t, harness.WithConfig(u.configWith(chatModel, "elevenlabs", "openai")))
	key, _ := g.Key(t, nil)
	limited, hash := g.Key(t, nil)
	g.Do(t, "PATCH", "/keys/"+hash, g.Admin, map[string]any{"requests_per_minute": 1})

	before := scrape(t, g)
	if v, ok := value(before, "switchboard_generation_records_lost_total", nil); !ok || v != 0 {
		t.Fatalf("records lost = %v (present %v), want a 0 series from the start", v, ok)
	}

	u.elevenlabs.Script(fakes.Step{Status: 429, Body: fakes.ElevenLabsConcurrency}) // then openai answers
	if r := speak(t, g, key, nil); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	generationOf(t, g, speak(t, g, key, nil)) // waits until the records are written
	if r := speak(t, g, limited, nil); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	if r := speak(t, g, limited, nil); r.Status != 429 {
		t.Fatalf("second call of a 1/min key: %d, want 429", r.Status)
	}
	g.Do(t, "GET", "/no/such/route", "", nil)
	// A chat call whose upstream counts a usage it could not have used.
	u.openai.Script(fakes.Step{Events: []string{openAIText("Hi", "stop"), openAIEvent(`[]`, `{"prompt_tokens":9999999,"completion_tokens":1}`),
		"data: [DONE]\n\n"}})
	if r := g.Do(t, "POST", "/chat/completions", key, map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}); r.Status != 200 {
		t.Fatalf("chat: %d %s", r.Status, r.Body)
	}

	// A record counts as written once stored, and leaves the recorder's queue when the spool releases it just
	// after: wait for both, or the queue's depth below races the count.
	var after map[string]*dto.MetricFamily
	harness.Eventually(t, 5e9, func() bool {
		after = scrape(t, g)
		v, _ := value(after, "switchboard_generation_records_written_total", nil)
		depth, _ := value(after, "switchboard_queue_depth", map[string]string{"queue": "recorder"})
		return v >= 3 && depth == 0
	})
	for _, tt := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"switchboard_http_requests_total", map[string]string{"route": "/api/v1/audio/speech", "method": "POST", "status": "200", "key_kind": "inference"}, 3},
		{"switchboard_http_requests_total", map[string]string{"route": "/api/v1/audio/speech", "status": "429", "key_kind": "inference"}, 1},
		{"switchboard_http_requests_total", map[string]string{"route": "/api/v1/generation", "status": "200", "key_kind": "management"}, 1},
		{"switchboard_http_requests_total", map[string]string{"route": "/api/v1/keys/:hash", "method": "PATCH", "key_kind": "management"}, 1},
		{"switchboard_http_requests_total", map[string]string{"route": "unmatched", "status": "404", "key_kind": "none"}, 1},
		{"switchboard_http_request_duration_seconds", map[string]string{"route": "/api/v1/audio/speech"}, 4},
		{"switchboard_http_response_bytes_total", map[string]string{"route": "/api/v1/audio/speech"}, 3},
		{"switchboard_gateway_overhead_seconds", map[string]string{"modality": "tts"}, 3},
		{"switchboard_upstream_requests_total", map[string]string{"provider": "elevenlabs", "model": "tts", "outcome": "rate_limited"}, 1},
		{"switchboard_upstream_requests_total", map[string]string{"provider": "elevenlabs", "model": "tts", "outcome": "ok"}, 2},
		{"switchboard_upstream_requests_total", map[string]string{"provider": "openai", "model": "tts", "outcome": "ok"}, 1},
		{"switchboard_upstream_latency_seconds", map[string]string{"provider": "elevenlabs", "model": "tts"}, 3},
		{"switchboard_upstream_failovers_total", map[string]string{"provider": "elevenlabs", "model": "tts"}, 1},
		{"switchboard_upstream_implausible_usage_total", map[string]string{"provider": "openai", "model": "chat"}, 1},
		{"switchboard_rate_limit_rejections_total", nil, 1},
		{"switchboard_cache_lookups_total", map[string]string{"cache": "keys", "result": "hit"}, 1},
		{"switchboard_cache_lookups_total", map[string]string{"cache": "keys", "result": "miss"}, 1},
		{"switchboard_cache_lookups_total", map[string]string{"cache": "guardrails", "result": "miss"}, 1},
		{"switchboard_generation_records_written_total", nil, 3},
		{"go_goroutines", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
	} {
		v, ok := value(after, tt.name, tt.labels)
		if !ok || v < tt.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", tt.name, tt.labels, v, ok, tt.min)
		}
	}
	// The spool's bound is the configuration's (the default, 1 GiB): an alert on the fill divides by it.
	if v, ok := value(after, "switchboard_spool_max_bytes", nil); !ok || v != 1<<30 {
		t.Errorf("switchboard_spool_max_bytes = %v (present %v), want %v", v, ok, 1<<30)
	}
	dashboardQueriesExist(t, after)
	queuesNamedExported(t, after)
	readmeListsExported(t, after)
	for _, tt := range []struct {
		name   string
		labels map[string]string
	}{
		{"switchboard_generation_records_lost_total", nil},
		{"switchboard_guardrail_holds_outstanding", nil},
		{"switchboard_queue_depth", map[string]string{"queue": "recorder"}},
		{"switchboard_spool_bytes", nil},
	} {
		if v, ok := value(after, tt.name, tt.labels); !ok || v != 0 {
			t.Errorf("%s%v = %v (present %v), want 0", tt.name, tt.labels, v, ok)
		}
	}
}

// queuesNamedExported checks that the help of switchboard_queue_depth names ("name: what") exactly the queues the
// gateway exports.
func queuesNamedExported(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	f := fams["switchboard_queue_depth"]
	if f == nil {
		t.Fatal("/metrics exports no switchboard_queue_depth")
	}
	var exported, named []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "queue" {
				exported = append(exported, l.GetValue())
			}
		}
	}
	for _, m := range regexp.MustCompile(`(\w+): `).FindAllStringSubmatch(f.GetHelp(), -1) {
		named = append(named, m[1])
	}
	slices.Sort(exported)
	slices.Sort(named)
	if !slices.Equal(named, exported) {
		t.Errorf("switchboard_queue_depth's help names the queues %v, and the gateway exports %v (help: %q)", named, exported, f.GetHelp())
	}
}

// readmeListsExported checks that the metrics table of docs/operating.md names exactly the families /metrics exports (each
// labelled family has a series by now), the Go runtime's and the process's by their go_* and process_* row.
func readmeListsExported(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	table := readme.Table(t, "docs/operating.md", "| metric | labels | what |")
	var listed, exported []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)`").FindAllStringSubmatch(table, -1) {
		listed = append(listed, m[1])
	}
	for name := range fams {
		if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			exported = append(exported, name)
		}
	}
	slices.Sort(listed)
	slices.Sort(exported)
	if !slices.Equal(listed, exported) {
		t.Errorf("docs/operating.md's metrics table lists %v, and /metrics exports %v", listed, exported)
	}
}

// dashboardQueriesExist checks that the sample Grafana dashboard queries only metrics the gateway exports.
func dashboardQueriesExist(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/switchboard.json")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\b(switchboard|go|process)_[a-z_]+`).FindAllString(string(raw), -1)
	if len(names) < 10 {
		t.Fatalf("the dashboard names %d metrics", len(names))
	}
	for _, n := range names {
		if fams[strings.TrimSuffix(n, "_bucket")] == nil {
			t.Errorf("the dashboard queries %s, which /metrics does not export", n)
		}
	}
}

// With metrics.addr the metrics leave the main listener; with metrics.enabled false they are nowhere.
func TestMetricsOffTheMainListener(t *testing.T) {
	t.Parallel()
	for _, env := range [][2]string{{"SWITCHBOARD_METRICS_ADDR", "127.0.0.1:0"}, {"SWITCHBOARD_METRICS_ENABLED", "false"}} {
		g := harness.Start(t, harness.WithSQLite(), harness.WithEnv(env[0], env[1]))
		harness.AssertError(t, g.Do(t, "GET", "/metrics", "", nil), 404)
	}
}
