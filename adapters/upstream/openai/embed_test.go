package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/embedding"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// TestEmbed: texts and token arrays go to POST /embeddings with the gateway's fields over the options, as base64;
// the vectors come back in order whether the upstream answers base64 or, ignoring the ask, floats.
func TestEmbed(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	c := client(f, "sk-test", fakes.Patient)
	dims := int64(4)
	for _, tc := range []struct {
		name       string
		floatsOnly bool
		req        ports.EmbedRequest
		inputs     []string // each input as its JSON, which the fake's vectors are made of
		tokens     int64
	}{
		{"texts as base64", false, ports.EmbedRequest{UpstreamModel: "text-embedding-3-small",
			Inputs:  []embedding.Input{{Text: "hello"}, {Text: "world!"}},
			Options: map[string]any{"user": "u-1", "input": "smuggled", "encoding_format": "float"}},
			[]string{`"hello"`, `"world!"`}, 4},
		{"token arrays with dimensions", false, ports.EmbedRequest{UpstreamModel: "text-embedding-3-large",
			Inputs: []embedding.Input{{Tokens: []int64{1, 2, 3}}}, Dimensions: &dims}, []string{`[1,2,3]`}, 3},
		{"an upstream that answers floats", true, ports.EmbedRequest{UpstreamModel: "nomic-embed",
			Inputs: []embedding.Input{{Text: "hello"}}}, []string{`"hello"`}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.FloatsOnly = tc.floatsOnly
			f.Script()
			got, err := c.Embed(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			n := fakes.FakeDimensions
			if tc.req.Dimensions != nil {
				n = int(*tc.req.Dimensions)
			}
			for i, in := range tc.inputs {
				if want := fakes.FakeVector(in, n); !slices.Equal(got.Vectors[i], want) {
					t.Fatalf("vector %d = %v, want %v", i, got.Vectors[i], want)
				}
			}
			if len(got.Vectors) != len(tc.inputs) || got.PromptTokens == nil || *got.PromptTokens != tc.tokens ||
				got.UpstreamID != "req_fake_openai_embed" {
				t.Fatalf("got %d vectors, tokens %v, id %q", len(got.Vectors), got.PromptTokens, got.UpstreamID)
			}
			var body map[string]any
			_ = json.Unmarshal(f.Requests()[0].Body, &body)
			if body["model"] != tc.req.UpstreamModel || body["encoding_format"] != "base64" || body["input"] == "smuggled" ||
				tc.req.Options != nil && body["user"] != "u-1" || (tc.req.Dimensions != nil) != (body["dimensions"] != nil) {
				t.Fatalf("request body %v", body)
			}
		})
	}
}

// TestEmbedFailures: OpenAI's error answers, a stall and a cut are classified as every call's are.
func TestEmbedFailures(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	req := ports.EmbedRequest{UpstreamModel: "text-embedding-3-small", Inputs: []embedding.Input{{Text: "hello"}}}
	fakes.CheckEmbedFailures(t, f.Fake, dial(f, "sk-test"), req, []fakes.Failure{
		{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "2"}},
			Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 2 * time.Second},
		{Name: "quota is not a rate limit", Step: fakes.Step{Status: 429, Body: fakes.OpenAIQuota}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "server error", Step: fakes.Step{Status: 500, Body: fakes.OpenAIServerError}, Kind: domain.KindUpstream, Retryable: true},
		{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
		{Name: "caller's input", Step: fakes.Step{Status: 400, Body: fakes.OpenAIInvalidEmbeddingsInput}, Kind: domain.KindInvalid},
		{Name: "no first byte in time", Step: fakes.Step{Hold: make(chan struct{})}, Kind: domain.KindTimeout, Retryable: true},
		{Name: "stalls mid-answer", Step: fakes.Step{HoldAfter: 40}, Kind: domain.KindTimeout, Retryable: true},
		{Name: "cut mid-answer", Step: fakes.Step{Abort: 40}, Kind: domain.KindUpstream, Retryable: true},
	})
}

// TestEmbedWire: each embedding is read as the wire has it, numbers or base64 (escaped or not), exactly.
func TestEmbedWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, embedding string
		want            []float32
	}{
		{"numbers", `[0.5, -2,1e-3 ,0]`, []float32{0.5, -2, 0.001, 0}},
		{"no numbers", `[]`, []float32{}},
		{"base64", `"AAAAPwAAAMA="`, []float32{0.5, -2}},
		{"base64 with an escaped slash", `"\/\/9/fw=="`, []float32{math.MaxFloat32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`{"data":[{"index":0,"embedding":` + tc.embedding + `}]}`))
			}))
			defer srv.Close()
			c := openai.New(upstream.Config{BaseURL: srv.URL, APIKey: "k", Timeout: fakes.Patient}, upstream.NewHTTPClient())
			got, err := c.Embed(context.Background(), ports.EmbedRequest{UpstreamModel: "m", Inputs: []embedding.Input{{Text: "a"}}})
			if err != nil || !slices.Equal(got.Vectors[0], tc.want) || got.PromptTokens != nil {
				t.Fatalf("Embed = %v, %v; want %v", got.Vectors, err, tc.want)
			}
		})
	}
}

// TestEmbedMalformed: an answer that is not what the protocol promises fails over, whatever is wrong with it.
func TestEmbedMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, answer string }{
		{"not JSON", `{"data":[`},
		{"an index out of range", `{"data":[{"index":1,"embedding":[1]}]}`},
		{"an index twice", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`},
		{"bad base64", `{"data":[{"index":0,"embedding":"!!"}]}`},
		{"base64 not of float32s", `{"data":[{"index":0,"embedding":"AAA="}]}`},
		{"a NaN in base64", `{"data":[{"index":0,"embedding":"AADAfw=="}]}`},
		{"a null embedding", `{"data":[{"index":0,"embedding":null}]}`},
		{"no embedding", `{"data":[{"index":0}]}`},
		{"a string among numbers", `{"data":[{"index":0,"embedding":[1,"2"]}]}`},
		{"a null among numbers", `{"data":[{"index":0,"embedding":[1,null]}]}`},
		{"a list of lists", `{"data":[{"index":0,"embedding":[[1,2]]}]}`},
		{"a number past float32", `{"data":[{"index":0,"embedding":[1e39]}]}`},
		{"an object", `{"data":[{"index":0,"embedding":{"a":1}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			c := openai.New(upstream.Config{BaseURL: srv.URL, APIKey: "k", Timeout: fakes.Patient}, upstream.NewHTTPClient())
			_, err := c.Embed(context.Background(), ports.EmbedRequest{UpstreamModel: "m", Inputs: []embedding.Input{{Text: "a"}}})
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindUpstream || !ue.Retryable {
				t.Fatalf("Embed = %v, want a retryable upstream failure", err)
			}
		})
	}
}
