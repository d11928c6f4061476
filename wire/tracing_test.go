package wire

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchboard-ai/switchboard/adapters/httpapi"
)

// An upstream call's span names its URL without the query string: a provider's video may be downloaded from a
// signed URL (a redirect's Location) whose query is the credential, and README promises no query string in a
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
