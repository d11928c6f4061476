package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// The Videos API's shape (POST /videos, GET /videos/{id}, GET /videos/{id}/content) outlives OpenAI's own Sora
// API, shut down on 2026-09-24: LiteLLM's proxy serves it in front of Veo, Vertex AI, Runway and Azure, and this
// client speaks to such hosts.
var _ ports.VideoProvider = (*Client)(nil)

// sizes derives OpenAI's size from a resolution and aspect ratio when the caller gave no size.
var sizes = map[[2]string]string{
	{"720p", "16:9"}: "1280x720", {"720p", "9:16"}: "720x1280",
	{"1080p", "16:9"}: "1920x1080", {"1080p", "9:16"}: "1080x1920",
}

// Submit creates a video with POST /videos. Sora takes reference images only as uploads, which the gateway
// does not fetch on a caller's behalf: such requests go to another endpoint.
func (c *Client) Submit(ctx context.Context, s ports.VideoSubmission) (string, error) {
	r := s.Request
	if len(r.FrameImages) > 0 || len(r.InputReferences) > 0 {
		return "", upstream.Unfit("frame_images and input_references: this provider takes none through the gateway")
	}
	canonical := map[string]any{"model": s.UpstreamModel, "prompt": r.Prompt}
	if r.Duration > 0 {
		canonical["seconds"] = strconv.Itoa(r.Duration)
	}
	if size := r.Size; size != "" {
		canonical["size"] = size
	} else if size, ok := sizes[[2]string{r.Resolution, r.AspectRatio}]; ok {
		canonical["size"] = size
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/videos", upstream.Merge(s.Options, canonical))
	if err != nil {
		return "", upstream.Internal(err)
	}
	resp, err := c.do(ctx, req)
	if err != nil {
		return "", err
	}
	var v struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || v.ID == "" {
		return "", &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Reason: "the provider's answer has no video id", Err: err}
	}
	return v.ID, nil
}

var statuses = map[string]video.Status{"queued": video.Pending, "in_progress": video.InProgress,
	"completed": video.Completed, "failed": video.Failed, "cancelled": video.Cancelled}

// Poll retrieves the video: its status, the provider's suggested poll interval (openai-poll-after-ms) and,
// once completed, its one output and expiry.
func (c *Client) Poll(ctx context.Context, id string) (ports.VideoState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/videos/"+url.PathEscape(id), nil)
	if err != nil {
		return ports.VideoState{}, upstream.Internal(err)
	}
	resp, err := upstream.Polled(c.do(ctx, req))
	if err != nil {
		return ports.VideoState{}, err
	}
	defer resp.Body.Close()
	var v struct {
		Status    string `json:"status"`
		Seconds   string `json:"seconds"`
		ExpiresAt *int64 `json:"expires_at"`
		Error     *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return ports.VideoState{}, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed video", Err: err}
	}
	st, ok := statuses[v.Status]
	if !ok {
		st = video.InProgress // an unknown state is not an end
	}
	state := ports.VideoState{Status: st}
	if ms, err := strconv.Atoi(resp.Header.Get("Openai-Poll-After-Ms")); err == nil && ms > 0 {
		state.PollAfter = time.Duration(ms) * time.Millisecond
	}
	state.Seconds, _ = strconv.Atoi(v.Seconds)
	if v.ExpiresAt != nil {
		t := time.Unix(*v.ExpiresAt, 0).UTC()
		state.ExpiresAt = &t
	}
	if st == video.Completed {
		state.Outputs = []video.Output{{ContentType: "video/mp4"}} // one video per job, fetched by the job's id
	}
	if v.Error != nil {
		state.Error = upstream.Scrub(v.Error.Message, c.cfg.APIKey)
	}
	return state, nil
}

// Download fetches GET /videos/{id}/content?variant=video, passing a byte range through.
func (c *Client) Download(ctx context.Context, id string, _ video.Output, byteRange string) (ports.VideoContent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/videos/"+url.PathEscape(id)+"/content?variant=video", nil)
	if err != nil {
		return ports.VideoContent{}, upstream.Internal(err)
	}
	req.Header.Set("Accept", "application/binary")
	if byteRange != "" {
		req.Header.Set("Range", byteRange)
	}
	return upstream.Download(c.do(ctx, req))
}
