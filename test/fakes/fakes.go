// Package fakes are httptest servers that speak upstream providers' real wire protocols — auth headers, error
// bodies, streaming — for the adapters' tests and the end-to-end tests. Each takes a script keyed by call number
// and records every request.
package fakes

import (
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Step scripts one call. The zero Step is a normal success.
type Step struct {
	// Status and Body, when Status is set, answer with an error: Body is the provider's error JSON (each fake
	// has ready-made ones).
	Status int
	Body   string
	Header map[string]string
	// Hold, when set, keeps the response back until it is closed or the caller goes away: a provider that has
	// not answered yet. HoldAfter does the same after HoldAfter bytes of the body (a stall mid-stream; Gemini's
	// speech counts its audio's bytes, as Abort does).
	Hold      chan struct{}
	HoldAfter int
	// Abort cuts the connection after this many body bytes (the client sees an unexpected EOF).
	Abort int
	// Size overrides the length of the audio or video body, in bytes.
	Size int64
	// Chunk overrides the size of the flushed chunks (ChunkSize when zero).
	Chunk int
	// Gap paces a stream of events: the pause after each, as a model takes between tokens.
	Gap time.Duration
	// Delay is how long the provider takes before it answers at all (a slow first byte).
	Delay time.Duration
	// Ramble, for the OpenAI chat fake, is a model that would write on for this many tokens: its usage counts
	// them, or the completion limit the request sent when that is fewer (finish "length").
	Ramble int
	// Events, for the chat fakes, are the stream a fake answers a request it accepts with, instead of its own:
	// each a whole server-sent event (a broken or hostile upstream's).
	Events []string
}

// The waits (for the first byte, and between chunks) of the clients that the shared contracts call. A call to a
// fake that answers must never time out, however loaded the machine: it waits Patient, so that a spurious timeout
// would take a minute's stall. A call to a fake that holds its answer back for ever (Hold, HoldAfter) can only
// time out, and waits Impatient, so that the test is quick. No timing decides an outcome.
const (
	Patient   = time.Minute
	Impatient = 100 * time.Millisecond
)

// Wait is how long a client may wait on a call the fake answers with s.
func (s Step) Wait() time.Duration {
	if s.stalls() {
		return Impatient
	}
	return Patient
}

// stalls reports a step that holds its answer back for ever.
func (s Step) stalls() bool { return s.Hold != nil || s.HoldAfter > 0 }

// settle follows a call that timed out on a stalled step: it waits until the fake has counted that call, which
// may arrive after the client gave up, so that it cannot take the step scripted for the next case. A call the
// client gave up on before sending it never arrives: after a few seconds (and only then) it is given up too.
func (f *Fake) settle(s Step) {
	if !s.stalls() {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); f.Calls() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// Request is one recorded request.
type Request struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         []byte
}

// Fake is the common part of every provider fake.
type Fake struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Step
	calls    int
	requests []Request
	// Gone receives once for each request the client gave up on before the fake had answered it whole.
	Gone chan struct{}
	// Default answers the calls past the script.
	Default Step
	// Unrecorded, when set, keeps no request log (for benchmarks, where it would be most of the heap).
	Unrecorded bool
}

func newFake(t testing.TB, h func(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step)) *Fake {
	f := &Fake{Gone: make(chan struct{}, 64)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if r.Context().Err() != nil {
				select {
				case f.Gone <- struct{}{}:
				default:
				}
			}
		}()
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		step := f.Default
		if f.calls < len(f.script) {
			step = f.script[f.calls]
		}
		f.calls++
		if !f.Unrecorded {
			f.requests = append(f.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
		}
		f.mu.Unlock()
		if step.Hold != nil {
			select {
			case <-step.Hold:
			case <-r.Context().Done():
				return
			}
		}
		if step.Delay > 0 {
			select {
			case <-time.After(step.Delay):
			case <-r.Context().Done():
				return
			}
		}
		h(f, w, r, body, step)
	}))
	t.Cleanup(f.Close)
	return f
}

// Script sets what the next calls answer, in order; calls past the script succeed.
func (f *Fake) Script(steps ...Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.calls, f.requests = steps, 0, nil
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Calls is how many requests arrived.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fail answers a scripted error.
func fail(w http.ResponseWriter, step Step) {
	for k, v := range step.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(step.Status)
	io.WriteString(w, step.Body)
}

// ChunkSize is odd on purpose: 16-bit samples split across chunks.
const ChunkSize = 4093

// stream writes body to w in flushed chunks, honouring the step's stall and abort points.
func stream(w http.ResponseWriter, r *http.Request, body io.Reader, step Step) {
	fl := w.(http.Flusher)
	size := step.Chunk
	if size == 0 {
		size = ChunkSize
	}
	buf := make([]byte, size)
	sent := 0
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			chunk := buf[:n]
			if step.Abort > 0 && sent+n >= step.Abort {
				w.Write(chunk[:step.Abort-sent])
				fl.Flush()
				panic(http.ErrAbortHandler)
			}
			if step.HoldAfter > 0 && sent < step.HoldAfter && sent+n >= step.HoldAfter {
				w.Write(chunk[:step.HoldAfter-sent])
				fl.Flush()
				<-r.Context().Done() // stalled until the caller gives up
				return
			}
			if _, werr := w.Write(chunk); werr != nil {
				return
			}
			fl.Flush()
			sent += n
		}
		if err != nil {
			return
		}
	}
}

// PCMBytesFor is how much audio a fake makes for text: 0.1 s per character at 24 kHz, s16 mono.
func PCMBytesFor(text string) int64 { return int64(len([]rune(text))) * 4800 }

// Sine is a 440 Hz tone, s16le mono 24 kHz, n bytes long, made as it is read (memory stays flat).
func Sine(n int64) io.Reader { return io.LimitReader(&repeat{b: oneSecond}, n) }

// oneSecond of the tone holds exactly 440 cycles, so it repeats seamlessly.
var oneSecond = func() []byte {
	b := make([]byte, 0, 48000)
	for i := range 24000 {
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(8000*math.Sin(2*math.Pi*440*float64(i)/24000))))
	}
	return b
}()

// MP3 is n bytes of repeated MPEG-1 Layer III frame headers (FF FB 90 00), 417 bytes a frame.
func MP3(n int64) io.Reader {
	frame := make([]byte, 417)
	copy(frame, []byte{0xFF, 0xFB, 0x90, 0x00})
	return io.LimitReader(&repeat{b: frame}, n)
}

type repeat struct {
	b []byte
	i int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.i:])
		n += c
		r.i = (r.i + c) % len(r.b)
	}
	return n, nil
}

func bearer(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}
