// Package httpserver is a lean HTTP/1.1 server for one http.Handler on plain TCP. It reads a request as net/http's
// server does (http.ReadRequest and the checks its server adds on top), and differs from net/http's server where a
// gateway pays for it on every call:
//   - a request's head is parsed in one pass into one string for its method, target, names and values, and the
//     request, its URL and its body's reader are allocated with its response (http.ReadRequest made some 25 objects);
//   - a response leaves in as few writes as it can: one for a response the handler wrote without flushing (with a
//     Content-Length), one per Flush (the head, if not sent yet, and what was written since as one chunk), and one
//     for the rest and the chunked terminator when the handler returns;
//   - a request does not start a background read of its connection (net/http's, which notices a caller who left):
//     one is armed only when the handler is still running a while after the request's body was read (watchDelay),
//     so a call that answers quickly never pays for it, and a long one is still cancelled when its caller leaves.
//
// It does not do TLS, HTTP/2, Hijack, trailers or "OPTIONS *"; the gateway serves plain HTTP/1.1 behind
// whatever terminates TLS.
package httpserver

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves Handler on the listeners given to Serve. Set its fields before Serve.
type Server struct {
	Handler http.Handler
	// The timeouts, as net/http's server applies them; zero is none.
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// BaseContext is the parent of every request's context; context.Background when nil.
	BaseContext context.Context
	// Reject renders the answer to a request refused before any handler runs: status is 400, 417, 431, 501 or
	// 505, reason net/http's fixed text for it ("missing required Host header"), empty when it has none. nil
	// answers in plain text.
	Reject func(status int, reason string) (contentType string, body []byte)
	// Log receives what a handler's panic left; nothing is logged when nil.
	Log *slog.Logger

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	shutting  atomic.Bool
}

// watchDelay is how long a handler runs, after its request's body was read, before the connection is watched for
// the caller leaving.
const watchDelay = 50 * time.Millisecond

// Serve accepts connections on ln and serves each in a goroutine of its own, until Shutdown or Close, after which
// it returns http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners, s.conns = map[net.Listener]struct{}{}, map[*conn]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()

	var backoff time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() { // as net/http: a temporary failure (EMFILE...) is retried
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := &conn{srv: s, rwc: rwc}
		c.setIdle(true)
		s.mu.Lock()
		if s.shutting.Load() {
			s.mu.Unlock()
			_ = rwc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting connections, closes the idle ones, and waits for the others to finish their request
// (each then closes) or for ctx to end, whose error it then returns. A request that finishes meanwhile is answered
// with Connection: close. It may be called again, with a later deadline.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()
	poll := time.Millisecond
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		if s.closeIdle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			poll = min(2*poll, 500*time.Millisecond)
			t.Reset(poll)
		}
	}
}

// Close stops accepting connections and closes every connection, whatever it is doing.
func (s *Server) Close() error {
	s.stopAccepting()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.rwc.Close()
	}
	return nil
}

func (s *Server) stopAccepting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutting.Store(true)
	for ln := range s.listeners {
		_ = ln.Close()
	}
}

// newConnGrace is how long a connection that has not sent a request yet is left to send one in a shutdown, as
// net/http does: it may be one accepted just before.
const newConnGrace = 5 * time.Second

// closeIdle closes the connections waiting for a request and reports whether no other is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	quiet := true
	now := time.Now().UnixNano()
	for c := range s.conns {
		since := c.idleSince.Load()
		if since == 0 || (c.fresh.Load() && now-since < int64(newConnGrace)) {
			quiet = false
			continue
		}
		_ = c.rwc.Close()
	}
	return quiet
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// readHeaderTimeout and idleTimeout fall back on ReadTimeout, as net/http's do.
func (s *Server) readHeaderTimeout() time.Duration {
	if s.ReadHeaderTimeout != 0 {
		return s.ReadHeaderTimeout
	}
	return s.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout != 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

// deadline is now+d, or no deadline (the zero time) when d is zero.
func deadline(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// bufferPool holds the read buffers of connections.
var bufferPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
