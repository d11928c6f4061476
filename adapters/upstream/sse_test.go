package upstream_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
)

func TestSSE(t *testing.T) {
	t.Parallel()
	in := ": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: message_start\ndata: one\ndata: two\n\nid: 7\nretry: 10\ndata:tight\n\n\n\ndata: " +
		strings.Repeat("x", 40_000) + "\n\ndata: last without a blank line"
	s := upstream.NewSSE(strings.NewReader(in))
	want := []struct{ event, data string }{{"", `{"a":1}`}, {"message_start", "one\ntwo"}, {"", "tight"},
		{"", strings.Repeat("x", 40_000)}, {"", "last without a blank line"}}
	for i, w := range want {
		ev, data, err := s.Next()
		if err != nil || ev != w.event || string(data) != w.data {
			t.Fatalf("event %d: %q %.40q %v; want %q %.40q", i, ev, data, err, w.event, w.data)
		}
	}
	if _, _, err := s.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	s = upstream.NewSSE(strings.NewReader("data: " + strings.Repeat("x", upstream.MaxEvent+1) + "\n\n"))
	if _, _, err := s.Next(); err != upstream.ErrEventTooLarge {
		t.Fatalf("huge event: %v", err)
	}
}

// TestSSESized: a stream's own bound holds for one long line and for an event of many lines alike.
func TestSSESized(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		err      error
	}{
		{"at the bound", "data: " + strings.Repeat("x", 10_000) + "\n\n", nil},
		{"one line past it", "data: " + strings.Repeat("x", 10_001) + "\n\n", upstream.ErrEventTooLarge},
		{"many lines past it", strings.Repeat("data: "+strings.Repeat("x", 99)+"\n", 102) + "\n", upstream.ErrEventTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := upstream.NewSSESized(strings.NewReader(tt.in), 10_000).Next(); err != tt.err {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
		})
	}
}

// TestSSEOver: once a stream is over (its read buffer back in the pool), Next returns why again and again, and
// never reads the body further.
func TestSSEOver(t *testing.T) {
	t.Parallel()
	broken := errors.New("connection reset")
	for _, tt := range []struct {
		name  string
		body  io.Reader
		close bool // the protocol ended the stream with an event of its own
		err   error
	}{
		{"body ended", strings.NewReader("data: a\n\n"), false, io.EOF},
		{"body ended inside an event", strings.NewReader("data: a\n\ndata: b"), false, io.EOF},
		{"body failed", io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(broken)), false, broken},
		{"event too large", strings.NewReader("data: a\n\ndata: " + strings.Repeat("x", upstream.MaxEvent+1)), false, upstream.ErrEventTooLarge},
		{"closed", io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(broken)), true, io.EOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := upstream.NewSSE(tt.body)
			if _, data, err := s.Next(); err != nil || string(data) != "a" {
				t.Fatalf("first event: %q %v", data, err)
			}
			if tt.close {
				s.Close()
			} else {
				for _, _, err := s.Next(); err == nil; _, _, err = s.Next() {
				}
			}
			for i := range 2 {
				if ev, data, err := s.Next(); ev != "" || data != nil || err != tt.err {
					t.Fatalf("call %d after the end: %q %q %v, want %v", i, ev, data, err, tt.err)
				}
			}
		})
	}
}

// TestSSEDataOutlivesBuffer: the last event of a stream is still whole once its read buffer has gone back to the
// pool and another stream reads through it.
func TestSSEDataOutlivesBuffer(t *testing.T) {
	t.Parallel()
	first := upstream.NewSSE(strings.NewReader("data: " + strings.Repeat("a", 3000)))
	_, data, err := first.Next()
	if err != nil {
		t.Fatal(err)
	}
	second := upstream.NewSSE(strings.NewReader("data: " + strings.Repeat("b", 3000) + "\n\n"))
	if _, other, err := second.Next(); err != nil || string(other) != strings.Repeat("b", 3000) {
		t.Fatalf("second stream: %.20q %v", other, err)
	}
	if string(data) != strings.Repeat("a", 3000) {
		t.Fatalf("first stream's last event became %.20q...", data)
	}
}
