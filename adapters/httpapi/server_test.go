package httpapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/testcert"
)

// The server as serve runs it (Serve on a listener of its own, every middleware, tracing on), in front of use
// cases that answer at once: what net/http's server does for the API.

// testConfig is the configuration's defaults (wire).
func testConfig() Config {
	return Config{BasePath: "/api/v1", MaxBodyBytes: 10 << 20, ReadTimeout: 60 * time.Second, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 120 * time.Second, ShutdownTimeout: 5 * time.Second, H2C: true}
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// testServer is a server serving until the test ends (or stop), and its address.
type testServer struct {
	*Server
	addr string
	ln   *countingListener
	// stop ends Serve's context, as SIGTERM does, and returns what Serve returned; once.
	stop func() error
}

// startServer serves the stub use cases under cfg, with tracing on; extra adds routes to the engine (under every
// middleware) before it serves.
func startServer(tb testing.TB, cfg Config, extra func(e *gin.Engine)) *testServer {
	tb.Helper()
	log := slog.New(LogHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))
	s := NewServer(cfg, log, nil, stubAuth{}, stubLimiter{}, 0, TokenLimits{}, ports.NoMetrics{}, MetricsEndpoint{},
		Tracing{Provider: noop.NewTracerProvider(), Propagator: propagation.TraceContext{}},
		Handlers{Chat: NewChatHandler(stubChat{}), Responses: NewResponsesHandler(stubChat{}, cfg), Speech: NewSpeechHandler(stubSpeech{clip: make([]byte, 16<<10)})})
	if extra != nil {
		extra(s.engine)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, cl) }()
	var once sync.Once
	var served error
	stop := func() error {
		once.Do(func() {
			cancel()
			served = <-done
		})
		return served
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	return &testServer{Server: s, addr: ln.Addr().String(), ln: cl, stop: stop}
}

// speechCall makes a speech call as an SDK does and reads its answer whole.
func speechCall(ctx context.Context, client *http.Client, base string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/audio/speech",
		strings.NewReader(`{"model":"openai/tts-1","input":"Hello there.","voice":"alloy","response_format":"mp3"}`))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer sk-sb-v1-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// TestWebSocketUpgrade: GET /responses takes its connection over (Hijack, through gin's writer under every
