// Package runway speaks Runway's developer API (api.dev.runwayml.com): Gen-4, Gen-4.5 and the Veo models it
// serves, as tasks created by POST /v1/text_to_video or /v1/image_to_video and read by GET /v1/tasks/{id}. A task
// may make several videos; their URLs are short-lived and fetched without the key.
package runway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// Version is the API version every request names (X-Runway-Version).
const Version = "2024-11-06"

// Retention is how long Runway keeps a task's output URLs working.
const Retention = 24 * time.Hour

// Client is one Runway account.
type Client struct {
	cfg  upstream.Config
	http *http.Client
}

var _ ports.VideoProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client { return &Client{cfg: cfg, http: client} }

// ratios are Runway's output ratios ("1280:720") for a resolution and aspect ratio; an aspect ratio alone is at
// 720p, a resolution alone at 16:9.
var ratios = map[[2]string]string{
	{"720p", "16:9"}: "1280:720", {"720p", "9:16"}: "720:1280", {"720p", "4:3"}: "1104:832", {"720p", "3:4"}: "832:1104",
	{"720p", "1:1"}: "960:960", {"720p", "21:9"}: "1584:672",
	{"1080p", "16:9"}: "1920:1080", {"1080p", "9:16"}: "1080:1920",
}

// ratio is the task's ratio: the size as Runway writes it, or the resolution and aspect ratio's; "" leaves it to
// the model's default.
func ratio(r video.Request) (string, error) {
	if r.Size != "" {
		return strings.Replace(r.Size, "x", ":", 1), nil
	}
	if r.Resolution == "" && r.AspectRatio == "" {
		return "", nil
	}
	if v, ok := ratios[[2]string{cmp.Or(r.Resolution, "720p"), cmp.Or(r.AspectRatio, "16:9")}]; ok {
		return v, nil
	}
	return "", upstream.Unfit(fmt.Sprintf("resolution and aspect_ratio: runway makes no %s %s video; it makes 720p at 16:9, 9:16, 4:3, 3:4, 1:1 "+
		"or 21:9, and 1080p at 16:9 or 9:16", cmp.Or(r.Resolution, "720p"), cmp.Or(r.AspectRatio, "16:9")))
}

// Submit creates a task: image_to_video when the request has frame images (each a promptImage with its position,
// passed as the URL the caller gave: Runway takes https and data: URLs), text_to_video otherwise. Runway makes
// no sound through these routes and takes no reference images: asking for either is refused before the call.
func (c *Client) Submit(ctx context.Context, s ports.VideoSubmission) (string, error) {
	r := s.Request
	switch {
	case r.GenerateAudio != nil && *r.GenerateAudio:
		return "", upstream.Unfit("generate_audio: runway makes silent video")
	case len(r.InputReferences) > 0:
		return "", upstream.Unfit("input_references: runway takes frame images only")
	}
	ratio, err := ratio(r)
	if err != nil {
		return "", err
	}
	body := map[string]any{"model": s.UpstreamModel, "promptText": r.Prompt}
	if ratio != "" {
		body["ratio"] = ratio
	}
	if r.Duration > 0 {
		body["duration"] = r.Duration
	}
	if r.Seed != nil {
		body["seed"] = *r.Seed
	}
	route := "/text_to_video"
	if len(r.FrameImages) > 0 {
		route = "/image_to_video"
		var images []map[string]string
		for _, f := range r.FrameImages {
			images = append(images, map[string]string{"uri": f.URL, "position": strings.TrimSuffix(f.Type, "_frame")})
		}
		body["promptImage"] = images
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+route, upstream.Merge(s.Options, body))
	if err != nil {
		return "", upstream.Internal(err)
	}
	resp, err := c.call(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var task struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&task); err != nil || task.ID == "" {
		return "", &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Reason: "the provider's answer has no task id", Err: err}
	}
	return task.ID, nil
}

// statuses are a task's; an unknown one is not an end.
var statuses = map[string]video.Status{"PENDING": video.Pending, "THROTTLED": video.Pending, "RUNNING": video.InProgress,
	"SUCCEEDED": video.Completed, "FAILED": video.Failed, "CANCELLED": video.Cancelled}

// Poll reads the task: its status and, once it succeeded, its outputs (one per URL), which expire a day later.
func (c *Client) Poll(ctx context.Context, id string) (ports.VideoState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/tasks/"+url.PathEscape(id), nil)
	if err != nil {
		return ports.VideoState{}, upstream.Internal(err)
	}
	resp, err := upstream.Polled(c.call(req))
	if err != nil {
		return ports.VideoState{}, err
	}
	defer resp.Body.Close()
	var task struct {
		Status      string   `json:"status"`
		Output      []string `json:"output"`
		Failure     string   `json:"failure"`
		FailureCode string   `json:"failureCode"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&task); err != nil {
		return ports.VideoState{}, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed task", Err: err}
	}
	st, ok := statuses[task.Status]
	if !ok {
		st = video.InProgress
	}
	state := ports.VideoState{Status: st}
	switch st {
	case video.Completed:
		for _, u := range task.Output {
			state.Outputs = append(state.Outputs, video.Output{Ref: u, ContentType: "video/mp4"})
		}
		if len(state.Outputs) == 0 {
			return ports.VideoState{Status: video.Failed, Error: "the provider returned no video"}, nil
		}
		state.Retention = Retention
	case video.Failed:
		reason := cmp.Or(task.Failure, "no reason given")
		if task.FailureCode != "" {
			reason += " (" + task.FailureCode + ")"
		}
		state.Error = upstream.Scrub("the provider failed the task: "+reason, c.cfg.APIKey)
	}
	return state, nil
}

// Download fetches an output URL, without the key, passing a byte range through. The URLs are signed: storage
// refuses one past its signature's expiry with a 403, which means the video has expired.
func (c *Client) Download(ctx context.Context, _ string, out video.Output, byteRange string) (ports.VideoContent, error) {
	resp, err := upstream.Fetch(ctx, c.http, c.cfg, out.Ref, byteRange)
	var ue *ports.UpstreamError
	if errors.As(err, &ue) && ue.Status == http.StatusForbidden {
		return ports.VideoContent{}, video.ErrExpired.Wrap(err)
	}
	return upstream.Download(resp, err)
}

// call sends req with the key and the API version, and classifies a failure by Runway's error body,
// {"error": "...", "issues": [...]}.
func (c *Client) call(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	req.Header.Set("X-Runway-Version", Version)
	resp, err := upstream.Do(req.Context(), c.http, req, c.cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		raw := upstream.ErrorBody(resp)
		var e struct {
			Error  string `json:"error"`
			Issues []struct {
				Path    []any  `json:"path"`
				Message string `json:"message"`
			} `json:"issues"`
		}
		_ = json.Unmarshal(raw, &e)
		msg := e.Error
		for _, is := range e.Issues {
			var path []string
			for _, p := range is.Path {
				path = append(path, fmt.Sprint(p))
			}
			msg += "; " + strings.Join(append(path, is.Message), ": ")
		}
		return nil, upstream.Failed(resp, raw, msg)
	}
	return resp, nil
}
