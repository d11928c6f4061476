//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// loadArgs tells a load process what to do; it is passed as one JSON argument.
type loadArgs struct {
	// Mode is pairs (direct and gateway calls alternated, latency quantiles), blocks (alternating blocks of
	// direct and gateway calls, throughput), flat (gateway calls only, first and last window's throughput),
	// direct (direct calls only, their throughput), get (GET /generation of seeded records), hold (open
	// streams and keep them until stdin closes) or h2c (N gateway calls at once over one unencrypted HTTP/2
	// connection).
	Mode                         string
	Gateway, Direct              string
	Key, UpstreamKey             string
	DirectBody, GatewayBody      string
	Clip, Conc, N, Block, Window int
	Rows                         int
	// Pause comes before each pair (pairs mode), as between a sparse caller's calls.
	Pause time.Duration
	// First, when set, marks the first token: a call's latency is to the first line holding it.
	First string
}

// loadOut is what a load process reports, as one JSON line.
type loadOut struct {
	DirectP50, DirectP99, GatewayP50, GatewayP99 time.Duration
	DirectRate, GatewayRate                      float64
	FirstRate, LastRate                          float64
	// Failed and Conns are h2c's: the calls that failed, and the connections the calls went over.
	Failed, Conns int
}

// runLoadProc runs a load process and returns its report; cpu, when set, receives the CPU time it used.
func runLoadProc(a loadArgs, cpu *time.Duration) (loadOut, error) {
	arg, _ := json.Marshal(a)
	cmd := self("load", string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return loadOut{}, fmt.Errorf("load %s: %w", a.Mode, err)
	}
	if cpu != nil {
		*cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var o loadOut
	if err := json.Unmarshal(out, &o); err != nil {
		return loadOut{}, fmt.Errorf("load %s: %w: %s", a.Mode, err, out)
	}
	return o, nil
}

// holder is a load process holding streams in flight.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startHolder(a loadArgs) (*holder, error) {
	arg, _ := json.Marshal(a)
	h := &holder{cmd: self("load", string(arg))}
	h.cmd.Stderr = os.Stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "held" {
		h.release()
		return nil, fmt.Errorf("hold: %q %v", line, err)
	}
	return h, nil
}

func (h *holder) release() {
	_ = h.stdin.Close()
	_ = h.cmd.Wait()
}

type loader struct {
	loadArgs
	client *http.Client
}

func runLoad(args []string) {
	var l loader
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &l.loadArgs) != nil {
		log.Fatal("load takes one JSON argument")
	}
	l.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
	var out loadOut
	switch l.Mode {
	case "pairs":
		direct, gateway := make([]time.Duration, l.N), make([]time.Duration, l.N)
		l.each(l.N, func(i int) {
			time.Sleep(l.Pause)
			if i%2 == 0 {
				direct[i], gateway[i] = l.call(false), l.call(true)
			} else {
				gateway[i], direct[i] = l.call(true), l.call(false)
			}
		})
		out.DirectP50, out.DirectP99 = quantile(direct, 0.5), quantile(direct, 0.99)
		out.GatewayP50, out.GatewayP99 = quantile(gateway, 0.5), quantile(gateway, 0.99)
	case "blocks":
		var dt, gt time.Duration
		var dn, gn int
		for round := 0; dn < l.N; round++ {
			n := min(l.Block, l.N-dn)
			timed := func(via bool) time.Duration {
				start := time.Now()
				l.each(n, func(int) { l.call(via) })
				return time.Since(start)
			}
			if round%2 == 0 {
				dt += timed(false)
				gt += timed(true)
			} else {
				gt += timed(true)
				dt += timed(false)
			}
			dn, gn = dn+n, gn+n
		}
		out.DirectRate, out.GatewayRate = float64(dn)/dt.Seconds(), float64(gn)/gt.Seconds()
	case "flat":
		done := make([]time.Duration, l.N)
		var k atomic.Int64
		start := time.Now()
		l.each(l.N, func(int) {
			l.call(true)
			done[k.Add(1)-1] = time.Since(start)
		})
		if w := l.Window; w > 0 && w < l.N {
			out.FirstRate = float64(w) / done[w-1].Seconds()
			out.LastRate = float64(w) / (done[l.N-1] - done[l.N-w-1]).Seconds()
		}
	case "direct":
		start := time.Now()
		l.each(l.N, func(int) { l.call(false) })
		out.DirectRate = float64(l.N) / time.Since(start).Seconds()
	case "get":
		lat := make([]time.Duration, l.N)
		for i := range lat {
			req, _ := http.NewRequest("GET", l.Gateway+"?id="+seedID(rand.IntN(l.Rows)), nil)
			req.Header.Set("Authorization", "Bearer "+l.Key)
			start := time.Now()
			l.do(req, -1, "")
			lat[i] = time.Since(start)
		}
		out.GatewayP50, out.GatewayP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	case "h2c":
		out = l.h2c()
	case "hold":
		l.hold()
		return
	default:
		log.Fatalf("unknown load mode %q", l.Mode)
	}
	writeJSON(os.Stdout, out)
}

