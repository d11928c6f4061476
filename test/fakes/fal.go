package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// fal errors, in fal's shapes: {"detail": "..."}, or for a refused input a list of {loc, msg, type}.
const (
	FalRateLimited = `{"detail":"Too many requests: the concurrent request limit of your account is reached."}`
	FalServerError = `{"detail":"Internal Server Error"}`
	FalOverloaded  = `{"detail":"Service temporarily unavailable: no runner is available."}`
	FalBadInput    = `{"detail":[{"loc":["body","duration"],"msg":"unexpected value; permitted: '5', '10'","type":"value_error.const"}]}`
	falBadKey      = `{"detail":"Invalid Key Authorization header format."}`
	falFlagged     = `{"detail":[{"loc":["body","prompt"],"msg":"The content could not be processed because it contained material flagged by a content checker.","type":"content_policy_violation"}]}`
)

// Fal fakes queue.fal.run: POST /{app} queues a request; GET /{owner}/{app}/requests/{id}/status answers 202
// while it is queued or running and 200 once completed (advancing by poll count); GET
// /{owner}/{app}/requests/{id} is its result; /files/... is fal's media CDN, which takes no key (Leaked counts
// the requests that brought one).
type Fal struct {
	*Fake
	Key    string
	jobs   videoJobs
	leaked atomic.Int64
}

func NewFal(t testing.TB, key string) *Fal {
	f := &Fal{Key: key}
	f.Fake = newFake(t, f.serve)
	return f
}

// BaseURL is what providers[].base_url takes (https://queue.fal.run in production).
func (f *Fal) BaseURL() string { return f.URL }

// SetVideo scripts the requests queued from now on (Fail: the result is the app's refusal; Filtered: the status
// carries the error), and the CDN's downloads.
func (f *Fal) SetVideo(s VideoScript) { f.jobs.SetVideo(s) }

// Leaked is how many CDN requests carried a key.
func (f *Fal) Leaked() int64 { return f.leaked.Load() }

func (f *Fal) serve(_ *Fake, w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if strings.HasPrefix(r.URL.Path, "/files/") {
		if r.Header.Get("Authorization") != "" {
			f.leaked.Add(1)
		}
		if step.Status != 0 {
			fail(w, step)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/files/")
		s, ok := f.jobs.known(id[:max(strings.LastIndex(id, "-"), 0)])
		if !ok || s.Expired {
			http.Error(w, "Not Found", http.StatusNotFound)
			return
		}
		serveVideo(w, r, s)
		return
	}
	if r.Header.Get("Authorization") != "Key "+f.Key {
		jsonError(w, 401, falBadKey)
		return
	}
	if step.Status != 0 {
		fail(w, step)
		return
	}
	app, req, isRequest := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/requests/")
	switch {
	case r.Method == http.MethodPost && !isRequest:
		var in map[string]any
		if err := json.Unmarshal(body, &in); err != nil || in["prompt"] == nil {
			jsonError(w, 422, `{"detail":[{"loc":["body","prompt"],"msg":"field required","type":"value_error.missing"}]}`)
			return
		}
		if d, ok := in["duration"].(string); ok && strings.HasPrefix(app, "fal-ai/kling-video") && d != "5" && d != "10" {
			jsonError(w, 422, FalBadInput)
			return
		}
		// Status and result live under the owner and app, without the endpoint's sub-path.
		parts := strings.SplitN(app, "/", 3)
		root := f.URL + "/" + strings.Join(parts[:min(2, len(parts))], "/") + "/requests/"
		id := "req-" + f.jobs.create()
		writeJSON(w, map[string]any{"request_id": id, "response_url": root + id, "status_url": root + id + "/status",
			"cancel_url": root + id + "/cancel", "queue_position": 0})
	case r.Method == http.MethodGet && strings.HasSuffix(req, "/status"):
		id := strings.TrimSuffix(req, "/status")
		n, s, ok := f.jobs.poll(strings.TrimPrefix(id, "req-"))
		if !ok {
			jsonError(w, 404, `{"detail":"Request not found"}`)
			return
		}
		out := map[string]any{"request_id": id, "response_url": f.URL + "/" + app + "/requests/" + id}
		switch {
		case n < s.Polls:
			out["status"], out["queue_position"] = "IN_QUEUE", s.Polls-n
			if n > 0 {
				out["status"], out["logs"] = "IN_PROGRESS", []any{}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_ = json.NewEncoder(w).Encode(out)
			return
		case s.Filtered:
			out["status"], out["error"], out["error_type"] = "COMPLETED", "Output video flagged by the content checker.", "content_policy_violation"
		default:
			out["status"] = "COMPLETED"
		}
		writeJSON(w, out)
	case r.Method == http.MethodGet && isRequest:
		id := strings.TrimPrefix(req, "req-")
		s, ok := f.jobs.known(id)
		switch {
		case !ok:
			jsonError(w, 404, `{"detail":"Request not found"}`)
		case s.Fail:
			jsonError(w, 422, falFlagged)
		default:
			files := make([]any, max(s.Outputs, 1))
			for i := range files {
				files[i] = map[string]any{"url": fmt.Sprintf("%s/files/%s-%d.mp4", f.URL, id, i), "content_type": "video/mp4",
					"file_name": "output.mp4", "file_size": max(s.Size, 256<<10)}
			}
			if len(files) == 1 {
				writeJSON(w, map[string]any{"video": files[0], "seed": 42})
				return
			}
			writeJSON(w, map[string]any{"videos": files, "seed": 42})
		}
	default:
		jsonError(w, 405, `{"detail":"Method Not Allowed"}`)
	}
}
