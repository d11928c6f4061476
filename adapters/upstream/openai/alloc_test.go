package openai_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// cannedUpstream answers every request on a keep-alive connection with the same answer, reading each request
// whole first, and allocates nothing per exchange: what a test counts of allocations is the client's.
func cannedUpstream(t testing.TB, answer []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					n := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) > 16 && (line[0] == 'C' || line[0] == 'c') && string(line[1:16]) == "ontent-Length: " {
							n, _ = strconv.Atoi(string(line[16 : len(line)-2]))
						}
						if len(line) == 2 {
							break
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1"
}

// maxSpeechAllocs is what a call takes: the body on an endpoint parsed once with the Authorization header made
// once, Do's context and watchdog (9), and net/http's transport (the exchange, the response's head read by
// net/textproto): 67 in all, 75 under the race detector (make test), where sync.Pool drops some of what is put back
// (encoding/json's encoder states among them). The hand-written HTTP/1.1 transport this replaced took 23; the body
// appended by hand instead of by encoding/json (a struct of the gateway's fields, a map of the options) took 3 less.
const maxSpeechAllocs = 75

// TestSpeechAllocations bounds what a speech call costs the client in allocations, from the request to the
// clip's end: a regression guard for the outgoing path (building the body and the request, the watchdog, the
// exchange).
func TestSpeechAllocations(t *testing.T) {
	clip := make([]byte, 16<<10)
	answer := append([]byte("HTTP/1.1 200 OK\r\nContent-Type: audio/pcm\r\nX-Request-Id: req_1\r\nContent-Length: "+
		strconv.Itoa(len(clip))+"\r\n\r\n"), clip...)
	c := openai.New(upstream.Config{BaseURL: cannedUpstream(t, answer), APIKey: "sk-test", Timeout: fakes.Patient, IdleTimeout: fakes.Patient},
		upstream.NewHTTPClient())
	speed := 1.25
	req := fakes.SpeechRequest("tts-1", "alloy", "Hello there, how are you today?", speech.PCM, nil)
	req.Speed = &speed
	buf := make([]byte, 16<<10)
	call := func() {
		a, err := c.Synthesize(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{a.Body}, buf); err != nil {
			t.Fatal(err)
		}
		a.Body.Close()
		if a.Status != http.StatusOK || a.UpstreamID != "req_1" {
			t.Fatalf("status %d, upstream id %q", a.Status, a.UpstreamID)
		}
	}
	call() // dials
	if n := leastAllocs(call); n > maxSpeechAllocs {
		t.Fatalf("%v allocations per call, want at most %d", n, maxSpeechAllocs)
	}
}

// chatAnswer is a streamed chat answer of one token as OpenAI's API sends it over HTTP/1.1 (its head's fields, in
// its spelling: the standard ones capitalised, its own lower case), each event a chunk of its own.
func chatAnswer() []byte {
	b := []byte("HTTP/1.1 200 OK\r\nDate: Tue, 01 Apr 2025 10:00:00 GMT\r\nContent-Type: text/event-stream; charset=utf-8\r\n" +
		"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\naccess-control-expose-headers: X-Request-ID\r\n" +
		"openai-organization: org-bench\r\nopenai-processing-ms: 180\r\nopenai-version: 2020-10-01\r\n" +
		"x-ratelimit-limit-requests: 10000\r\nx-ratelimit-remaining-requests: 9999\r\nx-request-id: req_1\r\n" +
		"strict-transport-security: max-age=31536000; includeSubDomains; preload\r\ncf-cache-status: DYNAMIC\r\n" +
		"X-Content-Type-Options: nosniff\r\nServer: cloudflare\r\ncf-ray: 8a1b2c3d4e5f6789-AMS\r\n\r\n")
	head := `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"chat-1","choices":[`
	for _, ev := range []string{
		head + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		head + `{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`,
		head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
		head + `],"usage":{"prompt_tokens":6,"completion_tokens":1,"total_tokens":7}}`,
		`data: [DONE]`,
	} {
		ev += "\n\n"
		b = append(strconv.AppendInt(b, int64(len(ev)), 16), "\r\n"+ev+"\r\n"...)
	}
	return append(b, "0\r\n\r\n"...)
}

// chatCall is a chat call as the gateway makes one: the request, the first token, then the rest of the answer.
func chatCall(tb testing.TB, c *openai.Client, req ports.ChatRequest) {
	reply, err := c.Chat(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	stream := reply.Decode(reply.Body)
	first, err := stream.Next()
	if err != nil || first.Content != "Hello" || reply.UpstreamID != "req_1" {
		tb.Fatalf("first chunk %+v, %v, upstream id %q", first, err, reply.UpstreamID)
	}
	for err == nil {
		_, err = stream.Next()
	}
	if err != io.EOF {
		tb.Fatal(err)
	}
	reply.Body.Close()
}

// leastAllocs is the least of three rounds of testing.AllocsPerRun(200, call): under the race detector sync.Pool
// drops some of what is put back at random (net/http's and encoding/json's pooled buffers and states), so a round
// may count a few allocations a pool would have saved, and one round's figure is not the call's; the least of three
// is, run after run.
func leastAllocs(call func()) float64 {
	least := testing.AllocsPerRun(200, call)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, call))
	}
	return least
}

// chatClient is a client of the canned chat upstream, and the request chatCall sends it.
func chatClient(tb testing.TB) (*openai.Client, ports.ChatRequest) {
	c := openai.New(upstream.Config{BaseURL: cannedUpstream(tb, chatAnswer()), APIKey: "sk-test", Timeout: fakes.Patient,
		IdleTimeout: fakes.Patient}, upstream.NewHTTPClient())
	body, err := chatcompletions.Decode([]byte(`{"model":"gateway-model",` +
		`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello."}]}`))
	if err != nil {
		tb.Fatal(err)
	}
	r, err := body.Request()
	if err != nil {
		tb.Fatal(err)
	}
	return c, ports.ChatRequest{UpstreamModel: "chat-1", Request: r}
}

// maxChatAllocs is what a chat call of one token takes of the client, from the request to the answer's end: 104,
// of which net/http's transport takes about 70 (net/textproto reads the 17 fields of OpenAI's head a string and a
// slice each) and the body, built by encoding/json, 14 (7 more than when it was appended by hand); 115 under the race
// detector (make test), where sync.Pool drops some of what is put back (encoding/json's encoder states, the stream's
// read buffer, which is then made anew). The hand-written HTTP/1.1 transport this replaced took 32.
const maxChatAllocs = 115

// TestChatAllocations bounds what a chat call costs the client in allocations: a regression guard for the way to
// the first token (the body, the request, the exchange, the head, the stream's setup) and a short answer's rest.
func TestChatAllocations(t *testing.T) {
	c, req := chatClient(t)
	call := func() { chatCall(t, c, req) }
	call() // dials
	if n := leastAllocs(call); n > maxChatAllocs {
		t.Fatalf("%v allocations per call, want at most %d", n, maxChatAllocs)
	}
}

// BenchmarkChat is TestChatAllocations's call, timed.
func BenchmarkChat(b *testing.B) {
	c, req := chatClient(b)
	chatCall(b, c, req) // dials
	b.ReportAllocs()
	for b.Loop() {
		chatCall(b, c, req)
	}
}
