// Package upstream is what every provider adapter shares: an HTTP client whose calls time out before the first
// byte and when idle (never in total), the classification of failures by whose fault they are, and helpers for
// request bodies and passthrough options.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/generation"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// Config is one provider account.
type Config struct {
	BaseURL string
	APIKey  string
	// Timeout bounds the wait for the first byte of the response body (none when 0); IdleTimeout the wait
	// between chunks.
	Timeout     time.Duration
	IdleTimeout time.Duration
	// Responses means the provider serves OpenAI's Responses API (POST /responses): a Responses request goes to it
	// as it came, where other providers get its translation into chat.
	Responses bool
}

// DefaultIdleTimeout applies when a Config leaves IdleTimeout at zero.
const DefaultIdleTimeout = 60 * time.Second

// Limits of the client's transport.
const (
	dialTimeout         = 10 * time.Second
	dialKeepAlive       = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	maxIdleConns        = 512
	maxIdleConnsPerHost = 256
	// maxHeaderBytes bounds a response's status line and headers.
	maxHeaderBytes = 1 << 20
	// bufferSize is the transport's read and write buffers: a body's read takes what the upstream sent meanwhile,
	// up to a 16 KB clip, for one write and one flush downstream.
	bufferSize = 16 << 10
	// maxRedirects is how many redirects a call follows.
	maxRedirects = 10
)

// NewHTTPClient is the client every provider shares, tuned for streaming through a gateway: net/http's transport
// over pooled keep-alive connections, HTTP/2 to TLS upstreams (many streams over one connection per upstream),
// HTTP/1.1 to plain ones, a proxy from the environment (HTTPS_PROXY, NO_PROXY), bounded dials and handshakes, and
// no total timeout (Do's watchdog bounds the time to the first byte and idle time instead). Bodies come as the
// upstream sends them: no Accept-Encoding is added. Redirects follow Redirect, the one policy for every provider.
func NewHTTPClient() *http.Client {
	return &http.Client{CheckRedirect: Redirect, Transport: &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    maxIdleConnsPerHost,
		IdleConnTimeout:        idleConnTimeout,
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
		DisableCompression:     true,
		ReadBufferSize:         bufferSize,
		WriteBufferSize:        bufferSize,
	}}
}

// Redirect is the redirect policy of every provider call (http.Client.CheckRedirect): at most maxRedirects, and the
// gateway's credentials go only to the origin (scheme, host and port) the call was made to. Once a redirect leaves
// it, that request and every one after it go without the credential headers (credentialHeader) and without the
// credential keys of their query (credentialQueryKeys; Gemini's key=), whatever the status (a 307 or 308 sends the
// body again) and even if a later redirect comes back. net/http's own policy would forward x-api-key, xi-api-key and
// x-goog-api-key anywhere, and Authorization to the origin's subdomains.
func Redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	left := !sameOrigin(req.URL, via[0].URL)
	for _, r := range via[1:] {
		left = left || !sameOrigin(r.URL, via[0].URL)
	}
	if !left {
		return nil
	}
	for name := range req.Header {
		if credentialHeader(name) {
			delete(req.Header, name)
		}
	}
	req.URL.RawQuery = withoutCredentials(req.URL.RawQuery)
	return nil
}

// sameOrigin says a and b are one origin: scheme, host and port (the scheme's default when none is given).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// withoutCredentials is a raw query without its credential keys, the rest left as it was written (a signed URL's
// signature covers its query's exact text).
func withoutCredentials(raw string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(k); err == nil && credentialQueryKey(k) {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}

// Do sends req and returns the response, or an *ports.UpstreamError. The body is watched: the first byte must come
// within the timeout and each later chunk within the idle timeout, or the call ends with a KindTimeout error
// (there is no total timeout). A Timeout of 0 puts no bound on the first byte: the watchdog starts with it. ctx
// must be the caller's, so that a caller who goes away cancels the upstream call at once: the request is sent
// with a context of the call's own under it, in place of its own (a request made by Endpoint.Post has none).
func Do(ctx context.Context, client *http.Client, req *http.Request, cfg Config) (*http.Response, error) {
	w := &watchdog{idle: cfg.IdleTimeout}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	if w.idle <= 0 {
		w.idle = DefaultIdleTimeout
	}
	first := cfg.Timeout
	if first <= 0 {
		first = math.MaxInt64 // armed by the first read that brings bytes
	}
	w.timer = time.AfterFunc(first, w.check)
	resp, err := client.Do(req.WithContext(w.ctx))
	if err != nil {
		// Classified before the call's context ends here, which would read as the caller's going away.
		w.timer.Stop()
		err = transportError(w.ctx, err)
		w.cancel(nil)
		return nil, err
	}
	w.body = resp.Body
	resp.Body = w
	return resp, nil
}

// errTimedOut is the cause the watchdog ends a call's context with.
var errTimedOut = errors.New("upstream: the watchdog timed the call out")

// watchdog ends the call when the first byte takes longer than the timeout, or a later chunk longer than the
// idle timeout. Reads only note the time; the timer, when it fires, checks whether a read came since and
// re-arms itself for the rest of the idle window, so streaming pays no timer operation per chunk.
type watchdog struct {
	body     io.ReadCloser
	ctx      context.Context // the call's: the caller's, ended also by the watchdog and by Close
	cancel   context.CancelCauseFunc
	timer    *time.Timer
	idle     time.Duration
	lastRead atomic.Int64 // unix nanoseconds of the last read that brought bytes; 0 before the first
	closed   sync.Once
}

func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.body.Read(p)
	if n > 0 && w.lastRead.Swap(time.Now().UnixNano()) == 0 {
		// The first bytes: from here the idle timeout bounds the call. The timer still ran for the first-byte
		// timeout, and an idle timeout shorter than it was first checked only when it fired: a stream that stalled
		// after its first token with timeout 5s and idle_timeout 1s ended after 5 s.
		w.timer.Reset(w.idle)
	}
	if err != nil && err != io.EOF {
		return n, transportError(w.ctx, err)
	}
	return n, err
}

