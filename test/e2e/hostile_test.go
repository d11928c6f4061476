package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/testdb"
)

// The gateway as users run it: the built binary, its own process, measured from outside (its answers, its records
// through the API, its resident memory from /proc, its output).

// buildGateway compiles the gateway for the test.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchboard")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboard-ai/switchboard/cmd/switchboard").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is one gateway process.
type process struct {
	url, admin string
	cmd        *exec.Cmd
	out        *lockedBuffer
	done       chan struct{}
	client     *http.Client
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startGateway runs the binary (through wrap, when given: a command line that ends by exec'ing its last arguments)
// with the configuration and environment, and waits until it is ready.
func startGateway(t *testing.T, bin, config string, env []string, wrap ...string) *process {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := &process{url: "http://" + addr, admin: "sk-admin-" + randomHex(20), out: &lockedBuffer{}, done: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	args := append(append([]string(nil), wrap...), bin, "serve")
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Env = append(os.Environ(), append([]string{"SWITCHBOARD_CONFIG=" + cfg, "SWITCHBOARD_SERVER_ADDR=" + addr,
		"SWITCHBOARD_BOOTSTRAP_MANAGEMENT_KEY=" + p.admin}, env...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() { // what went wrong: its warnings and errors, and its last lines
			var notable []string
			for _, line := range strings.Split(p.out.String(), "\n") {
				if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
					notable = append(notable, line)
				}
			}
			out := p.out.String()
			t.Logf("gateway warnings and errors:\n%s\nits last output:\n%s", strings.Join(notable[:min(len(notable), 40)], "\n"),
				out[max(0, len(out)-4<<10):])
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := p.client.Get(p.url + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the gateway exited at start:\n%s", p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway was not ready within 60 s:\n%s", p.out.String())
		}
	}
}

// call sends a request to the API and returns the response with its body unread.
func (p *process) call(t *testing.T, ctx context.Context, method, path, key string, body any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, p.url+"/api/v1"+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// json sends a request and decodes its answer, returning its status.
func (p *process) json(t *testing.T, method, path, key string, body any, out any) int {
	t.Helper()
	resp := p.call(t, context.Background(), method, path, key, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode
}

// key creates an inference key and returns it with its hash.
func (p *process) key(t *testing.T) (secret, hash string) {
	t.Helper()
	var created struct {
		Key  string                `json:"key"`
		Data struct{ Hash string } `json:"data"`
	}
	if st := p.json(t, "POST", "/keys", p.admin, map[string]any{"name": "e2e"}, &created); st != http.StatusCreated {
		t.Fatalf("create key: %d", st)
	}
	return created.Key, created.Data.Hash
}

// generation reads a call's record once the gateway has written it.
func (p *process) generation(t *testing.T, id string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var rec struct{ Data map[string]any }
		if p.json(t, "GET", "/generation?id="+id, p.admin, nil, &rec) == http.StatusOK {
			return rec.Data
		}
	}
	t.Fatalf("generation %s: no record within 10 s", id)
	return nil
}

// rss is the process's resident memory, in bytes.
func (p *process) rss(t *testing.T) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// peakRSS runs f while it samples the process's resident memory every 5 ms, and returns the most it saw above what
// it was before.
func (p *process) peakRSS(t *testing.T, f func()) (growth, before int64) {
	before = p.rss(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := p.rss(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-sampled
	return max(peak.Load()-before, 0), before
}

// events reads a stream's events: its deltas' text, and the error of its last event, if any.
func events(t *testing.T, body io.Reader) (text string, bytes int64, errEvent map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
			Error   map[string]any
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event of %d bytes: %v", len(data), err)
		}
		for _, c := range ev.Choices {
			bytes += int64(len(c.Delta.Content))
			if len(text) < 1<<10 {
				text += c.Delta.Content
			}
		}
		if ev.Error != nil {
			errEvent = ev.Error
		}
	}
	return text, bytes, errEvent
}

// TestHostileUpstreams runs the built gateway against an upstream that stalls after its first token, never stops,
// floods, bills a usage it could not have used and writes the gateway's key into its answer, with every log line
// in JSON at debug level and a Redis that refuses connections. Each misbehaviour ends as docs/hardening.md says,
// the flood's memory is measured from outside (the gateway's RSS growth under 64 MB for a call not streamed, under
// 16 MB for a streamed one whose caller reads), and the whole output holds no key, hash, provider key or prompt.
func TestHostileUpstreams(t *testing.T) {
	t.Parallel()
	const providerKey = "sk-hostile-upstream-0123456789abcdef"
	const prompt = "Tell me a story nobody else may read"
	up := fakes.NewHostile(t, providerKey)
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := refused.Addr().String()
	_ = refused.Close() // nothing listens there: Redis refuses connections
	var models strings.Builder
	for _, m := range []string{"plain", "stall", "endless", "flood", "usage", "leak"} {
		fmt.Fprintf(&models, "  - {id: %s, modality: chat, endpoints: [{provider: hostile, upstream_model: %s, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}\n", m, m)
	}
	dbURL := testdb.PostgresURL(t) // before the build, which -short skips with it
	p := startGateway(t, buildGateway(t), fmt.Sprintf(`log: {level: debug, format: json}
providers:
  - {slug: hostile, kind: openai, base_url: %s, api_key: %s, timeout: 5s, idle_timeout: 1s}
models:
%slimits: {requests_per_minute: 100000, answer_timeout: 3s}
redis: {url: "redis://%s/0"}
`, up.BaseURL(), providerKey, models.String(), redisAddr), []string{"DATABASE_URL=" + dbURL,
		"SWITCHBOARD_GENERATIONS_SPOOL_DIR=" + t.TempDir()})
	key, hash := p.key(t)
	ask := func(model string, stream bool) map[string]any {
		return map[string]any{"model": model, "stream": stream, "max_tokens": 100,
			"messages": []any{map[string]any{"role": "user", "content": prompt}}}
	}
	// Every call is bounded, so that a gateway that never answers fails the test rather than holding it.
	bounded := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
	whole := func(model string, stream bool) (*http.Response, []byte) {
		resp := p.call(t, bounded(), "POST", "/chat/completions", key, ask(model, stream))
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil && !stream {
			t.Fatalf("%s: %v", model, err)
		}
		return resp, raw
	}
	for range 5 { // warm: the key cached, the connections made, the heap at its working size
		if resp, raw := whole("plain", true); resp.StatusCode != 200 {
			t.Fatalf("plain: %d %s", resp.StatusCode, raw)
		}
	}
	reason := func(raw []byte) string {
		var e struct {
			Error struct{ Metadata struct{ Reason string } }
		}
		_ = json.Unmarshal(raw, &e)
		return e.Error.Metadata.Reason
	}

	t.Run("stall after the first token", func(t *testing.T) {
		resp := p.call(t, context.Background(), "POST", "/chat/completions", key, ask("stall", true))
		text, _, ev := events(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || text != "Hello" || ev == nil || fmt.Sprint(ev["code"]) != "524" {
			t.Fatalf("streamed: %d, %q, then %v; want the token, then an error event of code 524", resp.StatusCode, text, ev)
		}
		rec := p.generation(t, resp.Header.Get("X-Generation-Id"))
		if rec["finish_reason"] != "error" || rec["cancelled"] != false {
			t.Fatalf("record: finish %v, cancelled %v; want a failure, not a caller who left", rec["finish_reason"], rec["cancelled"])
		}
		if resp, raw := whole("stall", false); resp.StatusCode != 524 {
			t.Fatalf("not streamed: %d %s; want 524", resp.StatusCode, raw)
		}
	})

	t.Run("endless", func(t *testing.T) {
		resp, raw := whole("endless", false)
		if resp.StatusCode != 524 || reason(raw) != "upstream_answer_timeout" {
			t.Fatalf("not streamed: %d %s; want 524 upstream_answer_timeout", resp.StatusCode, raw)
		}
		ctx, cancel := context.WithCancel(context.Background())
		resp = p.call(t, ctx, "POST", "/chat/completions", key, ask("endless", true))
		if _, err := io.ReadFull(resp.Body, make([]byte, 4<<10)); err != nil { // some tokens, then the caller leaves
			t.Fatal(err)
		}
		cancel()
		resp.Body.Close()
		if rec := p.generation(t, resp.Header.Get("X-Generation-Id")); rec["finish_reason"] != "cancelled" {
			t.Fatalf("a caller who left an endless stream: finish %v", rec["finish_reason"])
		}
	})

	t.Run("flood", func(t *testing.T) {
		var resp *http.Response
		var raw []byte
		var n int64
		var ev map[string]any
		streamed := func() {
			resp = p.call(t, bounded(), "POST", "/chat/completions", key, ask("flood", true))
			_, n, ev = events(t, resp.Body)
			resp.Body.Close()
		}
		// The gateway lets its heap reach 64 MB before it collects (wire.HeapFloor): a fresh process grows that
		// far with any garbage. The first flood of each kind fills it; the second is measured against the heap's
		// working size, as the figures were (110 MB before).
		cold, coldBefore := p.peakRSS(t, streamed)
		coldWhole, _ := p.peakRSS(t, func() { resp, raw = whole("flood", false) })
		t.Logf("MEASURED flood, first of each kind: RSS %d MB before, streamed grew %.1f MB, then not streamed %.1f MB",
			coldBefore>>20, float64(cold)/(1<<20), float64(coldWhole)/(1<<20))
		growth, before := p.peakRSS(t, streamed)
		t.Logf("MEASURED flood, streamed, the caller reading: RSS %d MB before, grew %.1f MB at most; %.1f MB delivered",
			before>>20, float64(growth)/(1<<20), float64(n)/(1<<20))
		if resp.StatusCode != 200 || ev == nil || fmt.Sprint(ev["code"]) != "502" || n < 8<<20-(1<<20) {
			t.Fatalf("streamed: %d, %d bytes, then %v; want 8 MiB, then an error event of code 502", resp.StatusCode, n, ev)
		}
		if growth > 16<<20 {
			t.Errorf("a streamed flood grew the gateway by %d MB, want under 16", growth>>20)
		}
		rec := p.generation(t, resp.Header.Get("X-Generation-Id"))
		// Billed for what was delivered, at the estimate, never past its reservation: a token a byte of the prompt
		// (8 + 4 a message) at $1 a million, and max_tokens 100 at $2.
		if cost, _ := strconv.ParseFloat(fmt.Sprint(rec["total_cost"]), 64); cost <= 0 || cost > (8+4+float64(len(prompt))+200)/1e6 {
			t.Errorf("a flood streamed billed %v", rec["total_cost"])
		}

		growth, before = p.peakRSS(t, func() { resp, raw = whole("flood", false) })
		t.Logf("MEASURED flood, not streamed: RSS %d MB before, grew %.1f MB at most", before>>20, float64(growth)/(1<<20))
		if resp.StatusCode != 502 || reason(raw) != "upstream_answer_too_large" {
			t.Fatalf("not streamed: %d %.300s; want 502 upstream_answer_too_large", resp.StatusCode, raw)
		}
		if growth > 64<<20 {
			t.Errorf("a flood not streamed grew the gateway by %d MB, want under 64", growth>>20)
		}
		if rec := p.generation(t, resp.Header.Get("X-Generation-Id")); fmt.Sprint(rec["total_cost"]) != "0" {
			t.Errorf("a flood not streamed billed %v", rec["total_cost"])
		}
	})

	t.Run("implausible usage", func(t *testing.T) {
		resp, raw := whole("usage", false)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
		rec := p.generation(t, resp.Header.Get("X-Generation-Id"))
		if rec["native_tokens_prompt"] != 9_999_999.0 || rec["tokens_prompt"] == 9_999_999.0 ||
			!strings.Contains(fmt.Sprint(rec["guardrail_flags"]), "usage_implausible") {
			t.Fatalf("record: %v tokens billed, %v reported, flags %v", rec["tokens_prompt"], rec["native_tokens_prompt"], rec["guardrail_flags"])
		}
		if cost, _ := strconv.ParseFloat(fmt.Sprint(rec["total_cost"]), 64); cost >= 1e-4 {
			t.Fatalf("billed %v for 9,999,999 prompt tokens of a short prompt ($10 before)", rec["total_cost"])
		}
	})

	t.Run("the gateway's key in the answer", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			resp, raw := whole("leak", stream)
			if resp.StatusCode != 200 || strings.Contains(string(raw), providerKey[len(providerKey)/2:]) || !strings.Contains(string(raw), "[REDACTED]") {
				t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, raw)
			}
		}
	})

	out := p.out.String()
	redisLines := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("a line not in the configured format (JSON): %q", line)
		}
		if strings.Contains(line, `"source":"go-redis"`) {
			redisLines++
		}
	}
	if redisLines == 0 {
		t.Errorf("no line of go-redis's in the gateway's output: is it routed through the logger?")
	}
	for _, s := range []string{key, hash, p.admin, providerKey, prompt} {
		if strings.Contains(out, s) {
			t.Errorf("%.20q... reached the gateway's output", s)
		}
	}
}

