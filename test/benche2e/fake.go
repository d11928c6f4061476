//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// chunk is what the fake writes and flushes at a time: odd on purpose, as a real upstream's chunks are.
const chunk = 4093

// runFake serves OpenAI's speech route: clip bytes of audio in flushed chunks, or, for the model tts-hold, one
// chunk and then nothing until the caller leaves (a stream in flight); and its chat completions route: a stream
// of -tokens tokens, an event each, gap apart, or for chat-hold the first token and then nothing. It prints its
// URL and serves until killed.
func runFake(args []string) {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	clip := fs.Int("clip", 16<<10, "bytes per answer")
	gap := fs.Duration("gap", 0, "pause between a chat answer's events")
	tokens := fs.Int("tokens", 200, "tokens per chat answer")
	_ = fs.Parse(args)
	events := chatEvents(*tokens)
	audio := make([]byte, *clip)
	for i := range audio {
		audio[i] = byte(i * 7)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s\n", l.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/speech", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey {
			http.Error(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 401)
			return
		}
		var req struct{ Model, Input, Voice string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || req.Input == "" || req.Voice == "" {
			http.Error(w, `{"error":{"message":"Missing required parameter.","type":"invalid_request_error","param":null,"code":null}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "audio/pcm")
		fl := w.(http.Flusher)
		if req.Model == "tts-hold" {
			_, _ = w.Write(audio[:min(chunk, len(audio))])
			fl.Flush()
			<-r.Context().Done()
			return
		}
		for rest := audio; len(rest) > 0; {
			n := min(chunk, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			fl.Flush()
			rest = rest[n:]
		}
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"Missing required parameter: 'model'.","type":"invalid_request_error","param":null,"code":null}}`, 400)
			return
		}
		stream(w, r, events, req.Model == "chat-hold", 1, *gap)
	})
	messages := messagesEvents(*tokens)
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		key := r.Header.Get("x-api-key")
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if key != upstreamKey || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"model: Field required"}}`, 400)
			return
		}
		stream(w, r, messages, req.Model == "chat-hold", 2, *gap)
	})
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string   `json:"model"`
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
		}
		if r.Header.Get("Authorization") != "Bearer "+upstreamKey || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" ||
			len(req.Input) == 0 {
			http.Error(w, `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","param":null,"code":null}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(embedAnswer(len(req.Input), req.EncodingFormat == "base64"))
	})
	log.Fatal(http.Serve(l, mux))
}

// stream sends events, each flushed, gap apart; hold stops after the one at first (the first token) until the
// caller leaves.
func stream(w http.ResponseWriter, r *http.Request, events [][]byte, hold bool, first int, gap time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i, ev := range events {
		if _, err := w.Write(ev); err != nil {
			return
		}
		fl.Flush()
		if hold && i == first {
			<-r.Context().Done()
			return
		}
		if gap > 0 && i < len(events)-1 {
			time.Sleep(gap)
		}
	}
}

// messagesEvents is the fake's streamed Messages answer of n tokens, as Anthropic sends it: message_start with
// its block's start, a content_block_delta per token ("w0 ", "w1 "...), the block's stop, message_delta with the
// stop reason and the usage, message_stop.
func messagesEvents(tokens int) [][]byte {
	ev := func(name, data string) []byte { return []byte("event: " + name + "\ndata: " + data + "\n\n") }
	out := [][]byte{ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant",`+
		`"model":"messages-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":6,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)}
	for i := range tokens {
		out = append(out, ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w%d "}}`, i)))
	}
	return append(out, ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, tokens)),
		ev("message_stop", `{"type":"message_stop"}`))
}

// embedDims is the length of the fake's vectors: OpenAI's text-embedding-3-small's.
const embedDims = 1536

// embedAnswer is the fake's embeddings answer to n inputs, as OpenAI writes it: each vector the same, as base64
// of little-endian float32s or as numbers.
func embedAnswer(n int, b64 bool) []byte {
	v := make([]float32, embedDims)
	raw := make([]byte, 0, 4*embedDims)
	for i := range v {
		v[i] = float32(i%200-100) / 1000
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v[i]))
	}
	one, _ := json.Marshal(v)
	if b64 {
		one = []byte(`"` + base64.StdEncoding.EncodeToString(raw) + `"`)
	}
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":%s}`, i, one)
	}
	fmt.Fprintf(&b, `],"model":"embed-1","usage":{"prompt_tokens":%d,"total_tokens":%d}}`, 24*n, 24*n)
	return b.Bytes()
}

// chatEvents is the fake's streamed chat answer of n tokens, as OpenAI sends it: a role chunk, a chunk per token
// ("w0 ", "w1 "...), the finish reason, the usage, [DONE].
func chatEvents(chatTokens int) [][]byte {
	ev := func(delta, finish string) []byte {
		return []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"chat-1",` +
			`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]}` + "\n\n")
	}
	out := [][]byte{ev(`{"role":"assistant","content":""}`, "null")}
	for i := range chatTokens {
		out = append(out, ev(fmt.Sprintf(`{"content":"w%d "}`, i), "null"))
	}
	return append(out, ev(`{}`, `"stop"`),
		[]byte(fmt.Sprintf(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"chat-1",`+
			`"choices":[],"usage":{"prompt_tokens":6,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", chatTokens, chatTokens+6)),
		[]byte("data: [DONE]\n\n"))
}

// fakeProc is the fake, running.
type fakeProc struct {
	cmd *exec.Cmd
	url string
}

func startFake(clip, tokens int, gap time.Duration) *fakeProc {
	cmd := self("fake", "-clip", fmt.Sprint(clip), "-tokens", fmt.Sprint(tokens), "-gap", gap.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		log.Fatalf("fake: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return &fakeProc{cmd: cmd, url: strings.TrimSpace(line)}
}

func (f *fakeProc) pid() int { return f.cmd.Process.Pid }

func (f *fakeProc) stop() {
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
}
