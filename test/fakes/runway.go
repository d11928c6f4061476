package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Runway errors, in Runway's shape: {"error": "..."} with, for a refused input, the issues of its validation.
const (
	RunwayRateLimited = `{"error":"You have exceeded the rate limit for this API key."}`
	RunwayServerError = `{"error":"An unexpected error occurred."}`
	RunwayOverloaded  = `{"error":"Runway is currently experiencing high load. Please try again later."}`
	RunwayBadInput    = `{"error":"Validation of body failed","issues":[{"code":"invalid_enum_value","path":["duration"],"message":"Invalid enum value. Expected 5 | 10"}]}`
	runwayBadKey      = `{"error":"Incorrect API key provided."}`
	runwayNoVersion   = `{"error":"The X-Runway-Version header is required."}`
)

// Runway fakes api.dev.runwayml.com/v1: POST /v1/text_to_video and /v1/image_to_video create a task, GET
// /v1/tasks/{id} reads it (PENDING, THROTTLED, RUNNING, then SUCCEEDED with Outputs URLs, or FAILED), and
// /outputs/... serves the videos, which take no key (Leaked counts the requests that brought one).
type Runway struct {
	*Fake
	Key    string
	jobs   videoJobs
	leaked atomic.Int64
}

func NewRunway(t testing.TB, key string) *Runway {
	f := &Runway{Key: key}
	f.Fake = newFake(t, f.serve)
	return f
}

func (f *Runway) BaseURL() string { return f.URL + "/v1" }

// SetVideo scripts the tasks created from now on, and the downloads.
func (f *Runway) SetVideo(s VideoScript) { f.jobs.SetVideo(s) }

// Leaked is how many downloads carried the key.
func (f *Runway) Leaked() int64 { return f.leaked.Load() }

func (f *Runway) serve(_ *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if strings.HasPrefix(r.URL.Path, "/outputs/") {
		if r.Header.Get("Authorization") != "" {
			f.leaked.Add(1)
		}
		if step.Status != 0 {
			fail(w, step)
			return
		}
		task, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/outputs/"), "/")
		s, ok := f.jobs.known(strings.TrimPrefix(task, "task-"))
		if !ok || s.Expired || r.URL.Query().Get("_jwt") == "" {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden) // as its storage answers an expired signature
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>`)
			return
		}
		serveVideo(w, r, s)
		return
	}
	if bearer(r) != f.Key {
		jsonError(w, 401, runwayBadKey)
		return
	}
	if r.Header.Get("X-Runway-Version") == "" {
		jsonError(w, 400, runwayNoVersion)
		return
	}
	if step.Status != 0 {
		fail(w, step)
		return
	}
	switch path := strings.TrimPrefix(r.URL.Path, "/v1"); {
	case r.Method == http.MethodPost && (path == "/text_to_video" || path == "/image_to_video"):
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil || req["model"] == nil || req["promptText"] == nil {
			jsonError(w, 400, `{"error":"Validation of body failed","issues":[{"code":"invalid_type","path":["model"],"message":"Required"}]}`)
			return
		}
		if _, hasImage := req["promptImage"]; (path == "/image_to_video") != hasImage {
			jsonError(w, 400, `{"error":"Validation of body failed","issues":[{"code":"invalid_type","path":["promptImage"],"message":"Required"}]}`)
			return
		}
		if d, ok := req["duration"].(float64); ok && d != 5 && d != 10 {
			jsonError(w, 400, RunwayBadInput)
			return
		}
		writeJSON(w, map[string]any{"id": "task-" + f.jobs.create()})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/tasks/"):
		id := strings.TrimPrefix(path, "/tasks/")
		n, s, ok := f.jobs.poll(strings.TrimPrefix(id, "task-"))
		if !ok {
			jsonError(w, 404, `{"error":"Task not found."}`)
			return
		}
		task := map[string]any{"id": id, "createdAt": time.Now().UTC().Format(time.RFC3339), "status": "PENDING"}
		switch {
		case n < s.Polls && n == 1:
			task["status"] = "THROTTLED"
		case n < s.Polls && n > 1:
			task["status"], task["progress"] = "RUNNING", float64(n)/float64(s.Polls)
		case n < s.Polls:
		case s.Fail:
			task["status"], task["failure"], task["failureCode"] = "FAILED", "The input did not pass content moderation.", "SAFETY.INPUT.TEXT"
		default:
			outputs := make([]string, max(s.Outputs, 1))
			for i := range outputs {
				outputs[i] = fmt.Sprintf("%s/outputs/%s/%d.mp4?_jwt=signed", f.URL, id, i)
			}
			task["status"], task["output"] = "SUCCEEDED", outputs
		}
		writeJSON(w, task)
	default:
		jsonError(w, 404, `{"error":"Not found."}`)
	}
}
