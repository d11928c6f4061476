package fakes

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// ElevenLabs errors in its shape.
const (
	ElevenLabsConcurrency = `{"detail":{"status":"concurrent_limit_exceeded","message":"Too many concurrent requests."}}`
	ElevenLabsQuota       = `{"detail":{"status":"quota_exceeded","message":"This request exceeds your quota of 10000. You have 12 credits remaining."}}`
	ElevenLabsBusy        = `{"detail":{"status":"system_busy","message":"Our services are experiencing high levels of traffic."}}`
)

// ElevenLabs fakes api.elevenlabs.io/v1: POST /v1/text-to-speech/{voice_id}/stream?output_format=...
type ElevenLabs struct {
	*Fake
	Key    string
	Voices []string
}

func NewElevenLabs(t testing.TB, key string, voices ...string) *ElevenLabs {
	e := &ElevenLabs{Key: key, Voices: voices}
	e.Fake = newFake(t, e.serve)
	return e
}

func (e *ElevenLabs) BaseURL() string { return e.URL + "/v1" }

func (e *ElevenLabs) serve(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if r.Header.Get("xi-api-key") != e.Key {
		jsonError(w, 401, `{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/text-to-speech/")
	voice, _ := strings.CutSuffix(rest, "/stream")
	if !ok || r.Method != http.MethodPost {
		jsonError(w, 404, `{"detail":"Not Found"}`)
		return
	}
	w.Header().Set("request-id", "el_req_fake")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	known := false
	for _, v := range e.Voices {
		known = known || v == voice
	}
	if !known {
		jsonError(w, 400, `{"detail":{"status":"voice_not_found","message":"A voice with the voice_id `+voice+` was not found."}}`)
		return
	}
	var req struct {
		Text    string `json:"text"`
		ModelID string `json:"model_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Text == "" {
		jsonError(w, 422, `{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`)
		return
	}
	size := PCMBytesFor(req.Text)
	if step.Size > 0 {
		size = step.Size
	}
	w.Header().Set("character-cost", itoa(len([]rune(req.Text))))
	switch format := r.URL.Query().Get("output_format"); {
	case format == "pcm_24000":
		w.Header().Set("Content-Type", "audio/pcm")
		stream(w, r, Sine(size), step)
	case strings.HasPrefix(format, "mp3_"), format == "":
		w.Header().Set("Content-Type", "audio/mpeg")
		stream(w, r, MP3(size/4), step)
	default:
		jsonError(w, 400, `{"detail":{"status":"invalid_output_format","message":"Invalid output format."}}`)
	}
}
