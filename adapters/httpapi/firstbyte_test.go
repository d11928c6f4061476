package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

// The HTTP layer on a call's way to its first byte, alone: the gin engine with every middleware an inference call
// goes through, served by net/http's server on a loopback connection, in front of use cases that answer at once. A raw
// client on one keep-alive connection sends a request as an OpenAI SDK does and reads its answer whole, so that
// what a run allocates is the server's.

// stubAuth admits every key as one inference key with a rate limit, as the key cache does once warm.
type stubAuth struct{}

func (stubAuth) Authenticate(context.Context, string) (account.Principal, error) {
	return account.Principal{KeyHash: "5e2bf57d3f40c4b6df69daf1936cb766f832374b4fc0259a7cbff06e2f70f269", KeyName: "bench",
		WorkspaceID: "00000000-0000-0000-0000-000000000001", OrganizationID: "org", RateLimit: 6000}, nil
}

// stubLimiter admits every call, with the headers a limit sends.
type stubLimiter struct{}

func (stubLimiter) Allow(context.Context, string, int) ports.RateDecision {
	return ports.RateDecision{Allowed: true, Limit: 6000, Remaining: 5999, Reset: time.Unix(1_700_000_060, 0)}
}

// stubChat streams one token, flushes it (the first byte), then ends the stream with its usage.
type stubChat struct{}

var stubUsage = chat.Usage{PromptTokens: 12, CompletionTokens: 1}

func (stubChat) Complete(_ context.Context, _ account.Principal, _ ports.ChatBody, _ generation.Caller, sink ports.ChatSink) (string, error) {
	const id = "gen-1700000000-AbCdEfGhIjKlMnOpQrSt"
	sink.Start(ports.ChatHead{GenerationID: id, Model: "openai/gpt-4o-mini", Provider: "OpenAI", Created: 1_700_000_000,
		Stream: true, IncludeUsage: true})
	if err := sink.Chunk(chat.Chunk{Content: "Hello"}); err != nil {
		return id, err
	}
	if err := sink.Flush(); err != nil {
		return id, err
	}
	if err := sink.Chunk(chat.Chunk{FinishReason: "stop", NativeFinishReason: "stop"}); err != nil {
		return id, err
	}
	return id, sink.Finish(&chat.Result{Usage: &stubUsage}, 15)
}

func (stubChat) CountTokens(context.Context, account.Principal, ports.ChatBody) (ports.TokenCount, error) {
	return ports.TokenCount{InputTokens: stubUsage.PromptTokens}, nil
}

// stubSpeech streams one clip of audio and flushes it.
type stubSpeech struct{ clip []byte }

func (s stubSpeech) Synthesize(_ context.Context, _ account.Principal, _ speech.Request, _ generation.Caller, sink ports.AudioSink) (string, error) {
	const id = "gen-1700000000-AbCdEfGhIjKlMnOpQrSt"
	sink.Start("audio/mpeg", id)
	if err := sink.Write(s.clip); err != nil {
		return id, err
	}
	return id, sink.Flush()
}

// firstByteRig is a server and a client connection to it.
type firstByteRig struct {
	conn net.Conn
	buf  []byte
}

func newFirstByteRig(tb testing.TB) *firstByteRig {
	tb.Helper()
	log := slog.New(LogHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))
	// The configuration's defaults (wire): the timeouts set deadlines and timers on every request.
	cfg := Config{BasePath: "/api/v1", MaxBodyBytes: 10 << 20, ReadTimeout: 60 * time.Second,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, ShutdownTimeout: 5 * time.Second}
	s := NewServer(cfg, log, nil, stubAuth{}, stubLimiter{}, 0, TokenLimits{}, ports.NoMetrics{}, MetricsEndpoint{}, Tracing{},
		Handlers{Chat: NewChatHandler(stubChat{}), Speech: NewSpeechHandler(stubSpeech{clip: make([]byte, 4<<10)})})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		stop()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return &firstByteRig{conn: conn, buf: make([]byte, 64<<10)}
}

// sdkRequest is a POST as the OpenAI JavaScript SDK sends one, with its headers.
func sdkRequest(path, body string) []byte {
	return []byte("POST /api/v1" + path + " HTTP/1.1\r\nHost: gateway.internal:8080\r\n" +
		"Accept: application/json\r\nAuthorization: Bearer sk-sb-v1-0123456789abcdef0123456789abcdef0123456789abcdef\r\n" +
		"Content-Type: application/json\r\nUser-Agent: OpenAI/JS 4.104.0\r\nX-Stainless-Lang: js\r\n" +
		"X-Stainless-Package-Version: 4.104.0\r\nX-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\n" +
		"X-Stainless-Runtime: node\r\nX-Stainless-Runtime-Version: v22.11.0\r\nX-Stainless-Retry-Count: 0\r\n" +
		"Accept-Encoding: gzip,deflate\r\nConnection: keep-alive\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

var (
	chatRequest = sdkRequest("/chat/completions", `{"model":"openai/gpt-4o-mini","stream":true,`+
		`"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello."}]}`)
	speechRequest = sdkRequest("/audio/speech", `{"model":"openai/tts-1","input":"Hello there.","voice":"alloy",`+
		`"response_format":"mp3"}`)
)

var (
	okStatus   = []byte("HTTP/1.1 200 OK\r\n")
	terminator = []byte("\r\n0\r\n\r\n")
)

// call sends req and reads its chunked answer to its end.
func (r *firstByteRig) call(tb testing.TB, req []byte) {
	if _, err := r.conn.Write(req); err != nil {
		tb.Fatal(err)
	}
	n := 0
	for n < len(terminator) || !bytes.HasSuffix(r.buf[:n], terminator) {
		k, err := r.conn.Read(r.buf[n:])
		if err != nil {
			tb.Fatalf("after %q: %v", r.buf[:n], err)
		}
		n += k
	}
	if !bytes.HasPrefix(r.buf[:n], okStatus) {
		tb.Fatalf("answer %q", r.buf[:n])
	}
}

// BenchmarkFirstByte is one streamed chat call and one speech call through the HTTP layer (see firstByteRig).
func BenchmarkFirstByte(b *testing.B) {
	for _, tc := range []struct {
		name string
		req  []byte
	}{{"chat", chatRequest}, {"speech", speechRequest}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newFirstByteRig(b)
			r.call(b, tc.req)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.call(b, tc.req)
			}
		})
	}
}

// TestFirstByteAllocations guards what the HTTP layer allocates for a call, server side (see firstByteRig): for
// a streamed chat call 70 when each middleware made its own context value and slices for its headers, the server
// copied the request for its context and a stream armed a timer of its own; 60 on net/http's server, whose
// reading of the request's head, its contexts and its background read take about 35 of them; 80 since the body
// is decoded by encoding/json into its fields (20, where a scanner written by hand split it in 1), and speech's
// 72 (15 more than its scanner). Under the race detector the bound is raceSlack higher.
func TestFirstByteAllocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  []byte
		max  float64
	}{{"chat", chatRequest, 80}, {"speech", speechRequest, 72}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFirstByteRig(t)
			r.call(t, tc.req)
			if n := testing.AllocsPerRun(200, func() { r.call(t, tc.req) }); n > tc.max+raceSlack {
				t.Fatalf("%v allocations per call, want at most %v", n, tc.max)
			}
		})
	}
}
