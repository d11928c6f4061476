package upstream_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
)

// TestEndpointPost holds a request built on an endpoint parsed once to the one http.NewRequest builds: the same
// method, URL, body and GetBody, and Host once read as net/http reads it (the URL's when unset).
func TestEndpointPost(t *testing.T) {
	body := []byte(`{"model":"tts-1"}`)
	for _, raw := range []string{"http://api.example:8080/v1/audio/speech", "https://api.example:/v1/audio/speech?x=1",
		"http://[::1]:9/a%2Fb/speech", "http://user:pw@api.example/speech"} {
		want, err := http.NewRequest(http.MethodPost, raw, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := upstream.ParseEndpoint(raw).Post(body, http.Header{"Authorization": {"Bearer k"}})
		if err != nil {
			t.Fatal(err)
		}
		host := got.Host
		if host == "" {
			host = got.URL.Host
		}
		if got.Method != want.Method || got.URL.String() != want.URL.String() || host != want.Host || got.Proto != want.Proto ||
			got.ContentLength != want.ContentLength || got.Context() != want.Context() || got.Header.Get("Content-Type") != "application/json" ||
			got.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("%s: got %s %s (host %q) %s, length %d, header %v; want %s %s (host %q) %s, length %d", raw, got.Method, got.URL,
				host, got.Proto, got.ContentLength, got.Header, want.Method, want.URL, want.Host, want.Proto, want.ContentLength)
		}
		for i := range 2 { // read, then read again as for a redirect
			if b, _ := io.ReadAll(got.Body); !bytes.Equal(b, body) {
				t.Errorf("%s: body %d reads %q", raw, i, b)
			}
			if got.Body, err = got.GetBody(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := upstream.ParseEndpoint("http://bad host/").Post(body, http.Header{}); err == nil {
		t.Error("a malformed URL made a request")
	}
}

// TestEndpointPostRedirect: a 307 sends the body again, to the new location, with the same headers.
func TestEndpointPostRedirect(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	req, err := upstream.ParseEndpoint(srv.URL+"/old").Post([]byte(`{}`), http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 2 || got[0] != "/old application/json {}" || got[1] != "/new application/json {}" {
		t.Fatalf("the upstream saw %q", got)
	}
}
