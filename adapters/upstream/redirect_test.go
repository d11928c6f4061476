package upstream_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/anthropic"
	"github.com/switchboard-ai/switchboard/adapters/upstream/deepgram"
	"github.com/switchboard-ai/switchboard/adapters/upstream/elevenlabs"
	"github.com/switchboard-ai/switchboard/adapters/upstream/fal"
	"github.com/switchboard-ai/switchboard/adapters/upstream/gemini"
	"github.com/switchboard-ai/switchboard/adapters/upstream/minimax"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/adapters/upstream/runway"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// secret is every provider's API key in these tests.
const secret = "sk-redirect-secret-0123456789"

// arrival is what a server saw of a request.
type arrival struct {
	path, query string
	header      http.Header
}

// recorder is an httptest server that keeps what arrived, and answers with answer.
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []arrival
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.got = append(r.got, arrival{req.URL.Path, req.URL.RawQuery, req.Header.Clone()})
		r.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

// carries says whether an arrival holds the secret anywhere: a header's value or the query.
func (a arrival) carries() bool {
	for _, vv := range a.header {
		for _, v := range vv {
			if strings.Contains(v, secret) {
				return true
			}
		}
	}
	return strings.Contains(a.query, secret)
}

// TestRedirectKeepsCredentialsHome: whatever header or query key a provider's adapter puts its key in
// (Authorization for OpenAI and Deepgram, x-api-key for Anthropic, xi-api-key for ElevenLabs, x-goog-api-key for
// Gemini, key= in a query), a 307 to another host (another port, another name) arrives without it, the body sent
// again; a redirect within the provider's own origin keeps it, and a signed URL's own query arrives as it was
// written.
func TestRedirectKeepsCredentialsHome(t *testing.T) {
	t.Parallel()
	cfg := func(base string) upstream.Config {
		return upstream.Config{BaseURL: base + "/v1", APIKey: secret, Timeout: fakes.Patient, IdleTimeout: fakes.Patient}
	}
	calls := []struct {
		name string
		call func(ctx context.Context, base string)
	}{
		{"openai speech (Authorization)", func(ctx context.Context, base string) {
			closeAudio(openai.New(cfg(base), upstream.NewHTTPClient()).Synthesize(ctx, fakes.SpeechRequest("tts-1", "alloy", "hi", speech.PCM, nil)))
		}},
		{"deepgram speech (Authorization: Token)", func(ctx context.Context, base string) {
			closeAudio(deepgram.New(cfg(base), upstream.NewHTTPClient()).Synthesize(ctx, fakes.SpeechRequest("aura-2", "thalia", "hi", speech.PCM, nil)))
		}},
		{"elevenlabs speech (xi-api-key)", func(ctx context.Context, base string) {
			closeAudio(elevenlabs.New(cfg(base), upstream.NewHTTPClient()).Synthesize(ctx, fakes.SpeechRequest("eleven_v3", "v1", "hi", speech.PCM, nil)))
		}},
		{"gemini speech (x-goog-api-key)", func(ctx context.Context, base string) {
			closeAudio(gemini.New(cfg(base), upstream.NewHTTPClient()).Synthesize(ctx, fakes.SpeechRequest("tts", "Kore", "hi", speech.PCM, nil)))
		}},
		{"anthropic chat (x-api-key)", func(ctx context.Context, base string) {
			req := fakes.ChatRequest(t, "claude", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			if reply, err := anthropic.New(cfg(base), upstream.NewHTTPClient()).Chat(ctx, req); err == nil {
				reply.Body.Close()
			}
		}},
		{"fal video (Authorization: Key)", func(ctx context.Context, base string) {
			_, _ = fal.New(cfg(base), upstream.NewHTTPClient()).Submit(ctx, videoJob("fal-ai/kling-video/v2.1/standard/text-to-video"))
		}},
		{"runway video (Authorization)", func(ctx context.Context, base string) {
			_, _ = runway.New(cfg(base), upstream.NewHTTPClient()).Submit(ctx, videoJob("gen4_turbo"))
		}},
		{"minimax video (Authorization)", func(ctx context.Context, base string) {
			_, _ = minimax.New(cfg(base), upstream.NewHTTPClient()).Submit(ctx, videoJob("MiniMax-Hailuo-02"))
		}},
		{"gemini video download (x-goog-api-key)", func(ctx context.Context, base string) {
			c, err := gemini.New(cfg(base), upstream.NewHTTPClient()).Download(ctx, "", video.Output{Ref: base + "/v1/files/f:download?alt=media"}, "bytes=0-9")
			if err == nil {
				c.Body.Close()
			}
		}},
	}
	for _, tt := range calls {
		for _, where := range []string{"another port", "another name", "another port, key in the query", "the same origin"} {
			t.Run(tt.name+" to "+where, func(t *testing.T) {
				t.Parallel()
				other := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
				target := other.URL
				if where == "another name" {
					target = strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
				}
				var origin *recorder
				origin = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
					switch {
					case strings.HasPrefix(r.URL.Path, "/moved"):
						w.WriteHeader(http.StatusTeapot)
					case where == "the same origin":
						http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusTemporaryRedirect)
					case strings.Contains(where, "query"):
						http.Redirect(w, r, target+"/storage?key="+secret+"&X-Goog-Signature=ab%2Fc&alt=sse", http.StatusTemporaryRedirect)
					default:
						http.Redirect(w, r, target+"/storage"+r.URL.Path+"?X-Goog-Signature=ab%2Fc", http.StatusTemporaryRedirect)
					}
				})
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				tt.call(ctx, origin.URL)
				from := origin.arrivals()
				if len(from) == 0 || !from[0].carries() {
					t.Fatalf("the provider's origin got %+v, want the call with its key", from)
				}
				if where == "the same origin" {
					if len(from) != 2 || !strings.HasPrefix(from[1].path, "/moved") || !from[1].carries() {
						t.Fatalf("within the origin: %+v, want the redirected call with its key", from)
					}
					return
				}
				to := other.arrivals()
				if len(to) != 1 {
					t.Fatalf("the other host got %d requests", len(to))
				}
				if to[0].carries() {
					t.Fatalf("the other host got the key: %s?%s %v", to[0].path, to[0].query, to[0].header)
				}
				wantQuery := "X-Goog-Signature=ab%2Fc"
				if strings.Contains(where, "query") {
					wantQuery += "&alt=sse"
				}
				if to[0].query != wantQuery {
					t.Fatalf("the other host got the query %q, want %q", to[0].query, wantQuery)
				}
			})
		}
	}
}

func closeAudio(a ports.Audio, err error) {
	if err == nil {
		a.Body.Close()
	}
}

// videoJob is a text-to-video job of upstream model m.
func videoJob(m string) ports.VideoSubmission {
	return ports.VideoSubmission{UpstreamModel: m, Request: video.Request{Model: "m", Prompt: "a cat"}}
}
