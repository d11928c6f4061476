package upstream_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// chunks is a chat stream of given chunks, ending with end.
type chunks struct {
	c   []chat.Chunk
	end error
}

func (s *chunks) Next() (chat.Chunk, error) {
	if len(s.c) == 0 {
		return chat.Chunk{}, s.end
	}
	c := s.c[0]
	s.c = s.c[1:]
	return c, nil
}

// keyedRequest is a request that carries the gateway's key as OpenAI's does, and a query key as Gemini's may.
func keyedRequest(t testing.TB) *http.Request {
	req, err := http.NewRequest("POST", "https://up.example/v1/chat?key=AIzaGatewayQueryKey0123", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+gatewayKey)
	req.Header.Set("Content-Type", "application/json")
	return req
}

const gatewayKey = "sk-gateway-0123456789abcdefghij"

// drain reads a stream to its end: the text of each kind it delivered, and its end.
func drain(s ports.ChatStream) (content, reasoning, args string, n int, end error) {
	for {
		c, err := s.Next()
		if err != nil {
			return content, reasoning, args, n, err
		}
		n++
		content += c.Content
		reasoning += c.Reasoning
		for _, d := range c.ToolCalls {
			args += d.Arguments
		}
	}
}

// TestScrubChatAcrossChunks: the gateway's credentials never come out of an answer, however an upstream cuts
// them across chunks — every cut of a text that holds the key and the query key, in content, reasoning and tool
// calls, chunk by chunk and a byte at a time — and the rest of the text comes out as it went in.
func TestScrubChatAcrossChunks(t *testing.T) {
	t.Parallel()
	text := "your key is " + gatewayKey + ", and the other AIzaGatewayQueryKey0123; sk-gatewaz is not it."
	want := "your key is [REDACTED], and the other [REDACTED]; sk-gatewaz is not it."
	cuts := func(n int) [][]string {
		var out [][]string
		for i := 1; i < len(text); i++ {
			out = append(out, []string{text[:i], text[i:]})
		}
		var bytes []string
		for i := range len(text) {
			bytes = append(bytes, text[i:i+1])
		}
		return append(out[:n:n], bytes)
	}
	for _, parts := range cuts(len(text) - 1) {
		for _, kind := range []string{"content", "reasoning", "tool"} {
			var in []chat.Chunk
			for _, p := range parts {
				switch kind {
				case "content":
					in = append(in, chat.Chunk{Content: p})
				case "reasoning":
					in = append(in, chat.Chunk{Reasoning: p})
				default:
					in = append(in, chat.Chunk{ToolCalls: []chat.ToolCallDelta{{Index: 0, Arguments: p}}})
				}
			}
			content, reasoning, args, _, end := drain(upstream.ScrubChat(&chunks{c: in, end: io.EOF}, keyedRequest(t)))
			if got := content + reasoning + args; got != want || end != io.EOF {
				t.Fatalf("%s cut as %q: %q, %v; want %q", kind, parts, got, end, want)
			}
		}
	}
}

// TestScrubChatHoldsBackOnlyWhatMayBeginAKey: a chunk passes as it came unless its text ends with what may begin
// a credential; that end goes out with the next chunk, or with the answer's finish reason, or before the stream's
// end or break, and a failure's reason and body are scrubbed too.
func TestScrubChatHoldsBackOnlyWhatMayBeginAKey(t *testing.T) {
	t.Parallel()
	s := upstream.ScrubChat(&chunks{c: []chat.Chunk{{Content: "Hello"}, {Content: " it is"}, {Content: "k-gate"},
		{Content: "way", FinishReason: "stop"}}, end: io.EOF}, keyedRequest(t))
	var got []string
	for {
		c, err := s.Next()
		if err != nil {
			break
		}
		got = append(got, c.Content)
	}
	// "Hello" ends with no start of a key; " it is" ends with "s", which may ("sk-"): it waits for the next chunk,
	// and with it "sk-gate" may still, up to the finish reason, where it was no key.
	if strings.Join(got, "|") != "Hello| it i||sk-gateway" {
		t.Fatalf("chunks %q", got)
	}

	broken := &ports.UpstreamError{Kind: domain.KindUpstream, Reason: "said " + gatewayKey, Raw: `{"k":"` + gatewayKey + `"}`}
	s = upstream.ScrubChat(&chunks{c: []chat.Chunk{{Content: "ends with s"}}, end: broken}, keyedRequest(t))
	content, _, _, n, end := drain(s)
	var ue *ports.UpstreamError
	if content != "ends with s" || n != 2 || !errors.As(end, &ue) || strings.Contains(ue.Reason+ue.Raw, gatewayKey) {
		t.Fatalf("%q in %d chunks, then %v", content, n, end)
	}

	// An upstream's own events, passed on as they came to a caller of its format, lose the key too.
	s = upstream.ScrubChat(&chunks{c: []chat.Chunk{{Native: domain.Opaque(`data: {"text":"` + gatewayKey + `"}` + "\n\n")}}, end: io.EOF},
		keyedRequest(t))
	if c, err := s.Next(); err != nil || string(c.Native) != `data: {"text":"[REDACTED]"}`+"\n\n" {
		t.Fatalf("native events %q, %v", c.Native, err)
	}

	plain := &chunks{end: io.EOF}
	if got := upstream.ScrubChat(plain, &http.Request{Header: http.Header{"Accept": {"text/event-stream"}}}); got != plain {
		t.Fatal("a request without credentials had its stream wrapped")
	}
}

// BenchmarkScrubChat is a 200-token answer through the scrubber, against the same stream bare: the cost on the
// per-token path of a chat call.
func BenchmarkScrubChat(b *testing.B) {
	tokens := make([]chat.Chunk, 200)
	words := strings.Fields("the quick brown fox jumps over the lazy dog, and keys such as sk- are scrubbed")
	for i := range tokens {
		tokens[i] = chat.Chunk{Content: " " + words[i%len(words)]}
	}
	req := keyedRequest(b)
	for _, scrub := range []bool{false, true} {
		name := "bare"
		if scrub {
			name = "scrubbed"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var s ports.ChatStream = &chunks{c: tokens, end: io.EOF}
				if scrub {
					s = upstream.ScrubChat(s, req)
				}
				for {
					if _, err := s.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}
