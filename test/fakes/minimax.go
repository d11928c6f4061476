package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// MiniMax errors, in MiniMax's shape: a base_resp with a status code, which MiniMax sends with HTTP 200 (MiniMaxStatus
// scripts that) and, from its gateway, with an error status.
const (
	MiniMaxRateLimited = `{"base_resp":{"status_code":1002,"status_msg":"rate limit exceeded(RPM)"}}`
	MiniMaxServerError = `{"base_resp":{"status_code":1000,"status_msg":"unknown error"}}`
	MiniMaxOverloaded  = `{"base_resp":{"status_code":1033,"status_msg":"system busy, please try again later"}}`
	MiniMaxBadInput    = `{"base_resp":{"status_code":2013,"status_msg":"invalid params, duration should be 6 or 10"}}`
	MiniMaxSensitive   = `{"base_resp":{"status_code":1026,"status_msg":"input new_sensitive"}}`
	MiniMaxNoBalance   = `{"base_resp":{"status_code":1008,"status_msg":"insufficient balance"}}`
	minimaxBadKey      = `{"base_resp":{"status_code":1004,"status_msg":"login fail: Please carry the API secret key in the 'Authorization' field of the request header"}}`
)

// MiniMaxStatus answers a call with HTTP 200 and a failing base_resp, as MiniMax does.
func MiniMaxStatus(body string) Step { return Step{Status: http.StatusOK, Body: body} }

// MiniMax fakes api.minimax.io/v1: POST /v1/video_generation creates a task, GET /v1/query/video_generation reads
// it (Preparing, Queueing, Processing, then Success with a file id, or Fail), GET /v1/files/retrieve gives the
// file's download URL, and /download/... serves it without the key (Leaked counts the requests that brought one).
type MiniMax struct {
	*Fake
	Key    string
	jobs   videoJobs
	leaked atomic.Int64
}

func NewMiniMax(t testing.TB, key string) *MiniMax {
	f := &MiniMax{Key: key}
	f.Fake = newFake(t, f.serve)
	return f
}

func (f *MiniMax) BaseURL() string { return f.URL + "/v1" }

// SetVideo scripts the tasks created from now on, and the downloads.
func (f *MiniMax) SetVideo(s VideoScript) { f.jobs.SetVideo(s) }

// Leaked is how many downloads carried the key.
func (f *MiniMax) Leaked() int64 { return f.leaked.Load() }

var minimaxOK = map[string]any{"status_code": 0, "status_msg": "success"}

func (f *MiniMax) serve(_ *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if strings.HasPrefix(r.URL.Path, "/download/") {
		if r.Header.Get("Authorization") != "" {
			f.leaked.Add(1)
		}
		if step.Status != 0 {
			fail(w, step)
			return
		}
		s, ok := f.jobs.known(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/download/"), ".mp4"))
		if !ok || s.Expired {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		serveVideo(w, r, s)
		return
	}
	if bearer(r) != f.Key {
		jsonError(w, 200, minimaxBadKey)
		return
	}
	if step.Status != 0 {
		fail(w, step)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/video_generation":
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil || req["model"] == nil {
			jsonError(w, 200, `{"base_resp":{"status_code":2013,"status_msg":"invalid params, model is required"}}`)
			return
		}
		if d, ok := req["duration"].(float64); ok && d != 6 && d != 10 {
			jsonError(w, 200, MiniMaxBadInput)
			return
		}
		writeJSON(w, map[string]any{"task_id": "1" + strings.TrimPrefix(f.jobs.create(), "job"), "base_resp": minimaxOK})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/query/video_generation":
		task := r.URL.Query().Get("task_id")
		n, s, ok := f.jobs.poll("job" + strings.TrimPrefix(task, "1"))
		if !ok || !strings.HasPrefix(task, "1") {
			jsonError(w, 200, `{"base_resp":{"status_code":2013,"status_msg":"invalid params, task not found"}}`)
			return
		}
		out := map[string]any{"task_id": task, "status": "Preparing", "file_id": "", "base_resp": minimaxOK}
		switch {
		case n < s.Polls && n == 1:
			out["status"] = "Queueing"
		case n < s.Polls && n > 1:
			out["status"] = "Processing"
		case n < s.Polls:
		case s.Fail:
			out["status"], out["base_resp"] = "Fail", map[string]any{"status_code": 1027, "status_msg": "output video sensitive"}
		default:
			out["status"], out["file_id"], out["video_width"], out["video_height"] = "Success", "2"+strings.TrimPrefix(task, "1"), 1366, 768
		}
		writeJSON(w, out)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/files/retrieve":
		file := r.URL.Query().Get("file_id")
		if _, ok := f.jobs.known("job" + strings.TrimPrefix(file, "2")); !ok || !strings.HasPrefix(file, "2") {
			jsonError(w, 200, `{"base_resp":{"status_code":2013,"status_msg":"invalid params, file not found"}}`)
			return
		}
		writeJSON(w, map[string]any{"file": map[string]any{"file_id": file, "bytes": 0, "filename": "output_aigc.mp4",
			"purpose": "video_generation", "download_url": fmt.Sprintf("%s/download/job%s.mp4", f.URL, strings.TrimPrefix(file, "2"))},
			"base_resp": minimaxOK})
	default:
		jsonError(w, 404, `{"base_resp":{"status_code":1000,"status_msg":"not found"}}`)
	}
}
