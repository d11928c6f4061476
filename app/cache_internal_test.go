package app

import (
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/ports"
)

// TestTTLCacheBounded: full of live entries the cache takes no more; once they expire, room is made again
// (a sweep at most once per TTL).
func TestTTLCacheBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newTTLCache[int, int]("test", ports.NoMetrics{}, func() time.Time { return now }, time.Second)
	c.max, c.sweep = 3, 3
	for i := range 5 {
		c.put(i, i)
	}
	if len(c.m) != 3 {
		t.Fatalf("%d entries, want the bound 3", len(c.m))
	}
	if _, ok := c.get(4); ok {
		t.Fatal("an entry past the bound was kept")
	}
	now = now.Add(2 * time.Second)
	c.put(9, 9)
	if v, ok := c.get(9); !ok || v != 9 || len(c.m) != 1 {
		t.Fatalf("after expiry: %v %v, %d entries", v, ok, len(c.m))
	}
}
