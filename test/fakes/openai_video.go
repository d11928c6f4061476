package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// video serves OpenAI's videos API (Sora): create, retrieve (advancing by poll count, with openai-poll-after-ms)
// and /content?variant=video.
func (o *OpenAI) video(w http.ResponseWriter, r *http.Request, body []byte, step Step) {
	if step.Status != 0 {
		fail(w, step)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/videos")
	switch {
	case r.Method == http.MethodPost && path == "":
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil || req["prompt"] == nil || req["model"] == nil {
			jsonError(w, 400, `{"error":{"message":"Missing required parameter: 'prompt'.","type":"invalid_request_error","param":"prompt","code":null}}`)
			return
		}
		if s, ok := req["seconds"].(string); ok && s != "4" && s != "8" && s != "12" {
			jsonError(w, 400, `{"error":{"message":"Invalid value for 'seconds': must be one of 4, 8, 12.","type":"invalid_request_error","param":"seconds","code":"invalid_value"}}`)
			return
		}
		id := "video_" + o.jobs.create()
		writeJSON(w, map[string]any{"id": id, "object": "video", "model": req["model"], "status": "queued", "progress": 0,
			"created_at": time.Now().Unix(), "seconds": req["seconds"], "size": req["size"]})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/content")
		s, ok := o.jobs.known(strings.TrimPrefix(id, "video_"))
		if !ok || s.Expired {
			jsonError(w, 404, `{"error":{"message":"Video not found or expired.","type":"invalid_request_error","param":null,"code":"not_found"}}`)
			return
		}
		if r.URL.Query().Get("variant") != "video" {
			jsonError(w, 400, `{"error":{"message":"this fake serves variant=video","type":"invalid_request_error","param":"variant","code":null}}`)
			return
		}
		serveVideo(w, r, s)
	case r.Method == http.MethodGet && path != "":
		id := strings.TrimPrefix(path, "/")
		n, s, ok := o.jobs.poll(strings.TrimPrefix(id, "video_"))
		if !ok {
			jsonError(w, 404, `{"error":{"message":"Video not found.","type":"invalid_request_error","param":null,"code":"not_found"}}`)
			return
		}
		w.Header().Set("openai-poll-after-ms", "10")
		v := map[string]any{"id": id, "object": "video", "model": "sora-2", "status": "queued", "progress": 0, "seconds": "8"}
		switch {
		case n >= s.Polls && s.Fail:
			v["status"], v["error"] = "failed", map[string]any{"code": "moderation_blocked", "message": "Your request was blocked by moderation."}
		case n >= s.Polls:
			v["status"], v["progress"], v["completed_at"] = "completed", 100, time.Now().Unix()
			expires := s.ExpiresAt
			if expires.IsZero() {
				expires = time.Now().Add(time.Hour)
			}
			v["expires_at"] = expires.Unix()
		case n > 0:
			v["status"], v["progress"] = "in_progress", 100*n/(s.Polls+1)
		}
		writeJSON(w, v)
	default:
		jsonError(w, 404, fmt.Sprintf(`{"error":{"message":"Invalid URL (%s %s)","type":"invalid_request_error","param":null,"code":null}}`, r.Method, r.URL.Path))
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
