// Package httpapi is the Gin adapter: routes, request and response shapes, authentication and the error envelope.
package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/domain/preset"
	"github.com/switchboard-ai/switchboard/ports"
)

// Config is the HTTP server's part of the configuration.
type Config struct {
	Addr              string
	BasePath          string
	MaxBodyBytes      int64
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration
	// PprofAddr, when set, is a listener of its own serving Go's runtime profiles (net/http/pprof) for operators;
	// never the API's listener.
	PprofAddr string
	// TLSCertFile and TLSKeyFile, when set (both or neither), serve the API over TLS, HTTP/2 or HTTP/1.1 as the
	// caller negotiates (ALPN).
	TLSCertFile, TLSKeyFile string
	// H2C serves unencrypted HTTP/2 (prior knowledge, as load balancers that multiplex speak it) beside
	// HTTP/1.1 on a plain listener.
	H2C bool
	// WebSocket bounds the Responses API's WebSocket connections.
	WebSocket WebSocketConfig
}

// Readiness reports whether the server can do its work — inference calls would be served: the spool takes
// records, the database is reachable, its schema current — and details that /readyz shows beside its status (the
// spool's depth).
type Readiness interface {
	Ready(ctx context.Context) error
	Details() map[string]any
}

// MetricsEndpoint is where the metrics are served: GET /metrics on the main listener when Addr is empty, on a
// listener of their own at Addr otherwise; not at all without a Handler (metrics turned off).
type MetricsEndpoint struct {
	Handler http.Handler
	Addr    string
}

// Handlers are the route handlers of every module.
type Handlers struct {
	Keys        *KeysHandler
	Members     *MembersHandler
	Workspaces  *WorkspacesHandler
	Generations *GenerationsHandler
	Activity    *ActivityHandler
	Presets     *PresetsHandler
	Guardrails  *GuardrailsHandler
	Speech      *SpeechHandler
	Chat        *ChatHandler
	Responses   *ResponsesHandler
	Embeddings  *EmbeddingsHandler
	Credits     *CreditsHandler
	Videos      *VideosHandler
	Models      *ModelsHandler
	Console     Console
}

// Console is the web console (adapters/console), served under /console/ beside the API.
type Console struct{ http.Handler }

var ginMode sync.Once

// Server is the gateway's HTTP server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	engine  *gin.Engine
	metrics MetricsEndpoint
	// conns are the WebSocket connections the server drains at shutdown, beside its requests.
	conns *connections
}

func NewServer(cfg Config, log *slog.Logger, ready Readiness, auth ports.Authenticator, rl ports.RateLimiter,
	rpm DefaultRateLimit, tokens TokenLimits, metrics ports.Metrics, me MetricsEndpoint, tracing Tracing, h Handlers) *Server {
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	e := gin.New()
	e.HandleMethodNotAllowed = true
	// No redirects to "fixed" paths (a trailing slash, ..%2F): they answered in HTML. Such paths are a 404 here.
	e.RedirectTrailingSlash, e.RedirectFixedPath = false, false
	e.ContextWithFallback = true
	e.Use(observe(metrics), requestID(), anthropicErrors(cfg.BasePath))
	if tracing.Provider != nil {
		e.Use(traceRequests(tracing))
	}
	e.Use(accessLog(log), recovery(), upgradeRefused(cfg.BasePath+"/responses"))
	// The web console (its own pages, not the API: no envelope, no OpenAPI) answers every path under /console/
	// that the API's routes leave.
	e.NoRoute(func(c *gin.Context) {
		if p := c.Request.URL.Path; h.Console.Handler != nil && (p == "/console" || strings.HasPrefix(p, "/console/")) {
			h.Console.ServeHTTP(c.Writer, c.Request)
			return
		}
		writeError(c, errNoRoute)
	})
	e.NoMethod(func(c *gin.Context) { respond(c, http.StatusMethodNotAllowed, errNoMethod) })

	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", readyz(ready, log))
	if me.Handler != nil && me.Addr == "" {
		e.GET("/metrics", gin.WrapH(me.Handler))
	}

	api := e.Group(cfg.BasePath, bodyLimit(cfg.MaxBodyBytes))
	doc, err := OpenAPI(cfg.BasePath)
	if err != nil {
		panic(err) // the embedded document is checked by the tests
	}
	api.GET("/openapi.json", serveOpenAPI(doc))
	mount(api, guard{auth: auth}, rateLimit(rl, rpm, metrics), tokenLimit(tokens, metrics), h)
	srv := &Server{cfg: cfg, log: log, engine: e, metrics: me}
	if h.Responses != nil {
		srv.conns = h.Responses.conns
		// A WebSocket connection's calls are admitted one by one, as the upgrade was.
		h.Responses.admit = func(ctx context.Context, p account.Principal) error {
			if _, err := allowRate(ctx, rl, rpm, metrics, p); err != nil {
				return err
			}
			_, _, err := admitTokens(ctx, tokens, metrics, p)
			return err
		}
	}
	return srv
}

