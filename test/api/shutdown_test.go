package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestShutdownDrainsInFlightRequests begins a shutdown while a request's handler is reading its body, and checks
// the request still completes and Serve returns cleanly. The handler's first body read is observed through
// "Expect: 100-continue": the server answers 100 Continue exactly then, so no sleep is needed.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	g := harness.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.App.Server.Serve(ctx, ln) }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"late"}`
	fmt.Fprintf(conn, "POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", g.Admin, len(body))
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "100 Continue") {
		t.Fatalf("no 100 Continue: %q %v", status, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line after the interim response
		t.Fatal(err)
	}

	cancel() // SIGTERM while the handler waits for the body

	if _, err := conn.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request was cut: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request answered %d", resp.StatusCode)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("still accepting connections after shutdown")
	}
}
