package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"net/textproto"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// textprotoHead reads a head as the transport read it before parseHead, and as net/http's client reads one: the
// status line with textproto.Reader.ReadLine, the fields with ReadMIMEHeader. It is parseHead's reference.
func textprotoHead(br *bufio.Reader) (*http.Response, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return nil, err
	}
	resp := &http.Response{}
	if err := statusLine(line, resp); err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	resp.Header = http.Header(h)
	return resp, nil
}

// trickle reads step bytes at a time (all at once when step is 0): a head that comes in pieces, as a slow or
// fragmented upstream sends it, which readHead gathers instead of parsing it in the buffer.
type trickle struct {
	r    io.Reader
	step int
}

func (t trickle) Read(p []byte) (int, error) {
	if t.step > 0 && len(p) > t.step {
		p = p[:t.step]
	}
	return t.r.Read(p)
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

// cut says whether a head's read failed for want of bytes rather than for a malformed line.
func cut(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// sameHead holds readHead to textprotoHead on raw (sent step bytes at a time, then the end of the connection): the
// same response (status, protocol and Header) and the same bytes left for the body, or both failing, and for the
// same cause (the head cut, or malformed) but past a read buffer's worth, where textproto drops a cut line longer
// than its buffer and so reports the cut where parseHead finds the line malformed. And where net/http's
// ReadResponse reads the head too, and the transport takes its status line, the same Header, but for the framing
// fields ReadResponse reads and removes (and the Cache-Control it adds for a Pragma).
func sameHead(t *testing.T, raw string, step int) {
	t.Helper()
	ref := bufio.NewReaderSize(trickle{strings.NewReader(raw), step}, readBufferSize)
	want, werr := textprotoHead(ref)
	c := &conn{rw: struct {
		io.Reader
		io.Writer
	}{trickle{strings.NewReader(raw), step}, io.Discard}, limit: math.MaxInt64}
	c.br = bufio.NewReaderSize(c, readBufferSize)
	got := &http.Response{}
	err := c.readHead(got)
	switch {
	case (werr == nil) != (err == nil):
		t.Fatalf("%q (step %d): readHead %v, err %v; textproto %v, err %v", raw, step, got, err, want, werr)
	case werr != nil:
		if cut(werr) != cut(err) && len(raw) <= readBufferSize {
			t.Fatalf("%q (step %d): readHead err %v; textproto err %v", raw, step, err, werr)
		}
		return
	}
	if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
		got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor || !reflect.DeepEqual(got.Header, want.Header) {
		t.Fatalf("%q (step %d): readHead %+v; textproto %+v", raw, step, got, want)
	}
	if rest, wantRest := readAll(c.br), readAll(ref); rest != wantRest {
		t.Fatalf("%q (step %d): left %q for the body, textproto %q", raw, step, rest, wantRest)
	}
	std, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err != nil {
		return
	}
	for _, h := range []http.Header{std.Header, got.Header} {
		for _, k := range []string{"Transfer-Encoding", "Content-Length", "Trailer", "Cache-Control"} {
			delete(h, k)
		}
	}
	if std.StatusCode != got.StatusCode || !reflect.DeepEqual(std.Header, got.Header) {
		t.Fatalf("%q (step %d): readHead %d %v; net/http %d %v", raw, step, got.StatusCode, got.Header, std.StatusCode, std.Header)
	}
}

// headSeeds are heads as upstreams send them and as they should not: folded fields, names with spaces or bytes
// outside a token, control bytes and obs-text in values, bare LF and stray CR, fields given twice, heads cut short
// anywhere, and heads longer than the read buffer.
var headSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\ncontent-type: a\r\nx-request-id: req_1\r\nX-REQUEST-ID: req_2\r\nopenai-processing-ms: 7\r\n\r\nbody",
	"HTTP/1.1 200 OK\r\nx-1a-b--c: 1\r\n-x: 2\r\nA-b-C: 3\r\n_a_b: 4\r\n!#$%&'*+.^`|~: 5\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length:  5\r\n\r\nhello",
	"HTTP/1.1 200 OK\n\n",
	"HTTP/1.1 200 OK\nA: 1\nB: 2\n\nrest",
	"HTTP/1.1 200 OK\r\nA: 1\n\r\n",
	"HTTP/1.1 204\r\n\r\n",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: one\r\n two\r\n\tthree \t\r\nB: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: one\r\n   \r\n\r\n",
	"HTTP/1.1 200 OK\r\nA:\r\n folded\r\n\r\n",
	"HTTP/1.1 200 OK\r\n folded first\r\nA: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\tA: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA : 1\r\nb c: 2\r\n\r\n",
	"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA\x00: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA(b): 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: a\x00b\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: a\x7fb\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: a\rb\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: a\x01\r\n  \r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: caf\xc3\xa9 \x80\xff\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: \t a \t\r\nB:c:d\r\n\r\n",
	"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\r\n\r\n",
	"HTTP/1.1 200 OK\r\nA: 1\r\r\n\r\n",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nTrailer: X\r\n\r\n",
	"HTTP/1.1 200 OK\r\nCaf\xc3\xa9: 1\r\n\r\n",
	"HTTP/1.1 200 O\rK\r\n\r\n",
	"HTTP/1.1  200  spaced\r\n\r\n",
	"HTTP/1.1 20 OK\r\n\r\n",
	"HTTP/2.0 200 OK\r\nA: 1\r\n\r\n",
	"\r\nHTTP/1.1 200 OK\r\n\r\n",
	"SSH-2.0-OpenSSH_9.6\r\n\r\n",
	"",
	"HTTP/1.1 200 OK",
	"HTTP/1.1 200 OK\r\n",
	"HTTP/1.1 200 OK\r\nContent-Le",
	"HTTP/1.1 200 OK\r\nA: 1\r\n",
	"HTTP/1.1 200 OK\r\nA: 1\r\n  more",
	"HTTP/1.1 200 OK\r\nA: 1\r\n  ",
	"HTTP/1.1 200 OK\r\nA: 1\r",
	"HTTP/1.1 200 OK\r\nA: 1\r\n\r",
	"HTTP/1.1 200 OK\r\n  " + strings.Repeat("s", 100),
	"HTTP/1.1 200 OK\r\nA: \x01",
	"HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("f", 90)+"\r\n", 300) + "\r\nrest",
	"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("l", readBufferSize+64) + "\r\n folded\r\n\r\n",
	"HTTP/1.1 200 OK\r\n" + strings.Repeat("A: 1\r\n", readBufferSize/6-3) + "\r\nrest",
}

// FuzzH1Head: readHead reads every head as net/textproto does (sameHead), given at once or a few bytes at a time.
// Its seeds run in every go test.
func FuzzH1Head(f *testing.F) {
	for _, s := range headSeeds {
		for _, step := range []uint8{0, 1, 7} {
			f.Add(s, step)
		}
	}
	f.Fuzz(func(t *testing.T, raw string, step uint8) {
		sameHead(t, raw, int(step))
	})
}

// TestHeadAllocations: a head in the read buffer is one string for its status, names and values, one map and one
// array of values.
func TestHeadAllocations(t *testing.T) {
	raw := []byte("HTTP/1.1 200 OK\r\nDate: Tue, 01 Apr 2025 10:00:00 GMT\r\ncontent-type: text/event-stream\r\n" +
		"x-request-id: req_1\r\nopenai-processing-ms: 180\r\nServer: cloudflare\r\n\r\n")
	if n := testing.AllocsPerRun(100, func() {
		if err := parseHead(raw, &http.Response{}); err != nil {
			t.Fatal(err)
		}
	}); n > 4 {
		t.Fatalf("%v allocations, want at most 4", n)
	}
}

// TestHeadFoldedAtLength: a field folded over as many lines as the head's bound allows is read in time linear in
// its length (joining each line to a string of the lines before it took its square: minutes).
func TestHeadFoldedAtLength(t *testing.T) {
	t.Parallel()
	raw := "HTTP/1.1 200 OK\r\nA: a\r\n" + strings.Repeat(" b\r\n", maxHeaderBytes/4-16) + "\r\n"
	resp, _, err := scripted(t, raw, http.MethodGet, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := resp.Header.Get("A"); len(v) != 1+2*(maxHeaderBytes/4-16) {
		t.Fatalf("value of %d bytes", len(v))
	}
}

// openAIHead is a head as OpenAI's API sends one over HTTP/1.1: the standard fields capitalised, its own in lower
// case.
const openAIHead = "HTTP/1.1 200 OK\r\nDate: Tue, 01 Apr 2025 10:00:00 GMT\r\nContent-Type: text/event-stream; charset=utf-8\r\n" +
	"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\naccess-control-expose-headers: X-Request-ID\r\n" +
	"openai-organization: org-bench\r\nopenai-processing-ms: 180\r\nopenai-version: 2020-10-01\r\n" +
	"x-ratelimit-limit-requests: 10000\r\nx-ratelimit-remaining-requests: 9999\r\nx-request-id: req_1\r\n" +
	"strict-transport-security: max-age=31536000; includeSubDomains; preload\r\ncf-cache-status: DYNAMIC\r\n" +
	"X-Content-Type-Options: nosniff\r\nServer: cloudflare\r\ncf-ray: 8a1b2c3d4e5f6789-AMS\r\n\r\n"

// BenchmarkHead reads OpenAI's head with parseHead, and with net/textproto as the transport did before it.
func BenchmarkHead(b *testing.B) {
	raw := []byte(openAIHead)
	b.Run("parseHead", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := parseHead(raw, &http.Response{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("textproto", func(b *testing.B) {
		b.ReportAllocs()
		r := bytes.NewReader(raw)
		br := bufio.NewReaderSize(r, readBufferSize)
		for b.Loop() {
			r.Reset(raw)
			br.Reset(r)
			if _, err := textprotoHead(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestKeptIDKeepsNoHead: an upstream's request id kept past its answer (in a generation record waiting in the
// spool) keeps only itself, not the large head it came in (h1.Shared).
func TestKeptIDKeepsNoHead(t *testing.T) {
	raw := []byte("HTTP/1.1 200 OK\r\nX-Request-Id: req_1\r\nX: " + strings.Repeat("v", 200<<10) + "\r\n\r\n")
	const answers = 50
	kept := make([]string, 0, answers)
	before := heapInUse()
	for range answers {
		var resp http.Response
		if err := parseHead(raw, &resp); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, resp.Header.Get("X-Request-Id"))
	}
	if perAnswer := (int64(heapInUse()) - int64(before)) / answers; perAnswer > 4<<10 {
		t.Errorf("a kept request id keeps %d bytes of a head of %d", perAnswer, len(raw))
	}
	runtime.KeepAlive(kept)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