// each runs f for 0..n-1 from Conc goroutines.
func (l *loader) each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(l.Conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				f(int(i))
			}
		}()
	}
	wg.Wait()
}

// call makes one call, directly or through the gateway, reads the whole answer, and returns how long it took.
func (l *loader) call(viaGateway bool) time.Duration {
	url, body, key := l.Direct, l.DirectBody, l.UpstreamKey
	if viaGateway {
		url, body, key = l.Gateway, l.GatewayBody, l.Key
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	first := l.do(req, l.Clip, l.First)
	if l.First != "" {
		return first.Sub(start)
	}
	return time.Since(start)
}

// do sends req and reads the answer, which must be a 200 of want bytes (any length when want < 0). With a
// marker, it returns when the first line holding it was read.
func (l *loader) do(req *http.Request, want int, marker string) (first time.Time) {
	resp, err := l.client.Do(req)
	if err != nil {
		log.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	var n int64
	if marker == "" {
		n, err = io.Copy(&buf, resp.Body)
	} else {
		sc := bufio.NewScanner(io.TeeReader(resp.Body, &buf))
		for sc.Scan() {
			if first.IsZero() && bytes.Contains(sc.Bytes(), []byte(marker)) {
				first = time.Now()
			}
		}
		n, err = int64(buf.Len()), sc.Err()
		if first.IsZero() && err == nil {
			err = fmt.Errorf("no line holds %s", marker)
		}
	}
	if err != nil || resp.StatusCode != 200 || want >= 0 && n != int64(want) {
		log.Fatalf("%s %s: status %d, %d bytes, %v: %.300s", req.Method, req.URL, resp.StatusCode, n, err, buf.String())
	}
	return first
}

// h2c makes one gateway call to open an HTTP/2 connection with prior knowledge (h2c), then N calls at once over it,
// each read whole and checked as do checks a call (200, the clip's length), a failure counted rather than fatal.
// It reports the failures, the connections the calls went over, and their rate.
func (l *loader) h2c() loadOut {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &p, DisableCompression: true}}
	var mu sync.Mutex
	conns := map[string]bool{}
	one := func() error {
		req, _ := http.NewRequest("POST", l.Gateway, strings.NewReader(l.GatewayBody))
		req.Header.Set("Authorization", "Bearer "+l.Key)
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			conns[i.Conn.LocalAddr().String()] = true
			mu.Unlock()
		}}))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		switch {
		case err != nil:
			return err
		case resp.ProtoMajor != 2 || resp.StatusCode != 200 || l.Clip >= 0 && n != int64(l.Clip):
			return fmt.Errorf("%s %d, %d bytes", resp.Proto, resp.StatusCode, n)
		}
		return nil
	}
	if err := one(); err != nil {
		log.Fatalf("h2c: the first call: %v", err)
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range l.N {
		wg.Go(func() {
			if err := one(); err != nil {
				failed.Add(1)
				log.Printf("h2c: %v", err)
			}
		})
	}
	wg.Wait()
	return loadOut{Failed: int(failed.Load()), Conns: len(conns), GatewayRate: float64(l.N) / time.Since(start).Seconds()}
}

// hold opens N streams through the gateway, reads the first bytes of each, says "held", and keeps them open
// until its stdin closes.
func (l *loader) hold() {
	bodies := make([]io.ReadCloser, l.N)
	l.Conc = 16
	l.each(l.N, func(i int) {
		req, _ := http.NewRequest("POST", l.Gateway, strings.NewReader(l.GatewayBody))
		req.Header.Set("Authorization", "Bearer "+l.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := l.client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			log.Fatalf("hold: %v %v", err, resp)
		}
		if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
			log.Fatalf("hold: %v", err)
		}
		bodies[i] = resp.Body
	})
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, b := range bodies {
		_ = b.Close()
	}
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
