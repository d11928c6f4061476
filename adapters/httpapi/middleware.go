package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/account"
	"github.com/switchboard-ai/switchboard/ports"
)

type ctxKey int

const requestKey ctxKey = iota

// request is what the middleware learns of a request: its id (requestID), the server's logger (accessLog) and,
// once guard admitted it, the caller. It is the request's context itself, over the one the request came with:
// the record and its context value are one allocation, the middleware copy the *http.Request once between them
// (observe), and gin allocates no Keys map. It holds the values of the headers the middleware set, so that
// setting them allocates no slice (Header.Set made one a call).
type request struct {
	context.Context
	id        string
	log       *slog.Logger
	principal account.Principal
	admitted  bool
	// anthropic answers the request's errors in Anthropic's shape (anthropicErrors).
	anthropic bool
	// idValue is X-Request-Id's value; rateValues X-Ratelimit-Limit's, -Remaining's and -Reset's.
	idValue    [1]string
	rateValues [3]string
}

// Value answers for the record itself, and asks the context it is over for every other key.
func (r *request) Value(key any) any {
	if key == requestKey {
		return r
	}
	return r.Context.Value(key)
}

// requestOf is the request's record, which the first middleware to ask puts on its context.
func requestOf(c *gin.Context) *request {
	if r := recordOf(c.Request.Context()); r != nil {
		return r
	}
	return newRequest(c, c.Request.Context())
}

// recordOf is the record of the request that ctx belongs to, or nil: unlike requestOf, it puts none there.
func recordOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey).(*request)
	return r
}

// newRequest puts a record over ctx on c's request.
func newRequest(c *gin.Context, ctx context.Context) *request {
	r := &request{Context: ctx}
	c.Request = c.Request.WithContext(r)
	return r
}

// RequestID returns the id of the request that ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	if r := recordOf(ctx); r != nil {
		return r.id
	}
	return ""
}

// LogHandler decorates h so that every record logged with a request's context carries its request_id.
func LogHandler(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}
func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// observe reports every request to the metrics, by route pattern and kind of key, and marks its context with its
// arrival, from which the pipeline measures the time the gateway adds.
func observe(m ports.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		r := newRequest(c, ports.WithArrival(c.Request.Context(), start))
		c.Next()
		kind := "none"
		if r.admitted {
			kind = "inference"
			if r.principal.Management {
				kind = "management"
			}
		}
		m.Request(ports.RequestMetric{Route: c.FullPath(), Method: knownMethod(c.Request.Method), Status: c.Writer.Status(),
			KeyKind: kind, Bytes: int64(max(c.Writer.Size(), 0)), Took: time.Since(start)})
	}
}

// knownMethod keeps a metric label to the methods the routes use: any other is "other".
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut, http.MethodHead, http.MethodOptions:
		return m
	}
	return "other"
}

// requestID takes X-Request-Id from the caller when it is sane, or makes one, and echoes it on the response.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		r := requestOf(c)
		r.id, r.idValue[0] = id, id
		c.Writer.Header()["X-Request-Id"] = r.idValue[:]
		c.Next()
	}
}

// newRequestID is req- and 24 random hexadecimal digits, made in one allocation.
func newRequestID() string {
	var raw [12]byte
	_, _ = rand.Read(raw[:])
	b := [len("req-") + 2*len(raw)]byte{'r', 'e', 'q', '-'}
	hex.Encode(b[len("req-"):], raw[:])
	return string(b[:])
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}

// loggerOf is the server's logger, which accessLog put on the request.
func loggerOf(c *gin.Context) *slog.Logger {
	if r := recordOf(c.Request.Context()); r != nil && r.log != nil {
		return r.log
	}
	return slog.Default()
}

