package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/switchboard-ai/switchboard/adapters/inbound/responses"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// WebSocketConfig bounds the connections of the Responses API's WebSocket mode (server.websocket); zero is the
// default.
type WebSocketConfig struct {
	// MaxMessageBytes bounds a message from the client (a response.create), as max_body_bytes bounds a body.
	MaxMessageBytes int64
	// IdleTimeout closes a connection that sent nothing for that long while no call of it runs.
	IdleTimeout time.Duration
	// MaxLifetime closes a connection that long after it opened, once its running call is over (OpenAI's own close
	// after 60 minutes; a client opens another).
	MaxLifetime time.Duration
}

// Defaults of WebSocketConfig.
const (
	DefaultWebSocketMessageBytes = 10 << 20
	DefaultWebSocketIdle         = 5 * time.Minute
	DefaultWebSocketLifetime     = 60 * time.Minute
)

func (c WebSocketConfig) withDefaults() WebSocketConfig {
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultWebSocketMessageBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultWebSocketIdle
	}
	if c.MaxLifetime == 0 {
		c.MaxLifetime = DefaultWebSocketLifetime
	}
	return c
}

// errUpgradeRequired answers a request to upgrade a route that is not upgraded, and GET /responses without one:
// Codex falls back to HTTP at once on a 426, where it retries a 404 for seconds.
var errUpgradeRequired = domain.E(domain.KindUpgradeRequired, "upgrade_required", "")

// upgradeRefused answers 426 to a request that asks to upgrade a route to WebSocket that is not upgraded (any but
// GET /responses); it runs before authentication, so that a client learns at once. Other upgrades (curl's h2c)
// are served as HTTP/1.1, as net/http serves them.
func upgradeRefused(upgraded string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if wantsWebSocket(c) && !(c.Request.Method == "GET" && c.Request.URL.Path == upgraded) {
			writeError(c, errUpgradeRequired.WithMsg("this route does not upgrade to WebSocket: only GET /responses does"))
			c.Abort()
			return
		}
		c.Next()
	}
}

// wantsWebSocket reports a request that asks to upgrade to WebSocket.
func wantsWebSocket(c *gin.Context) bool {
	return strings.EqualFold(c.GetHeader("Upgrade"), "websocket")
}

// connect serves GET /responses: upgraded to WebSocket, each response.create message is a call of its own
// (metered, recorded), its events sent back as messages; without an upgrade, a 426.
func (h *ResponsesHandler) connect(c *gin.Context) {
	if !wantsWebSocket(c) {
		writeError(c, errUpgradeRequired.WithMsg("GET /responses is the Responses API's WebSocket mode: upgrade to websocket, or POST /responses"))
		return
	}
	// The key is checked at the upgrade (Authorization), which a browser cannot set on a WebSocket: no origin to
	// check against cross-site use.
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{InsecureSkipVerify: true,
		CompressionMode: websocket.CompressionContextTakeover})
	if err != nil {
		return // Accept answered
	}
	defer conn.CloseNow()
	conn.SetReadLimit(h.ws.MaxMessageBytes)
	ws := &wsConn{h: h, c: c, conn: conn, end: time.Now().Add(h.ws.MaxLifetime)}
	if !h.conns.add(ws) {
		_ = conn.Close(websocket.StatusGoingAway, "the server is shutting down")
		return
	}
	defer h.conns.remove(ws)
	ws.serve()
}

// wsConn is one WebSocket connection of the Responses API; last is the conversation its last response ended,
// which a response.create naming it as previous_response_id continues.
type wsConn struct {
	h    *ResponsesHandler
	c    *gin.Context
	conn *websocket.Conn
	end  time.Time
	// reading says the connection waits for a message (no call runs), closing that the server shuts down.
	mu               sync.Mutex
	reading, closing bool
	// queued counts the bytes of the messages read and not yet taken by serve.
	queued atomic.Int64
	last   struct {
		id    string
		items []json.RawMessage
		// continues is the previous_response_id the last response's request named upstream (nil for none): the
		// part of its conversation the upstream keeps, not in items.
		continues json.RawMessage
	}
	warmups int
}

// serve answers the client's messages in turn, until the client closes, the connection is idle (or old) past its
// bound, or the server shuts down: the close is a clean one (a close frame with the reason). The connection is
// read all along, by read, so that a client who closes it or goes away while a call runs ends that call at once
// (its context), as a caller who leaves an HTTP call does.
func (w *wsConn) serve() {
	ctx, gone := context.WithCancelCause(w.c.Request.Context())
	defer gone(nil)
	msgs := make(chan wsMessage, maxQueued)
	go w.read(ctx, gone, msgs)
	for {
		if w.wait(true) {
			_ = w.conn.Close(websocket.StatusGoingAway, "the server is shutting down")
			return
		}
		why := "idle for " + w.h.ws.IdleTimeout.String()
		wait := time.Until(w.end)
		if wait > w.h.ws.IdleTimeout {
			wait = w.h.ws.IdleTimeout
		} else {
			why = "open for " + w.h.ws.MaxLifetime.String()
		}
		timer := time.NewTimer(wait)
		var m wsMessage
		var ok bool
		select {
		case m, ok = <-msgs:
		case <-timer.C:
			_ = w.conn.Close(websocket.StatusNormalClosure, why)
			return
		}
		timer.Stop()
		w.wait(false)
		if !ok || ctx.Err() != nil {
			return // the client closed (messages it sent ahead go unanswered), a close above, or the connection broke
		}
		w.queued.Add(-int64(len(m.data)))
		if m.typ != websocket.MessageText {
			w.fail(ctx, domain.Invalid("message", "must be a text message holding a JSON object"))
			continue
		}
		w.turn(ctx, m.data)
	}
}

