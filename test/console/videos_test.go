package console_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestConsoleVideosAndSpeech: the video jobs page lists jobs newest first with their status, and links a completed
// job's content, which the console streams to the signed-in browser; a speech generation's page says its audio is
// not stored.
func TestConsoleVideosAndSpeech(t *testing.T) {
	t.Parallel()
	oai := fakes.NewOpenAI(t, "sk-up")
	oai.SetVideo(fakes.VideoScript{Polls: 0, Size: 50_000})
	clock := harness.NewClock(time.Now().UTC().Truncate(time.Microsecond)) // sessions expire by the real time
	g := harness.Start(t, harness.WithClock(clock), harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up}
models:
  - {id: sora, modality: video, endpoints: [{provider: openai, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
  - {id: tts, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1}]}
video:
  poll_interval: 1s
  worker_interval: 1h
`, oai.BaseURL())))
	key, _ := g.Key(t, map[string]any{"name": "video key"})
	var jobs []string
	for i, prompt := range []string{"a cat", "a dog", "a <b>bird</b>"} {
		r := g.Do(t, "POST", "/videos", key, map[string]any{"model": "sora", "prompt": prompt, "duration": 4})
		if r.Status != http.StatusAccepted {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		jobs = append(jobs, r.JSON(t)["id"].(string))
		clock.Advance(time.Minute)
		if i == 0 { // the first job completes when it is next read; the others run on
			if st := g.Do(t, "GET", "/videos/"+jobs[0], key, nil).JSON(t)["status"]; st != "completed" {
				t.Fatalf("the first job is %v", st)
			}
			oai.SetVideo(fakes.VideoScript{Polls: 100, Size: 50_000})
		}
	}

	b := newBrowser(t, g.Root)
	b.signIn(g.Admin)
	p := b.do("GET", "/console/videos", nil)
	if p.Status != http.StatusOK {
		t.Fatalf("videos: %d %s", p.Status, p.Body)
	}
	at := func(s string) int {
		i := strings.Index(p.Body, s)
		if i < 0 {
			t.Fatalf("the page lacks %q:\n%s", s, p.Body)
		}
		return i
	}
	if !(at(jobs[2]) < at(jobs[1]) && at(jobs[1]) < at(jobs[0])) {
		t.Fatal("the jobs are not listed newest first")
	}
	content := "/console/videos/" + jobs[0] + "/content?index=0"
	at(`<td class="status">completed</td>`)
	at(`<td class="status">pending</td>`)
	at(`href="` + content + `"`)
	if strings.Contains(p.Body, "/console/videos/"+jobs[1]+"/content") {
		t.Fatal("a pending job links content")
	}

	v := b.do("GET", content, nil)
	want, _ := io.ReadAll(fakes.NewVideoBytes(50_000))
	if v.Status != http.StatusOK || v.Header.Get("Content-Type") != "video/mp4" || !bytes.Equal([]byte(v.Body), want) ||
		v.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("content: %d %v (%d bytes)", v.Status, v.Header, len(v.Body))
	}
	for _, tt := range []struct {
		path   string
		status int
		shows  string
	}{
		{"/console/videos/" + jobs[1] + "/content", http.StatusConflict, "once it is completed"},
		{"/console/videos/" + jobs[0] + "/content?index=3", http.StatusNotFound, "out of range"},
		{"/console/videos/" + jobs[0] + "/content?index=-1", http.StatusBadRequest, "index"},
		{"/console/videos/nope/content", http.StatusNotFound, "not found"},
		{"/console/videos?after=bogus", http.StatusBadRequest, "cursor"},
	} {
		if p := b.do("GET", tt.path, nil); p.Status != tt.status || !strings.Contains(p.Body, tt.shows) {
			t.Errorf("%s: %d %.300q", tt.path, p.Status, p.Body)
		}
	}
	if p := newBrowser(t, g.Root).do("GET", content, nil); p.Status != http.StatusSeeOther {
		t.Fatalf("content without a session: %d", p.Status)
	}

	// A speech generation: its page says the audio is not stored.
	r := g.Do(t, "POST", "/audio/speech", key, map[string]any{"model": "tts", "input": "Hello there", "voice": "alloy"})
	id := r.Header.Get("X-Generation-Id")
	if r.Status != http.StatusOK || id == "" {
		t.Fatalf("speech: %d %v", r.Status, r.Header)
	}
	harness.Eventually(t, 10*time.Second, func() bool { return g.Do(t, "GET", "/generation?id="+id, key, nil).Status == 200 })
	if p := b.do("GET", "/console/generations/"+id, nil); p.Status != http.StatusOK || !strings.Contains(p.Body, `id="audio"`) ||
		!strings.Contains(p.Body, "audio of this speech generation is not stored") || strings.Contains(p.Body, "<audio") {
		t.Fatalf("speech generation: %d %s", p.Status, p.Body)
	}
}
