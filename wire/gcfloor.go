package wire

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
)

// HeapFloor is the heap the gateway lets itself reach before the garbage collector runs, however small its live
// heap. Go's default (GOGC=100) collects when the heap has doubled since the last collection, and at least every
// 4 MB: a gateway's live heap is 2-4 MB, so it collected every 250 calls or so (4 cycles a thousand speech calls),
// each taking a share of the two cores (a quarter of GOMAXPROCS marking, and the assists) from the calls in flight.
// With the floor (benche2e, speech, alternated runs): 0.2-0.4 cycles a thousand calls, the gateway's CPU a call
// 75-77 µs against 83-84 on SQLite and 61-64 against 71-72 on PostgreSQL, the p99 added at one call in flight on
// PostgreSQL 0.40-0.61 ms against 0.62-0.70; its cost, a peak resident size of 114 MB against 53. Above the floor,
// GOGC's doubling applies as before, so a gateway holding a large live heap uses no more memory than it did.
const HeapFloor = 64 << 20

// gcFloor sets the collector's percentage after each collection so that its goal is the floor (see gcPercent).
// It is re-armed by a finalizer, which runs once after each collection.
type gcFloor struct {
	floor    uint64
	original int // the percentage before, restored by stop
	sample   []rtmetrics.Sample
	mu       sync.Mutex
	stopped  bool
	tuned    func(percent int) // observes each setting (tests)
}

// gcSentinel is the object whose finalizer re-tunes the collector: unreachable as soon as it is armed, it is
// found by the next collection.
type gcSentinel struct{ f *gcFloor }

// floorGC keeps the collector's goal at floor at least (see HeapFloor), until stop. GOGC in the environment is
// the operator's own choice, and is left to govern alone; GOMEMLIMIT still bounds the heap as it does.
func floorGC(getenv func(string) string, floor uint64, tuned func(int)) (stop func()) {
	if getenv("GOGC") != "" || !floorActive.CompareAndSwap(false, true) {
		return func() {}
	}
	f := &gcFloor{floor: floor, original: debug.SetGCPercent(100), tuned: tuned,
		sample: []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
	debug.SetGCPercent(f.original)
	f.tune()
	f.arm()
	return f.stop
}

func (f *gcFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{f}, func(s *gcSentinel) {
		if s.f.tune() {
			s.f.arm()
		}
	})
}

// tune sets the percentage for the live heap the last collection left, and the stacks and globals it scanned,
// and says whether to go on.
func (f *gcFloor) tune() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	rtmetrics.Read(f.sample)
	var v [3]uint64
	for i, s := range f.sample {
		if s.Value.Kind() == rtmetrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	p := gcPercent(v[0], v[1]+v[2], f.floor, f.original)
	debug.SetGCPercent(p)
	if f.tuned != nil {
		f.tuned(p)
	}
	return true
}

func (f *gcFloor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	debug.SetGCPercent(f.original)
	floorActive.Store(false)
}

// floorActive is set while a floor runs: the collector is the process's, so a second Serve in the same process
// (tests run several) leaves it to the first, whose stop gives back the percentage it found.
var floorActive atomic.Bool

// gcPercent is the smallest percentage, not below base, whose goal for a live heap of live bytes reaches floor,
// and no larger. The collector's goal (mgcpacer.go, commit) is the larger of live + (live + roots)·p/100, roots
// being the stacks and globals the last collection scanned, and a minimum heap that is 4 MB at 100 % and grows
// with the percentage (4 MB·p/100): for a live heap under 4 MB the minimum is what reaches the floor (a
// percentage from the live heap alone, 6,300 % for a megabyte, made a goal of 252 MB), and the roots count as the
// runtime counts them (a percentage from the live heap alone, 700 % for 8 MB live and 8 MB of stacks, made a
// goal of 120 MB; the stacks of many calls in flight are that large). A live heap under a megabyte counts as one
// (the first collections of a process), so the percentage stays finite.
func gcPercent(live, roots, floor uint64, base int) int {
	live = max(live, 1<<20)
	if live >= floor {
		return base
	}
	return max(base, int(min((floor-live)*100/(live+roots), floor*100/minHeap)))
}

// minHeap is the Go runtime's minimum heap goal at GOGC=100 (defaultHeapMinimum).
const minHeap = 4 << 20