// The causes that end a connection's context: its client closed it (or it broke), or sent more ahead of its
// running call than the connection holds.
var (
	errClientGone = errors.New("the client closed the WebSocket connection")
	errQueueFull  = errors.New("the client sent more messages ahead of its running call than the connection holds")
)

// wsMessage is a message read from the client.
type wsMessage struct {
	typ  websocket.MessageType
	data []byte
}

// maxQueued bounds the messages a client sends ahead, while a call of its connection runs; each waits its turn.
// Together they hold at most max_message_bytes (queued counts them).
const maxQueued = 4

// read reads the client's messages into msgs until the connection ends; then it ends ctx (gone), which ends a
// call that runs, and closes msgs. A client that sends more than maxQueued messages ahead, or more than
// max_message_bytes of them, is closed (policy violation) rather than held in memory.
func (w *wsConn) read(ctx context.Context, gone context.CancelCauseFunc, msgs chan<- wsMessage) {
	defer close(msgs)
	for {
		typ, data, err := w.conn.Read(ctx)
		if err != nil {
			gone(errClientGone)
			return
		}
		if w.queued.Add(int64(len(data))) > w.h.ws.MaxMessageBytes && len(msgs) > 0 {
			w.overflow(gone)
			return
		}
		select {
		case msgs <- wsMessage{typ, data}:
		default:
			w.overflow(gone)
			return
		}
	}
}

// overflow closes a connection whose client sent more ahead of its running call than it holds: the call ends too.
func (w *wsConn) overflow(gone context.CancelCauseFunc) {
	gone(errQueueFull)
	_ = w.conn.Close(websocket.StatusPolicyViolation, "more messages sent before the running call ended than the connection holds")
}

// wait sets whether the connection waits for a message, and reports whether the server is shutting down.
func (w *wsConn) wait(reading bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reading = reading
	return w.closing
}

// goAway closes the connection for the server's shutdown: at once when it waits for a message, else once its
// call is over (serve).
func (w *wsConn) goAway() {
	w.mu.Lock()
	w.closing = true
	reading := w.reading
	w.mu.Unlock()
	if reading {
		go func() { _ = w.conn.Close(websocket.StatusGoingAway, "the server is shutting down") }()
	}
}

// turn answers one message: a response.create is a call (or, with generate false, a warm-up that calls no model),
// anything else an error event.
func (w *wsConn) turn(ctx context.Context, msg []byte) {
	body, err := responses.Decode(msg)
	if err != nil {
		w.fail(ctx, err)
		return
	}
	if typ := body.Take("type"); string(bytes.TrimSpace(typ)) != `"response.create"` {
		w.fail(ctx, domain.Invalid("type", "must be response.create"))
		return
	}
	generate, stream := body.Take("generate"), body.Take("stream") // stream is implicit: every answer streams
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"generate", generate}, {"stream", stream}} {
		if v := string(bytes.TrimSpace(f.raw)); f.raw != nil && v != "true" && v != "false" && v != "null" {
			w.fail(ctx, domain.Invalid(f.name, "must be a boolean"))
			return
		}
	}
	body.Set("stream", json.RawMessage("true"))
	if prev := body.Field("previous_response_id"); prev != nil && w.last.id != "" {
		var id string
		if json.Unmarshal(prev, &id) == nil && id == w.last.id {
			if err := body.Continue(w.last.items, w.last.continues); err != nil {
				w.fail(ctx, err)
				return
			}
		}
	}
	items, err := body.InputItems()
	if err != nil {
		w.fail(ctx, err)
		return
	}
	continues := body.Field("previous_response_id")
	if string(bytes.TrimSpace(generate)) == "false" {
		w.warmup(ctx, body, items, continues)
		return
	}
	if w.h.admit != nil {
		if err := w.h.admit(ctx, principal(w.c)); err != nil {
			w.fail(ctx, err)
			return
		}
	}
	out := &wsOut{ctx: ctx, conn: w.conn}
	sink := &responsesSink{out: out}
	_, err = w.h.chat.Complete(ctx, principal(w.c), body, caller(w.c), sink)
	if err != nil && !out.begun {
		w.fail(ctx, err)
		return
	}
	w.keep(sink.completed, items, continues)
}

