package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// runTraceSummary prints where the requests of an execution trace (-pprof's .latency.trace) spent their time:
// go run ./test/benche2e trace FILE. At c=1 a call's added latency is its server goroutine's time running, waiting
// to run, and blocked; go tool trace shows one goroutine at a time and its -pprof views only the blocking, so this
// sums them a request for the goroutines that serve requests (net/http's conn.serve), whose waits for a request
// to arrive count the requests. Comparing the gateway's summary with the bare proxy's (-bin proxy -pprof) says
// whether a gap is work on the request's path or waiting.
func runTraceSummary(args []string) {
	if len(args) != 1 {
		log.Fatal("usage: benche2e trace FILE")
	}
	f, err := os.Open(args[0])
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	s, err := summarize(f)
	if err != nil {
		log.Fatal(err)
	}
	s.print(os.Stdout)
}

// traceSummary is the time of the goroutines that serve requests, by state, over the requests they served.
type traceSummary struct {
	requests          int
	running, runnable time.Duration
	blocked           map[string]time.Duration // by the reason and the stack where the goroutine blocked
	blocks            map[string]int
}

// Serving goroutines are recognised by net/http's conn.serve on a stack they blocked with (those of the profiling
// endpoints, which serve the profile and this trace, are not requests); a request begins where one waits for its
// first bytes: a read of the connection outside the handler.
const (
	serveFrame   = "net/http.(*conn).serve"
	readFrame    = "net/http.(*connReader).Read"
	handlerFrame = "net/http.serverHandler.ServeHTTP"
	pprofPrefix  = "net/http/pprof."
)

func summarize(r io.Reader) (*traceSummary, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	type goroutine struct {
		serving, profiling bool
		state              trace.GoState
		since              trace.Time
		blocked            string
		waitsForRequest    bool
	}
	s := &traceSummary{blocked: map[string]time.Duration{}, blocks: map[string]int{}}
	gs := map[trace.GoID]*goroutine{}
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		g := gs[st.Resource.Goroutine()]
		if g == nil {
			g = &goroutine{state: from, since: ev.Time()}
			gs[st.Resource.Goroutine()] = g
		}
		frames := stackFuncs(st.Stack)
		g.serving = g.serving || frames[serveFrame]
		g.profiling = g.profiling || anyPrefix(frames, pprofPrefix)
		waitsForRequest := frames[readFrame] && !frames[handlerFrame]
		if g.serving && !g.profiling {
			if g.waitsForRequest && from == trace.GoWaiting {
				s.requests++ // its bytes came
			}
			d := time.Duration(ev.Time() - g.since)
			switch g.state {
			case trace.GoRunning:
				s.running += d
			case trace.GoRunnable:
				s.runnable += d
			case trace.GoWaiting, trace.GoSyscall:
				if g.blocked != "" && !g.waitsForRequest {
					s.blocked[g.blocked] += d
					s.blocks[g.blocked]++
				}
			}
		}
		if to == trace.GoWaiting || to == trace.GoSyscall {
			g.blocked, g.waitsForRequest = st.Reason+" at "+callers(st.Stack), waitsForRequest && to == trace.GoWaiting
		}
		g.state, g.since = to, ev.Time()
	}
}

// stackFuncs are the functions of a stack.
func stackFuncs(st trace.Stack) map[string]bool {
	fs := map[string]bool{}
	for f := range st.Frames() {
		fs[f.Func] = true
	}
	return fs
}

// anyPrefix says a function of frames begins with prefix.
func anyPrefix(frames map[string]bool, prefix string) bool {
	for f := range frames {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// callers names where a goroutine blocked: the first four frames outside the runtime and sync.
func callers(st trace.Stack) string {
	var names []string
	for f := range st.Frames() {
		if strings.HasPrefix(f.Func, "runtime.") || strings.HasPrefix(f.Func, "internal/") || strings.HasPrefix(f.Func, "sync.") {
			continue
		}
		names = append(names, f.Func[strings.LastIndex(f.Func, "/")+1:])
		if len(names) == 4 {
			break
		}
	}
	return strings.Join(names, " < ")
}

func (s *traceSummary) print(w io.Writer) {
	n := time.Duration(max(s.requests, 1))
	fmt.Fprintf(w, "%d requests; a request's server goroutine: running %v, runnable %v, blocked:\n", s.requests,
		(s.running / n).Round(100*time.Nanosecond), (s.runnable / n).Round(100*time.Nanosecond))
	keys := make([]string, 0, len(s.blocked))
	for k := range s.blocked {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return s.blocked[keys[i]] > s.blocked[keys[j]] })
	for _, k := range keys[:min(15, len(keys))] {
		fmt.Fprintf(w, "%10v  %7d times  %s\n", (s.blocked[k] / n).Round(100*time.Nanosecond), s.blocks[k], k)
	}
}