// middleware, tracing included) and speaks the Responses API's WebSocket mode on it: the middleware ran (the 101
// carries the request id), a warm-up (generate false) is answered with a response that completed empty, a call
// continuing it streams its events as messages numbered in order, and a message that is no response.create gets an
// error event while the connection stays open.
func TestWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	srv := startServer(t, testConfig(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+srv.addr+"/api/v1/responses", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer sk-test"}, "Openai-Beta": {"responses_websockets=2026-02-06"}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req-") {
		t.Fatalf("upgrade answered %d with X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	type event struct {
		Type     string `json:"type"`
		Seq      int    `json:"sequence_number"`
		Status   int    `json:"status"`
		Delta    string `json:"delta"`
		Response struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"response"`
		Error struct {
			Param string `json:"param"`
		} `json:"error"`
	}
	send := func(msg string, until string) []event {
		t.Helper()
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		var got []event
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ev event
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if got = append(got, ev); ev.Type == until {
				return got
			}
		}
	}
	warm := send(`{"type":"response.create","model":"m","input":"hi","tools":[],"generate":false}`, "response.completed")
	if len(warm) != 2 || warm[0].Type != "response.created" || warm[1].Response.Status != "completed" || warm[1].Response.ID == "" {
		t.Fatalf("warm-up answered %+v", warm)
	}
	events := send(`{"type":"response.create","model":"m","input":[{"role":"user","content":"hi"}],"previous_response_id":"`+
		warm[1].Response.ID+`"}`, "response.completed")
	var types []string
	for i, ev := range events {
		types = append(types, ev.Type)
		if ev.Seq != i {
			t.Errorf("event %d (%s) numbered %d", i, ev.Type, ev.Seq)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed"}
	if !slices.Equal(types, want) || events[4].Delta != "Hello" {
		t.Fatalf("events %v (delta %q), want %v", types, events[4].Delta, want)
	}
	bad := send(`{"type":"response.cancel"}`, "error")
	if bad[0].Status != http.StatusBadRequest || bad[0].Error.Param != "type" {
		t.Fatalf("a message that is no response.create: %+v", bad[0])
	}
	for _, field := range []string{"generate", "stream"} {
		bad := send(`{"type":"response.create","model":"m","input":"hi","`+field+`":"x"}`, "error")
		if bad[0].Status != http.StatusBadRequest || bad[0].Error.Param != field {
			t.Fatalf("%s not a boolean: %+v", field, bad[0])
		}
	}
	if err := conn.Close(websocket.StatusNormalClosure, "done"); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeRequired: a request to upgrade any route but GET /responses to WebSocket, and GET /responses without
// one, are answered 426 (Codex falls back to HTTP at once on it, where it retries a 404 for seconds).
func TestUpgradeRequired(t *testing.T) {
	t.Parallel()
	srv := startServer(t, testConfig(), nil)
	for _, tt := range []struct{ method, path, upgrade string }{
		{"GET", "/api/v1/chat/completions", "websocket"},
		{"POST", "/api/v1/responses", "websocket"},
		{"GET", "/api/v1/models", "WebSocket"},
		{"GET", "/api/v1/responses", ""},
		{"GET", "/api/v1/responses", "h2c"},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tt.method, "http://"+srv.addr+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk-test")
		if tt.upgrade != "" {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", tt.upgrade)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired {
			t.Errorf("%s %s (Upgrade %q): %d, want 426", tt.method, tt.path, tt.upgrade, resp.StatusCode)
		}
	}
}

// TestWebSocketShutdown: the server's shutdown closes an open connection cleanly (going away), and returns.
func TestWebSocketShutdown(t *testing.T) {
	t.Parallel()
	srv := startServer(t, testConfig(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+srv.addr+"/api/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-test"}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","model":"m","input":"hi","generate":false}`)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.stop() }()
	_, _, err = conn.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusGoingAway {
		t.Fatalf("read after shutdown: %v (status %d), want going away", err, status)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestProtocols: HTTP/1.1 always; h2c (prior knowledge) on a plain listener when H2C is on, not when off; over
// TLS, HTTP/2 or HTTP/1.1 as the client negotiates (ALPN), whatever H2C says.
func TestProtocols(t *testing.T) {
	t.Parallel()
	pair := testcert.Write(t)
	var h1, h2c, h2 http.Protocols
	h1.SetHTTP1(true)
	h2c.SetUnencryptedHTTP2(true)
	h2.SetHTTP2(true)
	for _, tt := range []struct {
		name      string
		tls, h2c  bool
		client    http.Protocols
		wantProto string // "" when the call must fail
	}{
		{"HTTP/1.1", false, true, h1, "HTTP/1.1"},
		{"h2c", false, true, h2c, "HTTP/2.0"},
		{"h2c turned off", false, false, h2c, ""},
		{"HTTP/1.1 with h2c off", false, false, h1, "HTTP/1.1"},
		{"TLS, HTTP/2", true, false, h2, "HTTP/2.0"},
		{"TLS, HTTP/1.1", true, true, h1, "HTTP/1.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.H2C = tt.h2c
			scheme := "http://"
			if tt.tls {
				cfg.TLSCertFile, cfg.TLSKeyFile, scheme = pair.CertFile, pair.KeyFile, "https://"
			}
			srv := startServer(t, cfg, nil)
			client := &http.Client{Transport: &http.Transport{Protocols: &tt.client, TLSClientConfig: &tls.Config{RootCAs: pair.Roots}}}
			defer client.CloseIdleConnections()
			resp, body, err := speechCall(t.Context(), client, scheme+srv.addr)
			if tt.wantProto == "" {
				if err == nil {
					t.Fatalf("answered %s %d", resp.Proto, resp.StatusCode)
				}
				return
			}
			if err != nil || resp.StatusCode != http.StatusOK || resp.Proto != tt.wantProto || len(body) != 16<<10 {
				t.Fatalf("%v: %+v, %d bytes", err, resp, len(body))
			}
		})
	}
}

// TestH2CMultiplexes: 100 concurrent speech calls over one h2c connection, as a load balancer that multiplexes
// sends them, all answered whole.
func TestH2CMultiplexes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, testConfig(), nil)
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &h2c}}
	defer client.CloseIdleConnections()
	base := "http://" + srv.addr
	if _, _, err := speechCall(t.Context(), client, base); err != nil { // the connection, before the calls share it
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			resp, body, err := speechCall(t.Context(), client, base)
			switch {
			case err != nil:
				errs <- err
			case resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || len(body) != 16<<10:
				errs <- errors.New(resp.Proto + " " + resp.Status)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := srv.ln.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestRefusedBeforeRouting: what net/http refuses before any handler runs, it answers itself in plain text and
// closes (the envelope is the router's and the handlers'); a request head that does not come whole within
// ReadHeaderTimeout is closed without an answer, and a keep-alive connection idle past IdleTimeout after its
// answer is closed. The timeouts are short on a server of their own, so that a loaded machine's slow read of a
// large head is never taken for one.
func TestRefusedBeforeRouting(t *testing.T) {
	t.Parallel()
	srv := startServer(t, testConfig(), nil)
	cfg := testConfig()
	cfg.ReadHeaderTimeout, cfg.IdleTimeout = 200*time.Millisecond, 200*time.Millisecond
	quick := startServer(t, cfg, nil)
	for _, tt := range []struct {
		name, request string
		timeouts      bool // on the server with short timeouts
		status        int  // of the last answer read; 0: the connection is closed with nothing (more) to read
	}{
		{"headers past the limit", "GET /api/v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", false, 431},
		{"bad percent-escape", "GET /api/v1/presets/%zz HTTP/1.1\r\nHost: x\r\n\r\n", false, 400},
		{"no Host", "GET /api/v1/models HTTP/1.1\r\n\r\n", false, 400},
		{"unknown transfer coding", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", false, 501},
		{"empty Content-Length", "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n", false, 400},
		{"head not done in time", "GET /api/v1/models HTTP/1.1\r\nHost: x\r\n", true, 0},
		{"idle after an answer", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := srv.addr
			if tt.timeouts {
				addr = quick.addr
			}
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			go func() { _, _ = io.WriteString(conn, tt.request) }() // the server may answer before it has read it all
			br := bufio.NewReader(conn)
			if tt.status == 0 {
				if strings.HasSuffix(tt.request, "\r\n\r\n") { // a whole request: its answer comes first
					resp, err := http.ReadResponse(br, nil)
					if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
						t.Fatalf("%v %v, want a 200 that keeps the connection", resp, err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
				}
				if b, err := io.ReadAll(br); err != nil || len(b) != 0 {
					t.Fatalf("read %q %v, want the connection closed", b, err)
				}
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !resp.Close {
				t.Fatalf("%d %v %q, want a plain %d that closes", resp.StatusCode, resp.Header, body, tt.status)
			}
		})
	}
}

// TestShutdown: on HTTP/1.1 and h2c alike, a shutdown lets a request in flight finish within the shutdown timeout
// (drain), and past it cuts the request with domain.ErrShutdown as its context's cause, which tells the pipeline
// that the gateway, not the caller, ended the call.
func TestShutdown(t *testing.T) {
	t.Parallel()
	var h1, h2c http.Protocols
	h1.SetHTTP1(true)
	h2c.SetUnencryptedHTTP2(true)
	for _, proto := range []struct {
		name string
		p    http.Protocols
	}{{"HTTP/1.1", h1}, {"h2c", h2c}} {
		for _, cut := range []bool{false, true} {
			t.Run(proto.name+map[bool]string{false: ", drained", true: ", cut"}[cut], func(t *testing.T) {
				t.Parallel()
				cfg := testConfig()
				cfg.ShutdownTimeout = time.Hour
				if cut {
					cfg.ShutdownTimeout = 100 * time.Millisecond
				}
				entered, release, cause := make(chan struct{}), make(chan struct{}), make(chan error, 1)
				srv := startServer(t, cfg, func(e *gin.Engine) {
					e.GET("/api/v1/test/slow", func(c *gin.Context) {
						close(entered)
						select {
						case <-release:
							c.String(http.StatusOK, "done")
						case <-c.Request.Context().Done():
							cause <- context.Cause(c.Request.Context())
						}
					})
				})
				client := &http.Client{Transport: &http.Transport{Protocols: &proto.p}}
				defer client.CloseIdleConnections()
				answered := make(chan string, 1)
				go func() {
					resp, err := client.Get("http://" + srv.addr + "/api/v1/test/slow")
					if err != nil {
						answered <- err.Error()
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					answered <- resp.Proto + " " + string(b)
				}()
				<-entered
				stopped := make(chan error, 1)
				go func() { stopped <- srv.stop() }()
				if cut {
					if err := <-cause; !errors.Is(err, domain.ErrShutdown) {
						t.Fatalf("the request was cut with %v, want domain.ErrShutdown", err)
					}
				} else {
					// Shutdown has begun once the listener refuses connections; the request is still in flight.
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
						c, err := net.Dial("tcp", srv.addr)
						if err != nil {
							break
						}
						c.Close()
						if time.Now().After(deadline) {
							t.Fatal("still accepting connections 10 s after the shutdown began")
						}
					}
					close(release)
					if got, want := <-answered, map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[proto.name == "h2c"]+" done"; got != want {
						t.Fatalf("answered %q, want %q", got, want)
					}
				}
				if err := <-stopped; err != nil {
					t.Fatalf("Serve: %v", err)
				}
			})
		}
	}
}

// levels is a slog handler that keeps the level and message of every record.
type levels struct {
	mu   sync.Mutex
	seen []string
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Level.String()+" "+r.Message)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

// TestServerErrors: what net/http's server reports itself goes to the log, a failed TLS handshake (which any
// client may cause) at debug, anything else at warn.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	h := &levels{}
	w := serverErrors{slog.New(h)}
	for _, line := range []string{"http: TLS handshake error from 10.0.0.1:5555: EOF\n", "http: superfluous response.WriteHeader call\n"} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"DEBUG http: TLS handshake error from 10.0.0.1:5555: EOF", "WARN http: superfluous response.WriteHeader call"}
	if strings.Join(h.seen, "|") != strings.Join(want, "|") {
		t.Fatalf("logged %q, want %q", h.seen, want)
	}
}

// TestWebSocketLimits: a connection idle past websocket.idle_timeout is closed cleanly, saying why, and a message
// past websocket.max_message_bytes closes it as too big.
func TestWebSocketLimits(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.WebSocket = WebSocketConfig{MaxMessageBytes: 256, IdleTimeout: 50 * time.Millisecond}
	srv := startServer(t, cfg, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	dial := func() *websocket.Conn {
		conn, _, err := websocket.Dial(ctx, "ws://"+srv.addr+"/api/v1/responses",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-test"}}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { conn.CloseNow() })
		return conn
	}
	_, _, err := dial().Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || ce.Reason != "idle for 50ms" {
		t.Fatalf("an idle connection: %v", err)
	}
	big := dial()
	if err := big.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create","input":"`+strings.Repeat("x", 300)+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := big.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("a message past the bound: %v", err)
	}
}