// check runs when the timer fires: before the first byte that is the timeout; after it, only an idle window
// without a read is.
func (w *watchdog) check() {
	last := w.lastRead.Load()
	if last != 0 {
		if idle := time.Since(time.Unix(0, last)); idle < w.idle {
			w.timer.Reset(w.idle - idle)
			return
		}
	}
	w.cancel(errTimedOut)
}

// Close closes the body before it ends the call's context: a body read to its end has given its connection back
// to the pool, one that was not closes it.
func (w *watchdog) Close() error {
	err := w.body.Close()
	w.closed.Do(func() {
		w.timer.Stop()
		w.cancel(nil)
	})
	return err
}

// transportError classifies a failure to get (or keep reading) a response on the call's context ctx. A caller
// who went away is not an upstream failure: the context's error comes back as it is.
func transportError(ctx context.Context, err error) error {
	if context.Cause(ctx) == errTimedOut { //nolint:errorlint // the watchdog's own sentinel, never wrapped
		return &ports.UpstreamError{Kind: domain.KindTimeout, Retryable: true, Reason: "the provider did not answer in time", Err: err}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &ports.UpstreamError{Kind: domain.KindUpstream, Retryable: true, Reason: "could not reach the provider", Err: err}
}

// Classify maps an upstream HTTP status to what it means for the caller. reason is the provider's own short
// message when it concerns the caller's input; other reasons are the gateway's words, never the provider's.
func Classify(status int, reason string, h http.Header, raw []byte) *ports.UpstreamError {
	e := &ports.UpstreamError{Status: status, Raw: generation.TruncateRaw(raw), RetryAfter: RetryAfter(h)}
	switch {
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity || status == http.StatusRequestEntityTooLarge:
		e.Kind, e.Reason = domain.KindInvalid, "the provider rejected the request: "+short(reason)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind, e.Retryable, e.Reason = domain.KindUpstream, true, "the provider rejected the gateway's credentials"
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind, e.Retryable, e.Reason = domain.KindTimeout, true, "the provider timed out"
	case status == http.StatusTooManyRequests:
		e.Kind, e.Retryable, e.Reason = domain.KindRateLimited, true, "the provider is rate limiting the gateway"
	case status == http.StatusServiceUnavailable || status == 529:
		e.Kind, e.Retryable, e.Reason = domain.KindOverloaded, true, "the provider is overloaded"
	case status >= 500:
		e.Kind, e.Retryable, e.Reason = domain.KindUpstream, true, fmt.Sprintf("the provider failed (%d)", status)
	default:
		e.Kind, e.Retryable, e.Reason = domain.KindUpstream, true, fmt.Sprintf("the provider answered %d", status)
	}
	return e
}

// Quota marks a 4xx that means the gateway's account is out of quota: another endpoint may do, this one won't.
func Quota(e *ports.UpstreamError) *ports.UpstreamError {
	e.Kind, e.Retryable, e.Reason, e.RetryAfter = domain.KindUpstream, true, "the provider account is out of quota", 0
	return e
}

func short(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "no reason given"
	}
	return s
}

// RetryAfter reads retry-after-ms, or Retry-After in seconds or as an HTTP date.
func RetryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// ErrorBody reads at most 64 KiB of an error response and closes it.
func ErrorBody(resp *http.Response) []byte {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b
}

// Merge lays canonical fields over passthrough options: the canonical ones win.
func Merge(options map[string]any, canonical map[string]any) map[string]any {
	out := make(map[string]any, len(options)+len(canonical))
	for k, v := range options {
		out[k] = v
	}
	for k, v := range canonical {
		out[k] = v
	}
	return out
}