// dbProxy stands between the gateway and PostgreSQL, so that the test can take the database away (connections
// refused, and those open cut) and bring it back.
type dbProxy struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	down     bool
	conns    []net.Conn
}

func newDBProxy(t *testing.T, upstream string) *dbProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{ln: ln, upstream: upstream}
	t.Cleanup(func() { _ = ln.Close(); p.set(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			up, derr := net.Dial("tcp", p.upstream)
			if p.down || derr != nil {
				p.mu.Unlock()
				_ = c.Close()
				if up != nil {
					_ = up.Close()
				}
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

// set takes the database away (down) or brings it back.
func (p *dbProxy) set(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

// TestSmallSpoolDisk runs the built gateway with its spool on a filesystem of 4 MiB of its own (a tmpfs mounted in
// a mount namespace of the process's, which goes with it: no root and no clean-up needed), bounded at 2 MiB, on
// PostgreSQL behind a proxy. Under 16 streamed chat calls at a time, with the database there, many times the disk
// passes through the spool and no call is refused (with 16 MiB segments the disk filled with records already
// written, and every call was a 503 spool_unavailable). With the database gone, the spool fills to its bound and
// calls are refused (503 spool_full) — /readyz says so within a second of the first refusal — and once the
// database is back, every call answered 200 has its record: nothing is lost.
func TestSmallSpoolDisk(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed to give the gateway a 4 MiB filesystem of its own")
	}
	dbURL := testdb.PostgresURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newDBProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	spool := t.TempDir()
	up := fakes.NewOpenAI(t, "sk-up-0123456789")
	up.Unrecorded = true
	p := startGateway(t, buildGateway(t), fmt.Sprintf(`log: {level: info, format: json}
providers:
  - {slug: openai, kind: openai, base_url: %s, api_key: sk-up-0123456789, timeout: 30s, idle_timeout: 30s}
models:
  - {id: chat, modality: chat, endpoints: [{provider: openai, upstream_model: gpt, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 1}}]}
generations: {spool_max_bytes: 2097152}
`, up.BaseURL()), []string{"DATABASE_URL=" + u.String(), "SWITCHBOARD_GENERATIONS_SPOOL_DIR=" + spool},
		"unshare", "--user", "--map-root-user", "--mount", "sh", "-c", `mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"`, spool)
	key, _ := p.key(t)
	// A 2 KiB prompt: each call's record is some 3 KiB in the spool.
	body := map[string]any{"model": "chat", "stream": true, "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("word ", 400)}}}
	type outcome struct {
		id     string
		status int
	}
	burst := func(n int, stop func(refused int) bool) (answered []string, refused int, firstRefusal time.Time) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range 16 {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					resp := p.call(t, context.Background(), "POST", "/chat/completions", key, body)
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					switch resp.StatusCode {
					case http.StatusOK:
						answered = append(answered, resp.Header.Get("X-Generation-Id"))
					case http.StatusServiceUnavailable:
						if refused++; refused == 1 {
							firstRefusal = time.Now()
						}
					default:
						t.Errorf("a call answered %d", resp.StatusCode)
					}
					done := stop != nil && stop(refused)
					mu.Unlock()
					if done {
						return
					}
				}
			})
		}
		wg.Wait()
		return answered, refused, firstRefusal
	}

	answered, refused, _ := burst(2500, nil)
	t.Logf("MEASURED a 4 MiB spool disk, c=16 streamed, the database there: %d calls answered, %d refused", len(answered), refused)
	if refused > 0 || len(answered) != 2500 {
		t.Fatalf("%d of 2500 calls answered, %d refused, with the database there", len(answered), refused)
	}

	proxy.set(true) // the database goes
	var readyAt atomic.Int64
	watching := make(chan struct{})
	go func() { // /readyz, asked as a load balancer would
		defer close(watching)
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			resp, err := p.client.Get(p.url + "/readyz")
			if err != nil {
				continue
			}
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				readyAt.Store(time.Now().UnixNano())
				return
			}
		}
	}()
	during, refused, first := burst(1_000_000, func(refused int) bool { return refused >= 50 })
	<-watching
	if refused == 0 || readyAt.Load() == 0 {
		t.Fatalf("with the database gone: %d calls refused, /readyz 503: %v", refused, readyAt.Load() != 0)
	}
	lag := time.Unix(0, readyAt.Load()).Sub(first)
	t.Logf("MEASURED the database gone: %d calls answered, then refused; /readyz said 503 %v after the first refusal", len(during), lag)
	if lag > time.Second {
		t.Errorf("/readyz said 503 %v after calls were refused, want within a second", lag)
	}

	proxy.set(false)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := p.client.Get(p.url + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready again within 60 s of the database's return")
		}
	}
	db, err := gorm.Open(postgres.Open(dbURL), &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	all := append(answered, during...)
	var stored int64
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		db.Raw("SELECT COUNT(*) FROM generations WHERE id IN ?", all).Scan(&stored)
		if int(stored) == len(all) || time.Now().After(deadline) {
			break
		}
	}
	if int(stored) != len(all) {
		t.Fatalf("%d of the %d calls answered 200 have their record", stored, len(all))
	}
}
