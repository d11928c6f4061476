// Package replicas_test runs three gateway processes — the real binary, built once — on one fresh PostgreSQL
// database and the local Redis, and checks that together they behave as one gateway: shared rate limits,
// revocation on every replica at once, budgets that are not overspent, video jobs polled by one replica at a
// time, and a replica killed without losing what the others can finish.
package replicas_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// The speech model costs $0.001 a call: ten characters at $100 per million.
const (
	callText = "0123456789"
	callCost = 0.001
)

// config reaches the upstream directly for speech, and through the poll watch for video.
func config(upstream, watched string) string {
	return fmt.Sprintf(`log: {level: info}
providers:
  - {slug: openai, kind: openai, base_url: %s/v1, api_key: sk-up, timeout: 5s, idle_timeout: 5s}
  - {slug: sora, kind: openai, base_url: %s/v1, api_key: sk-up, timeout: 5s, idle_timeout: 5s}
models:
  - {id: speech, modality: tts, endpoints: [{provider: openai, upstream_model: tts-1, pricing: {per_million_characters: 100}}]}
  - {id: sora, modality: video, endpoints: [{provider: sora, upstream_model: sora-2, pricing: {per_second: 0.1}}]}
  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: gpt}]}
credits: {enabled: true}
video: {poll_interval: 200ms, worker_interval: 50ms}
`, upstream, watched)
}

