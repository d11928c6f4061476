package upstream_test

import (
	"io"
	"strings"
	"testing"

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