// keep remembers the conversation a response ended (its input and its output items, and the stored response its
// request continued), for the next response.create to continue by its id.
func (w *wsConn) keep(completed json.RawMessage, items []json.RawMessage, continues json.RawMessage) {
	var r struct {
		ID     string            `json:"id"`
		Output []json.RawMessage `json:"output"`
	}
	if completed == nil || json.Unmarshal(completed, &r) != nil || r.ID == "" {
		w.last.id, w.last.items, w.last.continues = "", nil, nil
		return
	}
	w.last.id, w.last.items, w.last.continues = r.ID, append(items, r.Output...), continues
}

// warmup answers a response.create with generate false as OpenAI does: a response that completed with no output,
// whose id the next call may continue; no model is called, and nothing is metered.
func (w *wsConn) warmup(ctx context.Context, body *responses.Body, items []json.RawMessage, continues json.RawMessage) {
	w.warmups++
	id := "resp_warmup_" + RequestID(w.c.Request.Context()) + "_" + strconv.Itoa(w.warmups)
	var model string
	_ = json.Unmarshal(body.Field("model"), &model)
	r := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "status": "in_progress",
		"model": model, "output": []any{}, "usage": nil, "error": nil}
	for seq, typ := range []string{"response.created", "response.completed"} {
		if typ == "response.completed" {
			r["status"] = "completed"
		}
		b, err := json.Marshal(map[string]any{"type": typ, "sequence_number": seq, "response": r})
		if err != nil || w.conn.Write(ctx, websocket.MessageText, b) != nil {
			return
		}
	}
	w.last.id, w.last.items, w.last.continues = id, items, continues
}

// fail sends an error event, as OpenAI's WebSocket mode does: the status an HTTP call would have had, and the
// error as its body would hold it.
func (w *wsConn) fail(ctx context.Context, err error) {
	de := &domain.Error{Kind: domain.KindInternal, Code: "internal_error", Msg: "internal server error"}
	errors.As(err, &de)
	e := map[string]any{"type": errorType(de.Kind), "code": de.Code, "message": de.Msg, "param": de.Meta["field"]}
	b, jerr := json.Marshal(map[string]any{"type": "error", "status": de.Kind.Status(), "error": e})
	if jerr == nil {
		_ = w.conn.Write(ctx, websocket.MessageText, b)
	}
}

// errorType is the error's type as OpenAI names its kinds.
func errorType(k domain.Kind) string {
	switch k {
	case domain.KindInvalid:
		return "invalid_request_error"
	case domain.KindUnauthenticated:
		return "authentication_error"
	case domain.KindRateLimited:
		return "rate_limit_error"
	}
	return "server_error"
}

// wsOut sends an answer's events as WebSocket messages, one event a message; an upstream's native server-sent
// events are taken apart into theirs.
type wsOut struct {
	ctx   context.Context
	conn  *websocket.Conn
	begun bool
}

func (o *wsOut) begin(ports.ChatHead) { o.begun = true }

func (o *wsOut) Flush() error { return nil }

func (o *wsOut) event(_ string, data []byte) error { return o.write(data) }

func (o *wsOut) native(events []byte) error {
	for ev := range bytes.SplitSeq(events, []byte("\n\n")) {
		if _, data, ok := bytes.Cut(ev, []byte("data: ")); ok {
			if err := o.write(data); err != nil {
				return err
			}
		}
	}
	return nil
}

// write sends one message, waiting at most streamIdle for a slow client, as a stream over HTTP does: past it, the
// connection is closed and the call ends as one whose caller left.
func (o *wsOut) write(data []byte) error {
	ctx, cancel := context.WithTimeout(o.ctx, streamIdle)
	defer cancel()
	return o.conn.Write(ctx, websocket.MessageText, data)
}

func (o *wsOut) whole([]byte) error { return errors.New("a WebSocket answer streams") }

// connections are a handler's open WebSocket connections: at shutdown, those waiting for a message close at once
// and the others once their call is over (Shutdown waits for them).
type connections struct {
	mu      sync.Mutex
	open    map[*wsConn]struct{}
	closing bool
	done    sync.WaitGroup
}

func newConnections() *connections { return &connections{open: map[*wsConn]struct{}{}} }

func (cs *connections) add(w *wsConn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing {
		return false
	}
	cs.open[w] = struct{}{}
	cs.done.Add(1)
	return true
}

func (cs *connections) remove(w *wsConn) {
	cs.mu.Lock()
	delete(cs.open, w)
	cs.mu.Unlock()
	cs.done.Done()
}

// Shutdown closes every connection (GoingAway): at once when it waits for a message, after its call when one runs;
// it returns when they are closed, or when ctx ends.
func (cs *connections) Shutdown(ctx context.Context) error {
	cs.mu.Lock()
	if !cs.closing {
		cs.closing = true
		for w := range cs.open {
			w.goAway()
		}
	}
	cs.mu.Unlock()
	done := make(chan struct{})
	go func() {
		cs.done.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