// accessLog writes one line per request. It never logs headers or queries, and a path's segments that may be a
// key or a key's hash (GET /keys/{hash}, a key pasted into a URL) are logged as [REDACTED]: no key, nor its hash,
// reaches a log.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		requestOf(c).log = log
		c.Next()
		ctx := c.Request.Context()
		if !log.Enabled(ctx, slog.LevelInfo) {
			return
		}
		log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("method", c.Request.Method),
			slog.String("path", loggedPath(c.Request.URL.Path)),
			slog.Int("status", c.Writer.Status()),
			slog.Int("bytes", c.Writer.Size()),
			slog.Duration("elapsed", time.Since(start)),
		)
	}
}

// loggedPath is path with each segment that may be a key (account.KeyPrefix, or any "sk-") or a key's hash (a run
// of 32 or more hexadecimal digits) replaced by [REDACTED]; path itself, with no copy, when it has none.
func loggedPath(path string) string {
	if !strings.Contains(path, "sk-") && !hexRun(path) {
		return path
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.Contains(s, "sk-") || hexRun(s) {
			segs[i] = "[REDACTED]"
		}
	}
	return strings.Join(segs, "/")
}

// hexRun reports whether s holds 32 or more hexadecimal digits in a row.
func hexRun(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			if n++; n >= 32 {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// recovery turns a panic into a 500 in the envelope, or, when the response has begun, an aborted connection.
func recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(p)
			}
			loggerOf(c).ErrorContext(c.Request.Context(), "panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			writeError(c, errors.New("panic"))
		}()
		c.Next()
	}
}

// bodyLimit caps every request body; reading past it yields a 413 from bindJSON.
func bodyLimit(n int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > n {
			writeError(c, errTooLarge.WithMsg(fmt.Sprintf("request body is larger than %d bytes", n)))
			return
		}
		if c.Request.ContentLength < 0 {
			// A body of a known length within the limit cannot pass it: only one of unknown length is capped.
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		}
		c.Next()
	}
}

// principal is the caller that the auth middleware admitted. Only routes behind guard ask.
func principal(c *gin.Context) account.Principal {
	r := requestOf(c)
	if !r.admitted {
		panic("httpapi: principal asked on a route without guard")
	}
	return r.principal
}

// guard admits a request by its bearer key and by the kind of key the route takes, then its path and query by
// their formats (checkRequest).
type guard struct{ auth ports.Authenticator }

type keyKinds int

const (
	anyKey keyKinds = iota
	managementKey
	inferenceKey
)

func (g guard) require(kinds keyKinds) gin.HandlerFunc {
	return func(c *gin.Context) {
		secret, ok := bearer(c.GetHeader("Authorization"))
		if !ok { // Anthropic's clients send their key as x-api-key
			secret = strings.TrimSpace(c.GetHeader("X-Api-Key"))
			ok = secret != ""
		}
		if !ok {
			writeError(c, account.ErrUnauthenticated)
			return
		}
		p, err := g.auth.Authenticate(c.Request.Context(), secret)
		if err != nil {
			writeError(c, err)
			return
		}
		switch {
		case kinds == managementKey && !p.Management:
			writeError(c, account.ErrManagementOnly)
			return
		case kinds == inferenceKey && p.Management:
			writeError(c, account.ErrInferenceOnly)
			return
		}
		r := requestOf(c)
		r.principal, r.admitted = p, true
		if err := checkRequest(c); err != nil {
			writeError(c, err)
			return
		}
		c.Next()
	}
}

var errRateLimited = domain.E(domain.KindRateLimited, "rate_limited", "rate limit exceeded for this key; retry after the time in Retry-After")

// rateLimit admits inference calls per key: the key's own limit, or the configured default. Its state goes out in
// X-RateLimit-* headers; a refusal is a 429 with Retry-After.
func rateLimit(rl ports.RateLimiter, def DefaultRateLimit, m ports.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, err := allowRate(c.Request.Context(), rl, def, m, principal(c))
		if d.Limit > 0 {
			// Set in their canonical form, as Header.Set would, in the record's slots: Set made each name anew (the
			// form it is written in, X-RateLimit-*, is not canonical) and a slice for each value, on every call.
			v := &requestOf(c).rateValues
			decimals(v, int64(d.Limit), int64(d.Remaining), d.Reset.Unix())
			h := c.Writer.Header()
			h["X-Ratelimit-Limit"], h["X-Ratelimit-Remaining"], h["X-Ratelimit-Reset"] = v[0:1:1], v[1:2:2], v[2:3:3]
		}
		if err != nil {
			writeError(c, err)
			return
		}
		c.Next()
	}
}