func TestThreeReplicasBehaveAsOne(t *testing.T) {
	f := newFleet(t, 3)

	// Credits first, while the organization has almost none: $0.01 is ten calls, whatever the replica. Key limits
	// and credits are reserved in the database before the upstream call (as guardrail budgets are), so concurrent
	// calls through the three replicas admit exactly the calls that fit.
	f.cli(t, "credits", "add", "0.01")
	t.Run("credits admit exactly what fits at c=32", func(t *testing.T) {
		key := f.key(t, map[string]any{"name": "credits"})
		f.exactlyTen(t, key, "$0.01 of credits")
	})
	f.cli(t, "credits", "add", "1000")

	t.Run("a rate limit of N per minute admits exactly N across the three", func(t *testing.T) {
		const n = 10
		key := f.key(t, map[string]any{"name": "rate"})
		f.mgmt(t, 1, "PATCH", "/keys/"+key.hash, map[string]any{"requests_per_minute": n}, http.StatusOK, nil)
		whole, cut := f.burst(t, key, 3*n)
		admitted := whole + cut
		t.Logf("MEASURED rate limit: %d per minute, %d of %d concurrent calls admitted, overshoot %d", n, admitted, 3*n, admitted-n)
		if admitted != n {
			t.Errorf("a limit of %d per minute admitted %d calls across three replicas", n, admitted)
		}
	})

	t.Run("a key limit admits exactly what fits at c=32", func(t *testing.T) {
		key := f.key(t, map[string]any{"name": "limited", "limit": 0.01})
		f.exactlyTen(t, key, "a $0.01 key limit")
	})

	t.Run("a guardrail budget is not overspent at c=32", func(t *testing.T) {
		key := f.key(t, map[string]any{"name": "railed"})
		var gr struct {
			Data struct{ ID string } `json:"data"`
		}
		f.mgmt(t, 0, "POST", "/guardrails", map[string]any{"name": "budget", "limit_usd": 0.01, "reset_interval": "daily"}, http.StatusCreated, &gr)
		f.mgmt(t, 1, "POST", "/guardrails/"+gr.Data.ID+"/assignments/keys", map[string]any{"key_hashes": []string{key.hash}}, http.StatusOK, nil)
		f.exactlyTen(t, key, "a $0.01 guardrail budget")

		// Every replica holds the guardrail in its cache since the burst. Raised through one replica, the limit
		// applies on all three at once, well before their caches would read it again (3 s).
		f.mgmt(t, 2, "PATCH", "/guardrails/"+gr.Data.ID, map[string]any{"limit_usd": 1000}, http.StatusOK, nil)
		raised := time.Now()
		for r := range f.replicas {
			for f.status(t, r, "POST", "/audio/speech", key.secret, map[string]any{"model": "speech", "input": callText, "voice": "alloy"}) != http.StatusOK {
				if time.Since(raised) > 1500*time.Millisecond {
					t.Fatalf("replica %d still refuses the key 1.5 s after its guardrail's limit was raised through replica 2", r)
				}
			}
		}
		t.Logf("MEASURED guardrail change: the raised limit applied on all three replicas %v after the PATCH returned", time.Since(raised))
	})

	t.Run("revocation takes effect on every replica at once", func(t *testing.T) {
		key := f.key(t, map[string]any{"name": "revoked"})
		const trials = 50
		worst := make([]time.Duration, trials)
		for i := range trials {
			by := i % len(f.replicas)
			f.mgmt(t, by, "PATCH", "/keys/"+key.hash, map[string]any{"disabled": false}, http.StatusOK, nil)
			for r := range f.replicas { // every replica accepts the key again, and caches it
				deadline := time.Now().Add(10 * time.Second)
				for f.status(t, r, "GET", "/key", key.secret, nil) != http.StatusOK {
					if time.Now().After(deadline) {
						t.Fatalf("trial %d: replica %d refuses a key enabled through replica %d 10 s ago", i, r, by)
					}
				}
			}
			f.mgmt(t, by, "PATCH", "/keys/"+key.hash, map[string]any{"disabled": true}, http.StatusOK, nil)
			acked := time.Now()
			var wg sync.WaitGroup
			took := make([]time.Duration, len(f.replicas))
			for r := range f.replicas {
				wg.Go(func() {
					for f.status(t, r, "GET", "/key", key.secret, nil) != http.StatusUnauthorized {
						if time.Since(acked) > 10*time.Second {
							return
						}
					}
					took[r] = time.Since(acked)
				})
			}
			wg.Wait()
			worst[i] = slices.Max(took)
			if slices.Contains(took, 0) {
				t.Fatalf("trial %d: a replica still accepts the key 10 s after it was disabled through replica %d", i, by)
			}
		}
		slices.Sort(worst)
		p50, p99 := worst[trials/2], worst[(trials*99+99)/100-1]
		t.Logf("MEASURED revocation on all three replicas after the PATCH returned, %d trials: p50 %v, p90 %v, p99 %v, max %v",
			trials, p50, worst[trials*9/10], p99, worst[trials-1])
		// 100 ms is the target; the bound is loose because two shared cores may stall any process for a while.
		// Without invalidation the figure would be the caches' refresh period (3 s) for a key in steady use.
		if p99 > time.Second {
			t.Errorf("revocation p99 %v, want well under the caches' 3 s refresh period", p99)
		}
	})

	t.Run("a video job is polled upstream by one replica at a time", func(t *testing.T) {
		f.upstream.SetVideo(fakes.VideoScript{Polls: 6})
		key := f.key(t, map[string]any{"name": "video"})
		jobs := f.videos(t, key, 6)
		f.finish(t, key, jobs, 0)
		if n := f.polls.maxInFlight(); n != 1 {
			t.Errorf("a video job was polled upstream by %d replicas at once", n)
		}
	})

	t.Run("kill -9 during a c=16 burst, then a restart, loses no record and no charge", func(st *testing.T) {
		killDuringBurst(st, t, f) // the restarted replica lives as long as the fleet
	})

	t.Run("killing a replica loses nothing the others can finish", func(t *testing.T) {
		f.upstream.SetVideo(fakes.VideoScript{Polls: 10})
		key := f.key(t, map[string]any{"name": "survivor"})
		jobs := f.videos(t, key, 6)
		var answered []string // generations of calls the replica answered just before it died
		for range 10 {
			answered = append(answered, f.speak(t, 0, key))
		}
		f.replicas[0].kill(t)
		f.finish(t, key, jobs, 1) // replicas 1 and 2
		// Records still in the killed process's spool are written when it starts again on that spool (see the
		// burst subtest); until then they are missing here.
		lost := 0
		for _, id := range answered {
			if f.status(t, 1, "GET", "/generation?id="+url.QueryEscape(id), key.secret, nil) != http.StatusOK {
				lost++
			}
		}
		t.Logf("MEASURED SIGKILL: %d of the %d generation records of calls answered just before the kill are missing", lost, len(answered))
		if n := f.polls.maxInFlight(); n != 1 {
			t.Errorf("a video job was polled upstream by %d replicas at once", n)
		}
	})
}

// fleet is the replicas under test and what they share.
type fleet struct {
	bin, cfg, dbURL string
	env             []string
	admin           string
	upstream        *fakes.OpenAI
	polls           *pollWatch
	replicas        []*replica
	client          *http.Client
}

type key struct{ secret, hash string }

func newFleet(t *testing.T, n int) *fleet { return newFleetOn(t, n, testdb.PostgresURL(t)) }

