package wire

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestGCPercent: the percentage whose goal, as the runtime computes it (mgcpacer.go), is the floor and no more.
func TestGCPercent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		live, roots, floor uint64
		base, want         int
	}{
		{2 << 20, 0, 64 << 20, 100, 1600},        // the minimum heap's goal, 4 MB·16: 64 MB
		{0, 0, 64 << 20, 100, 1600},              // counted as a megabyte: the same
		{8 << 20, 0, 64 << 20, 100, 700},         // a goal of 64 MB for a live heap of 8
		{32 << 20, 0, 64 << 20, 100, 100},        // doubling reaches the floor: GOGC's own
		{100 << 20, 0, 64 << 20, 100, 100},       // past the floor
		{16 << 20, 0, 64 << 20, 400, 400},        // never below the base
		{8 << 20, 8 << 20, 64 << 20, 100, 350},   // stacks count as the heap does: 700 % made 120 MB
		{2 << 20, 2 << 20, 64 << 20, 100, 1550},  // 1,600 % made 66 MB
		{1 << 20, 10 << 20, 64 << 20, 100, 572},  // 1,600 % made 177 MB; the minimum heap is then 23 MB
		{20 << 20, 20 << 20, 64 << 20, 100, 110}, // doubling alone is short of the floor by 4 MB
	} {
		got := gcPercent(tt.live, tt.roots, tt.floor, tt.base)
		if got != tt.want {
			t.Errorf("gcPercent(%d, %d, %d, %d) = %d, want %d", tt.live, tt.roots, tt.floor, tt.base, got, tt.want)
		}
		live, p := max(tt.live, 1<<20), uint64(got)
		if goal := max(live+(live+tt.roots)*p/100, minHeap*p/100); got > tt.base && goal > tt.floor {
			t.Errorf("gcPercent(%d, %d, %d, %d) = %d: a goal of %d, over the floor", tt.live, tt.roots, tt.floor, tt.base, got, goal)
		}
	}
}

// TestFloorGC: the percentage is set when the floor starts and again after each collection, is the collector's
// own between them, and is given back at stop; GOGC in the environment leaves it alone.
func TestFloorGC(t *testing.T) {
	tuned := make(chan int, 1)
	stop := floorGC(func(string) string { return "" }, 1<<40, func(p int) {
		select {
		case tuned <- p:
		default:
		}
	})
	<-tuned // the first, at the start
	// A second floor in the same process leaves the collector to the first.
	floorGC(func(string) string { return "" }, 1<<40, func(int) { t.Error("a second floor tuned") })()
	runtime.GC()
	p := <-tuned // after the collection, from the finalizer
	if p <= 100 {
		t.Fatalf("percentage %d for a floor of a terabyte", p)
	}
	if got := debug.SetGCPercent(p); got != p {
		t.Errorf("the collector's percentage is %d, want %d", got, p)
	}
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after stop the percentage is %d, want 100 back", got)
	}

	floorGC(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}, 1<<40, func(int) { t.Error("tuned with GOGC set") })()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the percentage is %d, want it left at 100", got)
	}
}