// mount is the whole route table, with the kind of key each route takes.
func mount(api *gin.RouterGroup, g guard, limited, tokens gin.HandlerFunc, h Handlers) {
	anyK, mgmt := g.require(anyKey), g.require(managementKey)
	infer := []gin.HandlerFunc{g.require(inferenceKey), limited} // inference: inference keys, rate limited
	// inference whose usage is tokens: also within the key's token limits
	metered := []gin.HandlerFunc{g.require(inferenceKey), limited, tokens}

	api.GET("/key", anyK, h.Keys.current)
	api.POST("/keys", mgmt, h.Keys.create)
	api.GET("/keys", mgmt, h.Keys.list)
	api.GET("/keys/:hash", mgmt, h.Keys.get)
	api.PATCH("/keys/:hash", mgmt, h.Keys.update)
	api.DELETE("/keys/:hash", mgmt, h.Keys.delete)

	api.POST("/audio/speech", append(infer, h.Speech.create)...)
	api.POST("/chat/completions", append(metered, h.Chat.create)...)
	api.POST(messagesPath, append(metered, h.Chat.messages)...)
	api.POST(countTokensPath, append(infer, h.Chat.countTokens)...)
	api.POST("/responses", append(metered, h.Responses.create)...)
	api.GET("/responses", append(metered, h.Responses.connect)...)
	api.POST("/embeddings", append(metered, h.Embeddings.create)...)
	api.GET("/embeddings/models", anyK, h.Models.embeddingModels)
	api.POST("/videos", append(infer, h.Videos.create)...)
	api.GET("/videos/models", anyK, h.Videos.models)
	api.GET("/videos/:jobId", anyK, h.Videos.get)
	api.GET("/videos/:jobId/content", anyK, h.Videos.content)
	api.GET("/credits", mgmt, h.Credits.get)
	api.GET("/models", anyK, h.Models.list)
	api.GET("/models/count", anyK, h.Models.count)
	api.GET("/models/:author/:slug/endpoints", anyK, h.Models.endpoints)
	api.GET("/providers", anyK, h.Models.providers)

	api.GET("/organization/members", mgmt, h.Members.list)
	api.POST("/organization/members", mgmt, h.Members.create)

	api.GET("/workspaces", mgmt, h.Workspaces.list)
	api.POST("/workspaces", mgmt, h.Workspaces.create)
	ws := h.Workspaces
	api.GET("/workspaces/:workspace", mgmt, ws.get)
	api.PATCH("/workspaces/:workspace", mgmt, ws.update)
	api.DELETE("/workspaces/:workspace", mgmt, ws.delete)
	api.GET("/workspaces/:workspace/members", mgmt, ws.members)
	api.POST("/workspaces/:workspace/members/add", mgmt, ws.addMembers)
	api.POST("/workspaces/:workspace/members/remove", mgmt, ws.removeMembers)
	api.GET("/workspaces/:workspace/budgets", mgmt, ws.budgets)
	api.GET("/workspaces/:workspace/budgets/:interval", mgmt, ws.budget)
	api.PUT("/workspaces/:workspace/budgets/:interval", mgmt, ws.setBudget)
	api.DELETE("/workspaces/:workspace/budgets/:interval", mgmt, ws.deleteBudget)

	api.GET("/generation", anyK, h.Generations.get)
	api.GET("/generation/content", anyK, h.Generations.content) // management only: the use case answers 403
	api.GET("/generations", anyK, h.Generations.list)           // ours: a key lists its workspace's
	// management keys, and the key that made the generation: the use case answers 404 to others
	api.POST("/generation/feedback", anyK, h.Generations.submitFeedback)
	api.GET("/activity", mgmt, h.Activity.get)

	// Presets: any key of the workspace reads and writes; a management key may name workspace_id.
	api.GET("/presets", anyK, h.Presets.list)
	api.GET("/presets/:slug", anyK, h.Presets.get)
	api.PATCH("/presets/:slug", anyK, h.Presets.update)
	api.GET("/presets/:slug/versions", anyK, h.Presets.versions)
	api.GET("/presets/:slug/versions/:version", anyK, h.Presets.version)
	api.POST("/presets/:slug/chat/completions", anyK, h.Presets.createFrom(preset.ChatCompletions))
	api.POST("/presets/:slug/messages", anyK, h.Presets.createFrom(preset.Messages))
	api.POST("/presets/:slug/responses", anyK, h.Presets.createFrom(preset.Responses))

	gr := h.Guardrails
	api.POST("/guardrails", mgmt, gr.create)
	api.GET("/guardrails", mgmt, gr.list)
	api.GET("/guardrails/assignments/members", mgmt, gr.memberAssignments)
	api.GET("/guardrails/assignments/keys", mgmt, gr.keyAssignments)
	api.GET("/guardrails/:id", mgmt, gr.get)
	api.PATCH("/guardrails/:id", mgmt, gr.update)
	api.DELETE("/guardrails/:id", mgmt, gr.delete)
	api.GET("/guardrails/:id/assignments/members", mgmt, gr.memberAssignments)
	api.POST("/guardrails/:id/assignments/members", mgmt, gr.bulk("member_user_ids", "assigned_count", gr.assignMembers))
	api.POST("/guardrails/:id/assignments/members/remove", mgmt, gr.bulk("member_user_ids", "unassigned_count", gr.unassignMembers))
	api.GET("/guardrails/:id/assignments/keys", mgmt, gr.keyAssignments)
	api.POST("/guardrails/:id/assignments/keys", mgmt, gr.bulk("key_hashes", "assigned_count", gr.assignKeys))
	api.POST("/guardrails/:id/assignments/keys/remove", mgmt, gr.bulk("key_hashes", "unassigned_count", gr.unassignKeys))
}

