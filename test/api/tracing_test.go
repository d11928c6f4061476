package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// One call is one trace, continuing the caller's traceparent: the server span, the database lookups made for it,
// the upstream call and the call's generation record, with the request and generation ids as attributes and
// neither the key nor the prompt.
func TestTracing(t *testing.T) {
	t.Parallel()
	u := newUpstreams(t)
	spans := tracetest.NewInMemoryExporter()
	g := harness.Start(t, harness.WithConfig(u.config("openai")), harness.WithSpans(keep{spans}))
	key, _ := g.Key(t, nil)
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0736aa"
		parent  = "00f067aa0ba902b7"
		prompt  = "a secret prompt"
	)
	r := speak(t, g, key, map[string]any{"input": prompt}, "traceparent", "00-"+traceID+"-"+parent+"-01", "X-Request-Id", "req-traced")
	if r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	g.Stop() // exports what is buffered

	var server, upstream, db, record []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		for _, a := range s.Attributes {
			if v := a.Value.Emit(); strings.Contains(v, key) || strings.Contains(v, prompt) || strings.Contains(v, "sk-up") {
				t.Errorf("span %q attribute %s carries a secret or the prompt: %q", s.Name, a.Key, v)
			}
		}
		if s.SpanContext.TraceID().String() != traceID {
			continue
		}
		switch {
		case s.SpanKind == trace.SpanKindServer:
			server = append(server, s)
		case strings.HasPrefix(s.Name, "upstream POST 127.0.0.1"):
			upstream = append(upstream, s)
		case strings.HasPrefix(s.Name, "db "):
			db = append(db, s)
		case s.Name == "generation record":
			record = append(record, s)
		}
	}
	if len(server) != 1 || len(upstream) != 1 || len(db) == 0 || len(record) != 1 {
		t.Fatalf("in the caller's trace: %d server, %d upstream, %d database, %d record spans; want 1, 1, some and 1 (all spans: %v)",
			len(server), len(upstream), len(db), len(record), names(spans.GetSpans()))
	}
	s := server[0]
	if s.Name != "POST /api/v1/audio/speech" || s.Parent.SpanID().String() != parent {
		t.Errorf("server span %q, parent %s; want the route, under the caller's span %s", s.Name, s.Parent.SpanID(), parent)
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["switchboard.request_id"] != "req-traced" || !strings.HasPrefix(attrs["switchboard.generation_id"], "gen-") ||
		attrs["http.response.status_code"] != "200" || attrs["http.route"] != "/api/v1/audio/speech" {
		t.Errorf("server span attributes %v", attrs)
	}
	if upstream[0].Parent.SpanID() != s.SpanContext.SpanID() || upstream[0].SpanKind != trace.SpanKindClient {
		t.Errorf("the upstream span is not a client span under the server span")
	}
	if rec := record[0]; rec.Parent.SpanID() != s.SpanContext.SpanID() || len(rec.Attributes) != 1 ||
		rec.Attributes[0].Value.Emit() != attrs["switchboard.generation_id"] {
		t.Errorf("the record span is not under the server span with the call's generation id: %+v", rec)
	}
	if got := u.openai.Requests()[0].Header.Get("traceparent"); got != "" {
		t.Errorf("the trace context went to the provider: traceparent %q", got)
	}
}

// A caller's traceparent decides whether its request is traced only when tracing.trust_caller_sampling says so:
// with no trace started by the gateway sampled (OTEL_TRACES_SAMPLER=parentbased_always_off), a caller's sampled flag
// brings no span by default, and the server span in the caller's trace once trusted.
func TestTracingCallerSampling(t *testing.T) {
	t.Parallel()
	const traceID = "4bf92f3577b34da6a3ce929d0e0736aa"
	for _, tt := range []struct {
		trust  string
		server int
	}{{"false", 0}, {"true", 1}} {
		t.Run("trust_caller_sampling "+tt.trust, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			g := harness.Start(t, harness.WithSQLite(), harness.WithSpans(keep{spans}),
				harness.WithEnv("OTEL_TRACES_SAMPLER", "parentbased_always_off"),
				harness.WithEnv("SWITCHBOARD_TRACING_TRUST_CALLER_SAMPLING", tt.trust))
			key, _ := g.Key(t, nil)
			if r := g.Do(t, "GET", "/key", key, nil, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"); r.Status != 200 {
				t.Fatalf("GET /key: %d %s", r.Status, r.Body)
			}
			g.Stop() // exports what is buffered
			server := 0
			for _, s := range spans.GetSpans() {
				if s.SpanKind == trace.SpanKindServer && s.SpanContext.TraceID().String() == traceID {
					server++
				}
			}
			if server != tt.server {
				t.Errorf("%d server spans in the caller's trace, want %d (all spans: %v)", server, tt.server, names(spans.GetSpans()))
			}
		})
	}
}

// keep keeps the spans when the gateway shuts its exporter down (the in-memory exporter would forget them).
type keep struct{ *tracetest.InMemoryExporter }

func (keep) Shutdown(context.Context) error { return nil }

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+" "+s.SpanContext.TraceID().String()[:8])
	}
	return out
}

// TestTracestateOnlyWhenTrusted: a caller's tracestate is the caller's text, and is exported on the spans of its
// request only when the operator trusts its callers' trace context (tracing.trust_caller_state); the spans
// continue the caller's trace either way.
func TestTracestateOnlyWhenTrusted(t *testing.T) {
	t.Parallel()
	const traceID = "4bf92f3577b34da6a3ce929d0e0736ab"
	for _, trusted := range []bool{false, true} {
		u := newUpstreams(t)
		spans := tracetest.NewInMemoryExporter()
		g := harness.Start(t, harness.WithConfig(u.configWith(fmt.Sprintf("tracing: {trust_caller_state: %v}", trusted), "openai")),
			harness.WithSpans(keep{spans}))
		key, _ := g.Key(t, nil)
		if r := speak(t, g, key, nil, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01", "tracestate", "vendor=caller-said-this"); r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		g.Stop()
		inTrace, withState := 0, 0
		for _, s := range spans.GetSpans() {
			if s.SpanContext.TraceID().String() == traceID {
				inTrace++
			}
			if strings.Contains(s.SpanContext.TraceState().String(), "caller-said-this") ||
				strings.Contains(s.Parent.TraceState().String(), "caller-said-this") {
				withState++
			}
		}
		if inTrace == 0 || trusted != (withState > 0) {
			t.Fatalf("trusted %v: %d spans in the caller's trace, %d carrying its tracestate", trusted, inTrace, withState)
		}
	}
}
