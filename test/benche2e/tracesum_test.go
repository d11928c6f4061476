package main

import (
	"os"
	"strings"
	"testing"
)

// TestSummarize reads a trace of five calls over one keep-alive connection to a net/http server (recorded with
// runtime/trace around an httptest server and http.Get), whose handler writes "ok": five requests, each with its
// time running and its response's write.
func TestSummarize(t *testing.T) {
	f, err := os.Open("testdata/five-requests.trace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := summarize(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.requests != 5 {
		t.Errorf("%d requests, want 5", s.requests)
	}
	if s.running <= 0 {
		t.Errorf("running %v", s.running)
	}
	var out strings.Builder
	s.print(&out)
	if !strings.Contains(out.String(), "5 requests") || !strings.Contains(out.String(), "5 times   at syscall.write") {
		t.Errorf("summary:\n%s", out.String())
	}
	for k := range s.blocked {
		if strings.Contains(k, "connReader).Read") && !strings.Contains(k, "syscall") {
			t.Errorf("a wait for the next request counted as a request's: %s", k)
		}
	}
}
