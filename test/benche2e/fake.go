//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

// chunk is what the fake writes and flushes at a time: odd on purpose, as a real upstream's chunks are.
const chunk = 4093

// runFake serves OpenAI's speech route: clip bytes of audio in flushed chunks, or, for the model tts-hold, one
// chunk and then nothing until the caller leaves (a stream in flight). It prints its URL and serves until killed.
func runFake(args []string) {
	fs := flag.NewFlagSet("fake", flag.ExitOnError)
	clip := fs.Int("clip", 16<<10, "bytes per answer")
	_ = fs.Parse(args)
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
	log.Fatal(http.Serve(l, mux))
}

// fakeProc is the fake, running.
type fakeProc struct {
	cmd *exec.Cmd
	url string
}

func startFake(clip int) *fakeProc {
	cmd := self("fake", "-clip", fmt.Sprint(clip))
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
