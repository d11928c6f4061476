// Package minimax speaks MiniMax's video API (api.minimax.io): Hailuo 2.3 and 02, and the 01 series, as a task
// created by POST /v1/video_generation, read by GET /v1/query/video_generation, whose video is a file retrieved
// by GET /v1/files/retrieve for a download URL. MiniMax answers most failures with HTTP 200 and a base_resp
// status code, which is classified as the HTTP status it stands for.
package minimax

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// Client is one MiniMax account.
type Client struct {
	cfg  upstream.Config
	http *http.Client
}

var _ ports.VideoProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client { return &Client{cfg: cfg, http: client} }

// baseResp is the status of every MiniMax answer: 0 is success.
type baseResp struct {
	StatusCode int    `json:"status_code"`
	StatusMsg  string `json:"status_msg"`
}

// statusOf is the HTTP status a base_resp code stands for: rate limits, the gateway's credentials, the account's
// balance (quota), the caller's input (including a prompt flagged as sensitive), and the provider's failures.
func statusOf(code int) int {
	switch code {
	case 1002, 1039:
		return http.StatusTooManyRequests
	case 1004, 2049:
		return http.StatusUnauthorized
	case 1008:
		return http.StatusPaymentRequired
	case 1026, 1042, 2013:
		return http.StatusBadRequest
	case 1001:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Submit creates a task. Frame images go as the URLs the caller gave (MiniMax takes https and data: URLs) and
// reference images as a subject reference (S2V-01); MiniMax takes no seed, size, aspect ratio (its video is 16:9,
// or the first frame's shape) nor sound: those are refused before the call.
func (c *Client) Submit(ctx context.Context, s ports.VideoSubmission) (string, error) {
	r := s.Request
	switch {
	case r.Seed != nil:
		return "", upstream.Unfit("seed: minimax takes no seed")
	case r.Size != "":
		return "", upstream.Unfit("size: minimax takes a resolution, not a size")
	case r.AspectRatio != "" && r.AspectRatio != "16:9":
		return "", upstream.Unfit("aspect_ratio: minimax makes 16:9 video, or the shape of the first frame")
	case r.GenerateAudio != nil && *r.GenerateAudio:
		return "", upstream.Unfit("generate_audio: minimax makes silent video")
	}
	body := map[string]any{"model": s.UpstreamModel, "prompt": r.Prompt}
	if r.Duration > 0 {
		body["duration"] = r.Duration
	}
	if r.Resolution != "" {
		body["resolution"] = strings.ToUpper(r.Resolution)
	}
	for _, f := range r.FrameImages {
		body[f.Type+"_image"] = f.URL // first_frame_image, last_frame_image
	}
	if len(r.InputReferences) > 0 {
		var images []string
		for _, ref := range r.InputReferences {
			if ref.Type != "image_url" {
				return "", upstream.Unfit("input_references: minimax takes reference images only")
			}
			images = append(images, ref.URL)
		}
		body["subject_reference"] = []any{map[string]any{"type": "character", "image": images}}
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/video_generation", upstream.Merge(s.Options, body))
	if err != nil {
		return "", upstream.Internal(err)
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	if err := c.call(req, &task); err != nil {
		return "", err
	}
	if task.TaskID == "" {
		return "", &ports.UpstreamError{Kind: domain.KindUpstream, Reason: "the provider's answer has no task id"}
	}
	return task.TaskID, nil
}

// statuses are a task's; an unknown one is not an end.
var statuses = map[string]video.Status{"Preparing": video.Pending, "Queueing": video.Pending, "Processing": video.InProgress,
	"Success": video.Completed, "Fail": video.Failed}

// Poll reads the task: its status and, once it succeeded, its one video's file id.
func (c *Client) Poll(ctx context.Context, id string) (ports.VideoState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/query/video_generation?task_id="+url.QueryEscape(id), nil)
	if err != nil {
		return ports.VideoState{}, upstream.Internal(err)
	}
	var task struct {
		Status   string   `json:"status"`
		FileID   string   `json:"file_id"`
		BaseResp baseResp `json:"base_resp"`
	}
	// A failed task carries its reason in base_resp (1027: the output was flagged): read it, not as the poll's failure.
	if err := c.send(req, &task); err != nil {
		_, err = upstream.Polled(nil, err)
		return ports.VideoState{}, err
	}
	st, ok := statuses[task.Status]
	switch {
	case !ok:
		return ports.VideoState{Status: video.InProgress}, nil
	case st == video.Failed:
		reason := cmp.Or(task.BaseResp.StatusMsg, "no reason given")
		return ports.VideoState{Status: video.Failed, Error: upstream.Scrub("the provider failed the task: "+reason, c.cfg.APIKey)}, nil
	case task.BaseResp.StatusCode != 0:
		return ports.VideoState{}, c.failed(req, task.BaseResp, nil)
	case st == video.Completed && task.FileID == "":
		return ports.VideoState{Status: video.Failed, Error: "the provider returned no video"}, nil
	case st == video.Completed:
		return ports.VideoState{Status: st, Outputs: []video.Output{{Ref: task.FileID, ContentType: "video/mp4"}}}, nil
	}
	return ports.VideoState{Status: st}, nil
}

// Download retrieves the file for its download URL (with the key), then fetches that URL without it, passing a
// byte range through.
func (c *Client) Download(ctx context.Context, _ string, out video.Output, byteRange string) (ports.VideoContent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/files/retrieve?file_id="+url.QueryEscape(out.Ref), nil)
	if err != nil {
		return ports.VideoContent{}, upstream.Internal(err)
	}
	var f struct {
		File struct {
			DownloadURL string `json:"download_url"`
		} `json:"file"`
	}
	if err := c.call(req, &f); err != nil {
		return upstream.Download(nil, err)
	}
	return upstream.Download(upstream.Fetch(ctx, c.http, c.cfg, f.File.DownloadURL, byteRange))
}

// call sends req and decodes its answer into v, failing on an error status or a base_resp that is not success.
func (c *Client) call(req *http.Request, v any) error {
	var status struct {
		BaseResp baseResp `json:"base_resp"`
	}
	raw, err := c.sendRaw(req, v)
	if err != nil {
		return err
	}
	_ = json.Unmarshal(raw, &status)
	if status.BaseResp.StatusCode != 0 {
		return c.failed(req, status.BaseResp, raw)
	}
	return nil
}

// send is call, leaving base_resp to the caller.
func (c *Client) send(req *http.Request, v any) error {
	_, err := c.sendRaw(req, v)
	return err
}

// maxAnswer bounds a JSON answer (tasks and files are a few hundred bytes).
const maxAnswer = 1 << 20

func (c *Client) sendRaw(req *http.Request, v any) ([]byte, error) {
	req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	resp, err := upstream.Do(req.Context(), c.http, req, c.cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		raw := upstream.ErrorBody(resp)
		var e struct {
			BaseResp baseResp `json:"base_resp"`
		}
		_ = json.Unmarshal(raw, &e)
		return nil, upstream.Failed(resp, raw, e.BaseResp.StatusMsg)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return nil, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed answer", Err: err}
	}
	return raw, nil
}

// failed classifies a base_resp failure as the HTTP status its code stands for; an empty balance is the
// account's quota (another endpoint may do).
func (c *Client) failed(req *http.Request, b baseResp, raw []byte) error {
	if raw == nil {
		raw, _ = json.Marshal(map[string]any{"base_resp": b})
	}
	resp := &http.Response{StatusCode: statusOf(b.StatusCode), Header: http.Header{}, Request: req}
	e := upstream.Failed(resp, raw, b.StatusMsg)
	if b.StatusCode == 1008 {
		return upstream.Quota(e)
	}
	return e
}