// drainConnections closes the WebSocket connections (net/http's Shutdown does not know them): each once its
// running call is over.
func (s *Server) drainConnections(ctx context.Context) error {
	if s.conns == nil {
		return nil
	}
	return s.conns.Shutdown(ctx)
}

// Handler is the server's http.Handler, for tests and benchmarks.
func (s *Server) Handler() http.Handler { return s.engine }

// Run serves until ctx ends, then stops accepting connections and lets in-flight requests finish within the
// shutdown timeout.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened. Metrics with an address of their own, and the profiles, are
// served beside it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.metrics.Handler != nil && s.metrics.Addr != "" {
		stop, err := s.serveAside("metrics.addr", s.metrics.Addr, metricsMux(s.metrics.Handler), "/metrics")
		if err != nil {
			return err
		}
		defer stop()
	}
	if s.cfg.PprofAddr != "" {
		stop, err := s.serveAside("server.pprof_addr", s.cfg.PprofAddr, pprofMux(), "/debug/pprof/")
		if err != nil {
			return err
		}
		defer stop()
	}

	// Requests outlive ctx (they drain on shutdown) until the shutdown timeout cuts them, with ErrShutdown as the
	// cause, so that a call cut this way is told apart from a caller who left.
	base, cut := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cut(nil)
	srv := s.httpServer(base)
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLSCertFile != "" {
			errc <- srv.ServeTLS(ln, s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	s.log.Info("listening", "addr", ln.Addr().String(), "base_path", s.cfg.BasePath, "tls", s.cfg.TLSCertFile != "",
		"h2c", s.cfg.H2C && s.cfg.TLSCertFile == "")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining in-flight requests", "timeout", s.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- s.drainConnections(sctx) }()
	err := srv.Shutdown(sctx)
	if derr := <-drained; err == nil {
		err = derr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Cut what is still running, and give it a moment to record what it delivered before the connections go.
		s.log.Warn("shutdown timeout reached; cutting the requests still running")
		cut(domain.ErrShutdown)
		gctx, gcancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer gcancel()
		if srv.Shutdown(gctx) != nil {
			return srv.Close()
		}
		return nil
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// httpServer is net/http's server for the API, every request's context under base. It speaks HTTP/1.1, and
// HTTP/2 over TLS when a certificate is configured or in the clear (h2c) when H2C is on. What it refuses before
// any handler runs (a malformed request line or header, headers past MaxHeaderBytes: 431, an unknown transfer
// coding: 501) it answers itself, in plain text; every answer of the router and the handlers is the envelope.
func (s *Server) httpServer(base context.Context) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	if s.cfg.TLSCertFile != "" {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(s.cfg.H2C)
	}
	return &http.Server{
		Handler:           s.engine,
		ReadTimeout:       s.cfg.ReadTimeout,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    http.DefaultMaxHeaderBytes,
		Protocols:         &protocols,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          log.New(serverErrors{s.log}, "", 0),
	}
}

// serverErrors takes what net/http's server reports itself (never a request's header or body) into the log: a
// TLS handshake that failed (a scanner, a client that gave up, a plain HTTP request on the TLS port) at debug, as
// any client can cause one; anything else (a failed accept, a superfluous WriteHeader, HTTP/2 errors) at warn.
type serverErrors struct{ log *slog.Logger }

func (e serverErrors) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	e.log.Log(context.Background(), level, msg, "source", "net/http")
	return len(p), nil
}

// serveAside serves h on a listener of its own at addr (the setting names it in errors) until stop is called.
func (s *Server) serveAside(setting, addr string, h http.Handler, path string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", setting, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(serverErrors{s.log}, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	s.log.Info("serving "+path, "addr", ln.Addr().String(), "setting", setting)
	return func() { _ = srv.Close() }, nil
}

// pprofMux serves Go's runtime profiles under /debug/pprof/ (a CPU profile: /debug/pprof/profile?seconds=N).
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// metricsMux serves the metrics alone, at /metrics.
func metricsMux(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// shutdownGrace is how long requests cut by the shutdown timeout get to finish their bookkeeping.
const shutdownGrace = 5 * time.Second