// allowRate is the request limit's decision on one call of p (the key's own limit, or the configured default),
// and its refusal (a 429 with Retry-After) when it refuses.
func allowRate(ctx context.Context, rl ports.RateLimiter, def DefaultRateLimit, m ports.Metrics, p account.Principal) (ports.RateDecision, error) {
	rpm := p.RateLimit
	if rpm == 0 {
		rpm = int(def)
	}
	d := rl.Allow(ctx, p.KeyHash, rpm)
	if d.Allowed {
		return d, nil
	}
	m.RateLimited()
	e := *errRateLimited
	e.RetryAfter = d.RetryAfter
	return d, &e
}

// TokenLimits are what calls whose usage is tokens are admitted by: the keys' token windows, and the configured
// default limits of keys without their own.
type TokenLimits struct {
	Limiter  ports.TokenLimiter
	Defaults account.TokenLimits
}

var errTokenLimited = domain.E(domain.KindRateLimited, "token_rate_limited",
	"this key has used its tokens for the current window; retry after the time in Retry-After")

// tokenLimit admits calls whose usage is tokens (chat) while the key has tokens left under its token limits (its
// own, or the configured default), a minute's and a day's; what a call used is counted once the upstream said
// (app.TokenMeter). The state of the limit with the fewest tokens left goes out in X-RateLimit-*-Tokens headers
// (OpenAI's names for its token limits); a refusal is a 429 with Retry-After, as the request limit's.
func tokenLimit(tl TokenLimits, m ports.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, limited, err := admitTokens(c.Request.Context(), tl, m, principal(c))
		if limited {
			h := c.Writer.Header()
			h["X-Ratelimit-Limit-Tokens"] = []string{strconv.FormatInt(d.Limit, 10)}
			h["X-Ratelimit-Remaining-Tokens"] = []string{strconv.FormatInt(d.Remaining, 10)}
			h["X-Ratelimit-Reset-Tokens"] = []string{strconv.FormatInt(d.Reset.Unix(), 10)}
		}
		if err != nil {
			writeError(c, err)
			return
		}
		c.Next()
	}
}

// admitTokens is the token limits' decision on one call of p (limited: p has any), and its refusal (a 429 with
// Retry-After) when p has no tokens left.
func admitTokens(ctx context.Context, tl TokenLimits, m ports.Metrics, p account.Principal) (ports.TokenDecision, bool, error) {
	limits := p.Tokens.Or(tl.Defaults)
	if limits.Zero() {
		return ports.TokenDecision{}, false, nil
	}
	d := tl.Limiter.Admit(ctx, p.KeyHash, limits)
	if d.Allowed {
		return d, true, nil
	}
	m.RateLimited()
	e := errTokenLimited.With("limit", "tokens_per_"+d.Window)
	e.RetryAfter = d.RetryAfter
	return d, true, e
}

// decimals sets v to the decimal forms of a, b and c, made as one string (strconv made one each).
func decimals(v *[3]string, a, b, c int64) {
	var buf [3 * 20]byte
	ab := strconv.AppendInt(buf[:0], a, 10)
	bb := strconv.AppendInt(ab, b, 10)
	s := string(strconv.AppendInt(bb, c, 10))
	v[0], v[1], v[2] = s[:len(ab)], s[len(ab):len(bb)], s[len(bb):]
}

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

var (
	errNoRoute  = domain.E(domain.KindNotFound, "route_not_found", "no such route")
	errNoMethod = domain.E(domain.KindInvalid, "method_not_allowed", "method not allowed on this route")
)
