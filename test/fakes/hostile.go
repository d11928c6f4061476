package fakes

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Hostile is an OpenAI-compatible chat upstream that misbehaves, each way under an upstream model of its name
// (POST /v1/chat/completions, streamed as OpenAI streams; it checks the bearer key as OpenAI does):
//   - "stall": a first token, then nothing, holding the connection until the caller goes;
//   - "endless": a token every 20 ms, for ever;
//   - "flood": a delta of 1 MB of text every 50 ms, for ever;
//   - "usage": "Hi", then a usage of 9,999,999 prompt tokens, whatever was sent;
//   - "leak": the bearer key it was sent, in its answer, cut across two deltas;
//   - anything else: a short whole answer with its usage.
//
// It is its own server (not a Fake: it keeps no log of requests, which a flood would make the test's largest
// memory), for tests that measure the gateway from outside.
type Hostile struct {
	*httptest.Server
	Key string
}

func NewHostile(t testing.TB, key string) *Hostile {
	h := &Hostile{Key: key}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

func (h *Hostile) BaseURL() string { return h.URL + "/v1" }

// floodDelta is the text of each of the flood's deltas: 1 MB.
var floodDelta = strings.Repeat("flood ", 1<<20/6)

func (h *Hostile) serve(w http.ResponseWriter, r *http.Request) {
	if bearer(r) != h.Key {
		jsonError(w, 401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		jsonError(w, 400, `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	send := func(ev string) bool {
		if _, err := w.Write([]byte(ev)); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	text := func(s, finish string) string {
		b, _ := json.Marshal(s)
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"chatcmpl-h","object":"chat.completion.chunk","created":1700000000,"model":"` + req.Model +
			`","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":` + f + "}]}\n\n"
	}
	usage := func(prompt, completion int) string {
		return dataEvent(map[string]any{"id": "chatcmpl-h", "object": "chat.completion.chunk", "created": 1700000000,
			"model": req.Model, "choices": []any{}, "usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion,
				"total_tokens": prompt + completion}})
	}
	forever := func(ev string, gap time.Duration) {
		for send(ev) {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
		}
	}
	switch req.Model {
	case "stall":
		send(text("Hello", ""))
		<-r.Context().Done()
	case "endless":
		forever(text(" token", ""), 20*time.Millisecond)
	case "flood":
		forever(text(floodDelta, ""), 50*time.Millisecond)
	case "usage":
		send(text("Hi", "stop"))
		send(usage(9_999_999, 1))
		send("data: [DONE]\n\n")
	case "leak":
		cut := len(h.Key) / 2
		send(text("Your key is "+h.Key[:cut], ""))
		send(text(h.Key[cut:]+".", "stop"))
		send(usage(5, 9))
		send("data: [DONE]\n\n")
	default:
		send(text("Hello from a hostile upstream.", "stop"))
		send(usage(5, 6))
		send("data: [DONE]\n\n")
	}
}
