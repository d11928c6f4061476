package httpapi

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
)

// countingConn counts the writes that reach the connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

// A stream's flush leaves in one write on the connection, headers and chunk framing included, whatever net/http's
// 4 KiB buffer makes of it; a write larger than the held buffer is still sent whole and in order; and what a
// handler leaves written but unflushed is sent when it returns.
func TestStreamFlushIsOneWrite(t *testing.T) {
	t.Parallel()
	first := bytes.Repeat([]byte("a"), 16<<10)
	large := bytes.Repeat([]byte("b"), 40<<10)
	tail := []byte("tail")
	flushed, next := make(chan struct{}), make(chan struct{})
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	e := gin.New()
	e.GET("/stream", func(c *gin.Context) {
		s := newFlushWriter(c)
		defer s.stop()
		if s.conn == nil {
			t.Error("the request's connection is not known: its writes cannot be held")
		}
		s.start(http.StatusOK)
		if s.Write(first[:100]) != nil || s.Write(first[100:]) != nil || s.Flush() != nil {
			t.Error("first flush failed")
		}
		flushed <- struct{}{}
		<-next
		if s.Write(large) != nil || s.Flush() != nil || s.Write(tail) != nil {
			t.Error("second flush failed")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	srv := &http.Server{Handler: releaseHeld(e), ConnContext: withConn}
	go func() { _ = srv.Serve(envelopeListener{countingListener{Listener: ln, writes: &writes}}) }()
	t.Cleanup(func() { _ = srv.Close() })

	resp, err := http.Get("http://" + ln.Addr().String() + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-flushed
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("first flush: %v, %d bytes as sent: %t", err, len(got), bytes.Equal(got, first))
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the first flush (headers, 16 KiB written in two) took %d writes, want 1", n)
	}
	close(next)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(rest, append(large, tail...)) {
		t.Fatalf("rest of the stream: %v, %d bytes, as sent: %t", err, len(rest), bytes.Equal(rest, append(large, tail...)))
	}
}
