package bench

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// BenchmarkVideoDownload downloads a 512 MB video directly from the fake and through the gateway, alternately,
// and reports the throughput ratio; then it parks a download half way and reports the live heap the gateway
// holds for it, and the peak heap in use (garbage included) over a whole download.
func BenchmarkVideoDownload(b *testing.B) {
	const size = 512 << 20
	fake := fakes.NewOpenAI(b, "sk-up")
	fake.Unrecorded = true
	fake.SetVideo(fakes.VideoScript{Size: size})
	g := harness.Start(b, harness.WithConfig(fmt.Sprintf(`providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up}
models:
  - {id: sora, modality: video, endpoints: [{provider: openai, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
video: {poll_interval: 1ms, worker_interval: 1h}
`, fake.BaseURL())))
	key, _ := g.Key(b, nil)
	job := g.Do(b, "POST", "/videos", key, map[string]any{"model": "sora", "prompt": "benchmark"}).JSON(b)["id"].(string)
	harness.Eventually(b, 10*time.Second, func() bool { return g.Do(b, "GET", "/videos/"+job, key, nil).JSON(b)["status"] == "completed" })
	client := &http.Client{Transport: &http.Transport{}}
	get := func(url, auth string, limit int64) (io.ReadCloser, error) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+auth)
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != 200 || resp.ContentLength != size {
			resp.Body.Close()
			return nil, fmt.Errorf("status %d, length %d", resp.StatusCode, resp.ContentLength)
		}
		return resp.Body, nil
	}
	download := func(url, auth string) time.Duration {
		start := time.Now()
		body, err := get(url, auth, size)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, body)
		body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		return time.Since(start)
	}
	direct, through := fake.BaseURL()+"/videos/video_job1/content?variant=video", g.URL+"/videos/"+job+"/content"

	var dt, gt time.Duration
	b.ResetTimer()
	for range b.N {
		dt += download(direct, "sk-up")
		gt += download(through, key)
	}
	b.StopTimer()
	mb := float64(size) / (1 << 20)
	b.ReportMetric(mb*float64(b.N)/dt.Seconds(), "direct-MB/s")
	b.ReportMetric(mb*float64(b.N)/gt.Seconds(), "gateway-MB/s")
	b.ReportMetric(100*dt.Seconds()/gt.Seconds(), "throughput-%")

	// Live heap held by one download parked half way (streams are flat: this is buffers, not video).
	base := liveHeap()
	body, err := get(through, key, size)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, body, size/2); err != nil {
		b.Fatal(err)
	}
	held := int64(liveHeap()) - int64(base)
	io.Copy(io.Discard, body)
	body.Close()
	b.ReportMetric(float64(held)/1024, "held-heap-KiB")

	// Peak heap in use over a whole download, sampled, against the same process at rest.
	runtime.GC()
	var rest runtime.MemStats
	runtime.ReadMemStats(&rest)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			for p := peak.Load(); m.HeapInuse > p && !peak.CompareAndSwap(p, m.HeapInuse); p = peak.Load() {
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	download(through, key)
	close(stop)
	<-sampled
	b.ReportMetric(float64(int64(peak.Load())-int64(rest.HeapInuse))/(1<<20), "peak-heap-growth-MB")
}
