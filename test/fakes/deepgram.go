package fakes

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Deepgram fakes api.deepgram.com/v1: POST /v1/speak?model=aura-2-<voice>-en&encoding=...
type Deepgram struct {
	*Fake
	Key string
}

func NewDeepgram(t testing.TB, key string) *Deepgram {
	d := &Deepgram{Key: key}
	d.Fake = newFake(t, d.serve)
	return d
}

func (d *Deepgram) BaseURL() string { return d.URL + "/v1" }

func (d *Deepgram) serve(f *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if r.Header.Get("Authorization") != "Token "+d.Key {
		jsonError(w, 401, `{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"dg-fake"}`)
		return
	}
	w.Header().Set("dg-request-id", "dg-req-fake")
	if step.Status != 0 {
		fail(w, step)
		return
	}
	q := r.URL.Query()
	if !strings.HasPrefix(q.Get("model"), "aura-") {
		jsonError(w, 400, `{"err_code":"INVALID_QUERY_PARAMETER","err_msg":"Invalid model.","request_id":"dg-fake"}`)
		return
	}
	var req struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Text == "" {
		jsonError(w, 400, `{"err_code":"INVALID_BODY","err_msg":"text is required.","request_id":"dg-fake"}`)
		return
	}
	w.Header().Set("dg-char-count", itoa(len([]rune(req.Text))))
	w.Header().Set("dg-model-name", q.Get("model"))
	size := PCMBytesFor(req.Text)
	if step.Size > 0 {
		size = step.Size
	}
	switch q.Get("encoding") {
	case "linear16":
		if q.Get("container") != "none" || q.Get("sample_rate") != "24000" {
			jsonError(w, 400, `{"err_code":"UNSUPPORTED_AUDIO_FORMAT","err_msg":"this fake expects container=none&sample_rate=24000.","request_id":"dg-fake"}`)
			return
		}
		w.Header().Set("Content-Type", "audio/l16")
		stream(w, r, Sine(size), step)
	case "mp3":
		if q.Has("sample_rate") {
			jsonError(w, 400, `{"err_code":"UNSUPPORTED_AUDIO_FORMAT","err_msg":"sample_rate is not supported with mp3.","request_id":"dg-fake"}`)
			return
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		stream(w, r, MP3(size/4), step)
	default:
		jsonError(w, 400, `{"err_code":"UNSUPPORTED_AUDIO_FORMAT","err_msg":"Unsupported encoding.","request_id":"dg-fake"}`)
	}
}
