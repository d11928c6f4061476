package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
)

// An upstream call's span names its URL without the query string: a provider's video may be downloaded from a
// signed URL (a redirect's Location) whose query is the credential, and docs/operating.md promises no query string in a
// span.
func TestTraceUpstreamKeepsNoQuery(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-signature"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/content" {
			http.Redirect(w, r, "/signed?X-Goog-Signature="+secret+"&X-Goog-Credential="+secret, http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("video"))
	}))
	defer srv.Close()
	spans := tracetest.NewSpanRecorder()
	client := &http.Client{Transport: http.DefaultTransport}
	traceUpstream(client, httpapi.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})

	resp, err := client.Get(srv.URL + "/content?variant=video&key=" + secret)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	got := map[string]bool{}
	for _, s := range spans.Ended() {
		for _, a := range s.Attributes() {
			if v := a.Value.Emit(); strings.Contains(v, secret) || strings.Contains(v, "?") {
				t.Errorf("span %q attribute %s = %q holds the query", s.Name(), a.Key, v)
			}
			if a.Key == "url.full" {
				got[a.Value.AsString()] = true
			}
		}
	}
	if len(got) != 2 || !got[srv.URL+"/content"] || !got[srv.URL+"/signed"] {
		t.Errorf("url.full of the spans: %v, want %s/content and %s/signed", got, srv.URL, srv.URL)
	}
}

// A collector that does not answer costs the process's exit at most flushTimeout: the tracer provider's shutdown
// (the export of what is buffered, then the exporter's own) gets that deadline; it had none, and a hung collector
// held the exit 30 s after the drain (the processor's export timeout). The exporter's failures are logged through
// the gateway's logger: OpenTelemetry's default handler wrote them with the standard library's log, a line
// outside the JSON ones.
func TestTracingShutdownBoundedAndLogged(t *testing.T) {
	var logs bytes.Buffer
	exp := &deadline{}
	tracing, cleanup, err := newTracing(context.Background(), TracingConfig{Enabled: true, Exporter: exp},
		slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracing.Provider.Tracer("test").Start(context.Background(), "a span")
	span.End()
	otel.Handle(errors.New("collector unreachable"))
	cleanup()
	if end := time.Now(); exp.shutdown.IsZero() || exp.shutdown.After(end.Add(flushTimeout)) {
		t.Errorf("the exporter's shutdown had deadline %v, want one at most %v away", exp.shutdown, flushTimeout)
	}
	if line := logs.String(); !strings.HasPrefix(line, "{") || !strings.Contains(line, "collector unreachable") {
		t.Errorf("the exporter's error was not logged through the gateway's logger: %q", line)
	}
}

// deadline is an exporter that records the deadline its shutdown was given.
type deadline struct{ shutdown time.Time }

func (*deadline) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }

func (d *deadline) Shutdown(ctx context.Context) error {
	d.shutdown, _ = ctx.Deadline()
	return nil
}

// TestTracingSampling: the operator's sampler decides whether a request is traced, under a caller's traceparent
// too, whatever its sampled flag and its trace id (which the span keeps), unless trust_caller_sampling lets the
// flag decide as OpenTelemetry's parent-based samplers do. The gateway's own spans under a request's follow it.
func TestTracingSampling(t *testing.T) {
	t.Parallel()
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0736aa"
		// chosen decides by the trace id: its last eight bytes are zero, which every ratio takes.
		chosen = "4bf92f3577b34da60000000000000000"
		// tiny is a ratio that samples about one trace in 10^18: never, on a trace id of the gateway's drawing.
		tiny = "1e-18"
	)
	for _, tt := range []struct {
		name         string
		sampler, arg string
		trust        bool
		traceparent  string // "" none
		sampled      bool
	}{
		{"unset: the gateway's own decision, not the caller's flag", "", "", false, "00-" + traceID + "-00f067aa0ba902b7-00", true},
		{"unset, trusted: the caller's flag", "", "", true, "00-" + traceID + "-00f067aa0ba902b7-00", false},
		{"roots never sampled, a caller's flag", "parentbased_always_off", "", false, "00-" + traceID + "-00f067aa0ba902b7-01", false},
		{"roots never sampled, a caller's flag trusted", "parentbased_always_off", "", true, "00-" + traceID + "-00f067aa0ba902b7-01", true},
		{"a ratio of 0, a caller's flag", "parentbased_traceidratio", "0", false, "00-" + traceID + "-00f067aa0ba902b7-01", false},
		{"a ratio of 0, a caller's flag trusted", "parentbased_traceidratio", "0", true, "00-" + traceID + "-00f067aa0ba902b7-01", true},
		{"a ratio, a trace id chosen to pass it", "TraceIDRatio", tiny, false, "00-" + chosen + "-00f067aa0ba902b7-01", false},
		{"a ratio, a trace id chosen to pass it, trusted", "traceidratio", tiny, true, "00-" + chosen + "-00f067aa0ba902b7-01", true},
		{"roots never sampled, no traceparent", "parentbased_always_off", "", false, "", false},
		{"always on, no traceparent", "always_on", "", false, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sampler, err := TracingConfig{Enabled: true, TrustCallerSampling: tt.trust, Sampler: tt.sampler, SamplerArg: tt.arg}.sampler()
			if err != nil {
				t.Fatal(err)
			}
			tracer := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler)).Tracer("test")
			ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tt.traceparent})
			ctx, server := tracer.Start(ctx, "server", trace.WithSpanKind(trace.SpanKindServer))
			_, child := tracer.Start(ctx, "db query")
			sc := server.SpanContext()
			if sc.IsSampled() != tt.sampled || child.SpanContext().IsSampled() != tt.sampled {
				t.Errorf("sampled: the request's span %v, its child's %v; want %v", sc.IsSampled(), child.SpanContext().IsSampled(), tt.sampled)
			}
			if tt.traceparent != "" && sc.TraceID().String() != tt.traceparent[3:35] {
				t.Errorf("trace id %s, want the caller's %s", sc.TraceID(), tt.traceparent[3:35])
			}
		})
	}
}

// A sampler the SDK would not take, or a ratio outside 0..1, is refused at load while tracing is on, naming its
// variable (the SDK warned and sampled every trace); with tracing off, the variables are not the gateway's.
func TestTracingSamplerRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sampler, arg string
		enabled      bool
		want         string // "" no error
	}{
		{"jaeger_remote", "", true, "config: OTEL_TRACES_SAMPLER: must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"},
		{"parentbased_traceidratio", "2", true, "config: OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1, as 0.1"},
		{"traceidratio", "a tenth", true, "config: OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1, as 0.1"},
		{"traceidratio", "NaN", true, "config: OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1, as 0.1"},
		{" ParentBased_TraceIDRatio ", " 0.25 ", true, ""},
		{"always_on", "ignored", true, ""},
		{"jaeger_remote", "", false, ""},
	} {
		enabled := "false"
		if tt.enabled {
			enabled = "true"
		}
		_, err := LoadConfig("", func(k string) string {
			return map[string]string{"OTEL_TRACES_SAMPLER": tt.sampler, "OTEL_TRACES_SAMPLER_ARG": tt.arg,
				"SWITCHBOARD_TRACING_ENABLED": enabled}[k]
		})
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("%q %q (tracing on: %v): %v, want %q", tt.sampler, tt.arg, tt.enabled, err, tt.want)
		}
	}
}
