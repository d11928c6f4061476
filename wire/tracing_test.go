package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