// newFleetOn starts n replicas on the database at dbURL (postgres://... or sqlite:PATH).
func newFleetOn(t *testing.T, n int, dbURL string) *fleet {
	redisURL := testdb.RedisURL(t) // before the build, which -short skips with it
	bin := build(t)
	f := &fleet{bin: bin, dbURL: dbURL, admin: "sk-admin-" + random(20),
		upstream: fakes.NewOpenAI(t, "sk-up"), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	f.upstream.Unrecorded = true
	f.polls = watchPolls(t, f.upstream.URL)
	f.cfg = filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(f.cfg, []byte(config(f.upstream.URL, f.polls.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	f.env = append(os.Environ(), "SWITCHBOARD_CONFIG="+f.cfg, "DATABASE_URL="+f.dbURL, "REDIS_URL="+redisURL,
		"SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY="+f.admin)
	f.replicas = append(f.replicas, f.start(t)) // the first creates the management key; then the others join
	rest := make([]*replica, n-1)
	var wg sync.WaitGroup
	for i := range rest {
		wg.Go(func() { rest[i] = f.start(t) })
	}
	wg.Wait()
	f.replicas = append(f.replicas, rest...)
	return f
}

// build compiles the gateway once for the test.
func build(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "switchboard")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboard-ai/switchboard/cmd/switchboard").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// replica is one gateway process.
type replica struct {
	url   string
	spool string
	cmd   *exec.Cmd
	log   *bytes.Buffer
	done  chan struct{}
}

func (f *fleet) start(t *testing.T) *replica { return f.startOn(t, t.TempDir()) }

// restart starts replica i again on its spool directory, as a supervisor would after a crash.
func (f *fleet) restart(t *testing.T, i int) { f.replicas[i] = f.startOn(t, f.replicas[i].spool) }

// startOn starts a replica whose spool lives in dir.
func (f *fleet) startOn(t *testing.T, dir string) *replica {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	r := &replica{url: "http://" + addr, spool: dir, log: &bytes.Buffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(f.bin, "serve")
	r.cmd.Env = append(slices.Clone(f.env), "SWITCHBOARD_SERVER_ADDR="+addr, "SWITCHBOARD_GENERATIONS_SPOOL_DIR="+dir)
	r.cmd.Stdout, r.cmd.Stderr = &syncWriter{w: r.log}, &syncWriter{w: r.log}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("replica %s log:\n%s", addr, r.log)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := f.client.Get(r.url + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case <-r.done:
			t.Fatalf("replica %s exited at start:\n%s", addr, r.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not ready within 30 s:\n%s", addr, r.log)
		}
	}
}

// kill ends the process at once, as a crash or an OOM kill would.
func (r *replica) kill(t *testing.T) {
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-r.done
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// cli runs an administrative command of the binary on the fleet's database.
func (f *fleet) cli(t *testing.T, args ...string) {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = f.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("switchboard %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// do sends a request to replica r and decodes a JSON answer into out when out is not nil.
func (f *fleet) do(t *testing.T, r int, method, path, secret string, body any, out any) int {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.replicas[r].url+"/api/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Errorf("%s %s on replica %d: %v", method, path, r, err)
		return 0
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil && resp.StatusCode == http.StatusOK {
		return statusCut
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Errorf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

func (f *fleet) status(t *testing.T, r int, method, path, secret string, body any) int {
	return f.do(t, r, method, path, secret, body, nil)
}

func (f *fleet) mgmt(t *testing.T, r int, method, path string, body any, want int, out any) {
	t.Helper()
	if st := f.do(t, r, method, path, f.admin, body, out); st != want {
		t.Fatalf("%s %s on replica %d: %d, want %d", method, path, r, st, want)
	}
}

func (f *fleet) key(t *testing.T, fields map[string]any) key {
	t.Helper()
	var created struct {
		Key  string                `json:"key"`
		Data struct{ Hash string } `json:"data"`
	}
	f.mgmt(t, 0, "POST", "/keys", fields, http.StatusCreated, &created)
	return key{secret: created.Key, hash: created.Data.Hash}
}

// statusCut is what do returns for a 200 whose body broke off: a stream the upstream cut, which is not billed.
const statusCut = -1

// burst sends n speech calls at once, spread over the live replicas, and counts those admitted and answered
// whole, and those admitted whose stream broke off (not billed). Every other answer must be a refusal (402, 403
// or 429), never an error.
func (f *fleet) burst(t *testing.T, k key, n int) (whole, cut int) {
	t.Helper()
	var w, c atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st := f.status(t, i%len(f.replicas), "POST", "/audio/speech", k.secret,
				map[string]any{"model": "speech", "input": callText, "voice": "alloy"})
			switch st {
			case http.StatusOK:
				w.Add(1)
			case statusCut:
				c.Add(1)
			case http.StatusPaymentRequired, http.StatusForbidden, http.StatusTooManyRequests:
			default:
				t.Errorf("speech call %d: %d", i, st)
			}
		})
	}
	wg.Wait()
	return int(w.Load()), int(c.Load())
}

// exactlyTen makes 32 concurrent speech calls of $0.001 through the three replicas with a key whose budget (what)
// fits ten, and fails unless exactly ten are answered whole: a call whose stream the upstream cut is not billed and
// gives its reservation back, so a cut call may leave room for another.
func (f *fleet) exactlyTen(t *testing.T, k key, what string) {
	t.Helper()
	whole, cut := f.burst(t, k, 32)
	t.Logf("MEASURED %s: %d of 32 concurrent calls answered whole (10 fit), %d cut", what, whole, cut)
	if whole > 10 || whole < 10-cut {
		t.Errorf("%s admitted %d calls of $0.001 (and %d cut) across three replicas, want 10", what, whole, cut)
	}
}

// speak makes one speech call through replica r and returns its generation id.
func (f *fleet) speak(t *testing.T, r int, k key) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": "speech", "input": callText, "voice": "alloy"})
	req, _ := http.NewRequest("POST", f.replicas[r].url+"/api/v1/audio/speech", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+k.secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("speech on replica %d: %d", r, resp.StatusCode)
	}
	return resp.Header.Get("X-Generation-Id")
}

// videos starts n video jobs, spread over the live replicas.
func (f *fleet) videos(t *testing.T, k key, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		var job struct{ ID string }
		if st := f.do(t, i%len(f.replicas), "POST", "/videos", k.secret,
			map[string]any{"model": "sora", "prompt": "a cat on a skateboard", "duration": 8}, &job); st != http.StatusAccepted {
			t.Fatalf("create video: %d", st)
		}
		ids = append(ids, job.ID)
	}
	return ids
}

// finish polls the jobs through the replicas from `from` on (the workers poll too) until every one completed,
// and checks that each left its generation record.
func (f *fleet) finish(t *testing.T, k key, jobs []string, from int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i, id := range jobs {
		for {
			r := from + i%(len(f.replicas)-from)
			var job struct {
				Status       string
				GenerationID *string `json:"generation_id"`
			}
			if st := f.do(t, r, "GET", "/videos/"+id, k.secret, nil, &job); st != http.StatusOK {
				t.Fatalf("GET video %s on replica %d: %d", id, r, st)
			}
			if job.Status == "completed" {
				// Records are written off the request path, within milliseconds.
				for f.status(t, r, "GET", "/generation?id="+url.QueryEscape(*job.GenerationID), k.secret, nil) != http.StatusOK {
					if time.Now().After(deadline) {
						t.Fatalf("video %s completed, but its generation record %s never appeared", id, *job.GenerationID)
					}
					time.Sleep(20 * time.Millisecond)
				}
				break
			}
			if job.Status != "pending" && job.Status != "in_progress" || time.Now().After(deadline) {
				t.Fatalf("video %s: %s", id, job.Status)
			}
			time.Sleep(50 * time.Millisecond) // the job advances with the upstream's polls: nothing to wait on
		}
	}
}

// pollWatch stands between the replicas and the upstream, and counts the polls of each video job in flight at
// once. A poll takes longer than the poll interval (200 ms), so that a replica claiming a job as soon as the
// interval is over would overlap the poll in flight.
type pollWatch struct {
	*httptest.Server
	mu       sync.Mutex
	inFlight map[string]int
	max      int
}

func watchPolls(t *testing.T, upstream string) *pollWatch {
	target, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(target)
	w := &pollWatch{inFlight: map[string]int{}}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		job, isPoll := strings.CutPrefix(r.URL.Path, "/v1/videos/")
		if isPoll = isPoll && r.Method == http.MethodGet && !strings.Contains(job, "/"); isPoll {
			w.enter(job)
			defer w.leave(job)
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *pollWatch) enter(job string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight[job]++
	w.max = max(w.max, w.inFlight[job])
}

func (w *pollWatch) leave(job string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight[job]--
}

func (w *pollWatch) maxInFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}
