// Package bench measures the gateway against a direct call to the same fake upstream on loopback, in the same
// run: the numbers are ratios and differences, not absolute timings. Run with
//
//	go test -run '^$' -bench . -benchtime 2000x ./test/bench/
package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

type rig struct {
	fake    *fakes.OpenAI
	gw      *harness.Gateway
	key     string
	client  *http.Client
	direct  []byte // request body for the fake
	through []byte // request body for the gateway
}

// newRig serves clips of size bytes (for any text) from a fake, directly and through a gateway.
func newRig(b *testing.B, size int64) *rig {
	text := "Hello"
	fake := fakes.NewOpenAI(b, "sk-up")
	fake.Unrecorded = true
	fake.Default = fakes.Step{Size: size}
	gw := harness.Start(b, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up}
models:
  - {id: tts, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1, pricing: {per_million_characters: 15}}]}
`, fake.BaseURL())))
	key, _ := gw.Key(b, nil)
	direct, _ := json.Marshal(map[string]any{"model": "tts-1", "input": text, "voice": "alloy", "response_format": "pcm"})
	through, _ := json.Marshal(map[string]any{"model": "tts", "input": text, "voice": "alloy", "response_format": "pcm"})
	return &rig{fake: fake, gw: gw, key: key, direct: direct, through: through,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}}
}

// call makes one request, reads the whole body, and returns the time it took and the bytes read.
func (r *rig) call(b *testing.B, viaGateway bool) (time.Duration, int64) {
	url, body, auth := r.fake.BaseURL()+"/audio/speech", r.direct, "sk-up"
	if viaGateway {
		url, body, auth = r.gw.URL+"/audio/speech", r.through, r.key
	}
	start, resp := post(b, r.client, url, body, auth)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	return time.Since(start), n
}

// run makes b.N pairs of calls, direct and through the gateway alternately, from conc goroutines.
func (r *rig) run(b *testing.B, conc int) (direct, gateway []time.Duration, directBytes, gatewayBytes int64) {
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				d, dn := r.call(b, false)
				g, gn := r.call(b, true)
				mu.Lock()
				direct, gateway = append(direct, d), append(gateway, g)
				directBytes, gatewayBytes = directBytes+dn, gatewayBytes+gn
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	return
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkSpeechAddedLatency: a short clip (0.5 s of audio), at concurrency 1 and 32; the added latency is the
// gateway's quantile minus the direct call's.
func BenchmarkSpeechAddedLatency(b *testing.B) {
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			r := newRig(b, 24000) // half a second of audio
			direct, gateway, _, _ := r.run(b, conc)
			for _, q := range []struct {
				name string
				q    float64
			}{{"p50", 0.5}, {"p99", 0.99}} {
				d, g := quantile(direct, q.q), quantile(gateway, q.q)
				b.ReportMetric(ms(d), "direct-"+q.name+"-ms")
				b.ReportMetric(ms(g), "gateway-"+q.name+"-ms")
				b.ReportMetric(ms(g-d), "added-"+q.name+"-ms")
			}
		})
	}
}

// BenchmarkSpeechThroughput: 1 MB clips at concurrency 1 and 8, with the upstream flushing 4 KiB or 32 KiB
// chunks: bytes per second through the gateway over direct. A proxy adds a read and a write for every chunk it
// forwards; when the client, the fake, the gateway and PostgreSQL share two saturated cores, that extra work
// shows directly in the ratio.
func BenchmarkSpeechThroughput(b *testing.B) {
	for _, tc := range []struct{ conc, chunk int }{{1, fakes.ChunkSize}, {1, 32771}, {8, fakes.ChunkSize}, {8, 32771}} {
		b.Run(fmt.Sprintf("c%d/chunk%dKiB", tc.conc, tc.chunk>>10), func(b *testing.B) {
			r := newRig(b, 1<<20)
			r.fake.Default.Chunk = tc.chunk
			direct, gateway, db, gb := r.run(b, tc.conc)
			var dt, gt time.Duration
			for i := range direct {
				dt, gt = dt+direct[i], gt+gateway[i]
			}
			dRate, gRate := float64(db)/dt.Seconds(), float64(gb)/gt.Seconds()
			b.ReportMetric(dRate/(1<<20), "direct-MB/s-per-stream")
			b.ReportMetric(gRate/(1<<20), "gateway-MB/s-per-stream")
			b.ReportMetric(100*gRate/dRate, "throughput-%")
		})
	}
}

// BenchmarkSpeechHeapPerStream holds 32 streams of 1 MB or 100 MB clips in flight — each client stops reading
// halfway, so every stream is parked holding whatever it holds — and measures the live heap against the same
// process with none. Directly from the fake and through the gateway, in the same run; the gateway's share is
// the difference. Flat in the clip's size means nothing is buffered.
func BenchmarkSpeechHeapPerStream(b *testing.B) {
	for _, size := range []int64{1 << 20, 100 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			r := newRig(b, size)
			const streams = 32
			r.heldHeap(b, streams, false) // warm: as many connections as streams, pools, caches
			r.heldHeap(b, streams, true)
			var direct, gateway int64
			for range b.N {
				direct += r.heldHeap(b, streams, false)
				gateway += r.heldHeap(b, streams, true)
			}
			n := float64(b.N * streams * 1024)
			b.ReportMetric(float64(direct)/n, "direct-heap-KiB-per-stream")
			b.ReportMetric(float64(gateway)/n, "gateway-path-heap-KiB-per-stream")
			b.ReportMetric(float64(gateway-direct)/n, "added-heap-KiB-per-stream")
		})
	}
}

// heldHeap starts streams, lets each read half its clip, and returns the live heap they hold at that point.
func (r *rig) heldHeap(b *testing.B, streams int, viaGateway bool) int64 {
	url, body, auth := r.fake.BaseURL()+"/audio/speech", r.direct, "sk-up"
	if viaGateway {
		url, body, auth = r.gw.URL+"/audio/speech", r.through, r.key
	}
	half := r.fake.Default.Size / 2
	base := liveHeap()
	var parked, done sync.WaitGroup
	release := make(chan struct{})
	for range streams {
		parked.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+auth)
			resp, err := r.client.Do(req)
			if err != nil {
				b.Error(err)
				parked.Done()
				return
			}
			_, err = io.CopyN(io.Discard, resp.Body, half)
			parked.Done()
			<-release
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
			if err != nil {
				b.Error(err)
			}
		}()
	}
	parked.Wait()
	held := int64(liveHeap()) - int64(base)
	close(release)
	done.Wait()
	return held
}

// liveHeap is the heap in use after collections: what is retained, not garbage waiting for the collector (the
// second collection empties sync.Pool's victim cache too).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// post sends one JSON request with a bearer key and returns when it was sent and the response.
func post(b *testing.B, client *http.Client, url string, body []byte, auth string) (time.Time, *http.Response) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return start, resp
}