// Take removes and returns options[key], for options that belong in a query string rather than the body.
func Take(options map[string]any, key string) (string, bool) {
	v, ok := options[key]
	if !ok {
		return "", false
	}
	delete(options, key)
	switch v := v.(type) {
	case map[string]any, []any, nil:
		return "", false
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	default: // strings, json.Number, bools, integers
		return fmt.Sprint(v), true
	}
}

// NewJSONRequest builds a POST of body encoded as JSON.
func NewJSONRequest(ctx context.Context, url string, body any) (*http.Request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = jsonType
	return req, nil
}

// jsonType is the Content-Type of a JSON body: one slice for every request, which no one writes to.
var jsonType = []string{"application/json"}

// Endpoint is a provider's URL, parsed once for every request to it (http.NewRequest parses its URL each time).
type Endpoint struct {
	url *url.URL
	err error // what parsing the URL failed with: every request's failure
}

// ParseEndpoint parses raw as http.NewRequest parses a request's URL.
func ParseEndpoint(raw string) Endpoint {
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{err: err}
	}
	u.Host = strings.TrimSuffix(u.Host, ":") // as http.NewRequest's removeEmptyPort
	return Endpoint{url: u}
}

// post is a request with its URL and its body's reader, in one allocation.
type post struct {
	req  http.Request
	url  url.URL
	body bytes.Reader
}

// Post builds a POST of a JSON body already encoded to e, as http.NewRequest builds it (and with the same GetBody,
// for a redirect to send it again), but for its Host, which it leaves to the URL, as net/http does when it is
// empty. header is the request's own; the Content-Type is set in it. Its context is left to Do, which sends it
// with the call's: a request made with one (WithContext) was a copy of the whole request, which Do copied again.
// The body is io.NopCloser of a *bytes.Reader, as http.NewRequest makes it: net/http's transport writes a body it
// knows to be in memory with the head, in one write; any other it sends after flushing the head, a write (and a
// wake-up of the upstream) more.
func (e Endpoint) Post(body []byte, header http.Header) (*http.Request, error) {
	if e.err != nil {
		return nil, e.err
	}
	header["Content-Type"] = jsonType
	p := &post{url: *e.url}
	p.body.Reset(body)
	p.req = http.Request{Method: http.MethodPost, URL: &p.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: header,
		Body: io.NopCloser(&p.body), ContentLength: int64(len(body)), GetBody: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		}}
	return &p.req, nil
}

// Failed builds the error for a response with an error status: msg is the provider's own message when it has one.
// Both msg and raw are scrubbed of the credentials the request carried and of anything shaped like a secret.
func Failed(resp *http.Response, raw []byte, msg string) *ports.UpstreamError {
	secrets := sentSecrets(resp.Request)
	return Classify(resp.StatusCode, Scrub(msg, secrets...), resp.Header, []byte(Scrub(string(raw), secrets...)))
}

// Unfit refuses an input this provider cannot take, before anything is sent: the call's own input, so an invalid
// request, yet another endpoint of the model may take it. reason names the field ("voice: ...").
func Unfit(reason string) error {
	return &ports.UpstreamError{Kind: domain.KindInvalid, Retryable: true, Reason: reason}
}

// Internal is a failure of the gateway's own making while calling a provider (a body it could not encode).
func Internal(err error) error {
	return &ports.UpstreamError{Kind: domain.KindUpstream, Reason: "the gateway could not build the provider request", Err: err}
}

// Polled views the answer to a poll of a job: a provider that no longer knows the job (404, 410) has ended it,
// and no retry will change that.
func Polled(resp *http.Response, err error) (*http.Response, error) {
	var ue *ports.UpstreamError
	if errors.As(err, &ue) && (ue.Status == http.StatusNotFound || ue.Status == http.StatusGone) {
		ue.Retryable = false
	}
	return resp, err
}

// Download views the answer to a download request: its content, streaming, or its failure classified. A
// provider that no longer has the file (404, 410) means it has expired, and a range outside the file (416) is
// the caller's; other failures stay the provider's.
func Download(resp *http.Response, err error) (ports.VideoContent, error) {
	var ue *ports.UpstreamError
	switch {
	case err == nil:
	case !errors.As(err, &ue):
		return ports.VideoContent{}, err
	case ue.Status == http.StatusNotFound || ue.Status == http.StatusGone:
		return ports.VideoContent{}, video.ErrExpired.Wrap(err)
	case ue.Status == http.StatusRequestedRangeNotSatisfiable:
		return ports.VideoContent{}, video.ErrRangeNotValid.Wrap(err)
	default:
		return ports.VideoContent{}, err
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" || ct == "application/octet-stream" || ct == "application/binary" {
		ct = "video/mp4"
	}
	return ports.VideoContent{Body: resp.Body, Status: resp.StatusCode, ContentType: ct, ContentLength: resp.ContentLength,
		ContentRange: resp.Header.Get("Content-Range")}, nil
}
