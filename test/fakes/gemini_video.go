package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// video serves Veo: :predictLongRunning, operation polling, and file downloads that redirect to Storage (a
// second server, which records whether the API key followed the redirect).
func (g *Gemini) video(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	path := strings.TrimPrefix(r.URL.Path, "/v1beta/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":predictLongRunning"):
		var req struct {
			Instances []struct {
				Prompt string `json:"prompt"`
			} `json:"instances"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Instances) == 0 || req.Instances[0].Prompt == "" {
			jsonError(w, 400, `{"error":{"code":400,"message":"A prompt is required.","status":"INVALID_ARGUMENT"}}`)
			return
		}
		model := strings.TrimSuffix(path, ":predictLongRunning")
		writeJSON(w, map[string]any{"name": model + "/operations/" + g.jobs.create()})
	case r.Method == http.MethodGet && strings.Contains(path, "/operations/"):
		op := path[strings.LastIndex(path, "/")+1:]
		n, s, ok := g.jobs.poll(op)
		if !ok {
			jsonError(w, 404, `{"error":{"code":404,"message":"Operation not found.","status":"NOT_FOUND"}}`)
			return
		}
		res := map[string]any{"name": path, "done": false}
		switch {
		case n < s.Polls:
		case s.Fail:
			res["done"], res["error"] = true, map[string]any{"code": 13, "message": "Video generation failed."}
		case s.Filtered:
			res["done"], res["response"] = true, map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
				"generateVideoResponse": map[string]any{"generatedSamples": []any{}, "raiMediaFilteredCount": 1,
					"raiMediaFilteredReasons": []string{"The prompt may violate our policies."}}}
		default:
			outputs := max(s.Outputs, 1)
			samples := make([]any, outputs)
			for i := range samples {
				samples[i] = map[string]any{"video": map[string]any{"uri": fmt.Sprintf("%s/v1beta/files/%s-%d:download?alt=media", g.URL, op, i)}}
			}
			res["done"], res["response"] = true, map[string]any{"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
				"generateVideoResponse": map[string]any{"generatedSamples": samples}}
		}
		writeJSON(w, res)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "files/") && strings.HasSuffix(path, ":download"):
		file := strings.TrimSuffix(strings.TrimPrefix(path, "files/"), ":download")
		op := file[:strings.LastIndex(file, "-")]
		s, ok := g.jobs.known(op)
		if !ok || s.Expired {
			jsonError(w, 404, `{"error":{"code":404,"message":"File not found.","status":"NOT_FOUND"}}`)
			return
		}
		http.Redirect(w, r, g.Storage.URL+"/storage/"+file+"?signature=fake", http.StatusFound)
	default:
		jsonError(w, 404, `{"error":{"code":404,"message":"Method not found.","status":"NOT_FOUND"}}`)
	}
}

// Storage is where Veo's downloads redirect: another host, which must never see the API key.
type Storage struct {
	*httptest.Server
	mu     sync.Mutex
	leaked int
	jobs   *videoJobs
}

func newStorage(t testing.TB, jobs *videoJobs) *Storage {
	s := &Storage{jobs: jobs}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Get("key") != "" {
			s.mu.Lock()
			s.leaked++
			s.mu.Unlock()
		}
		jobs.mu.Lock()
		script := jobs.script
		jobs.mu.Unlock()
		serveVideo(w, r, script)
	}))
	t.Cleanup(s.Close)
	return s
}

// Leaked is how many requests reached storage carrying the API key.
func (s *Storage) Leaked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaked
}
