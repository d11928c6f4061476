// Package fal speaks fal's queue API (queue.fal.run): one protocol in front of many video model families —
// Kling, Veo, Wan, Seedance, Hailuo, Luma, PixVerse — each an app id, which is the endpoint's upstream_model
// ("fal-ai/kling-video/v2.5-turbo/pro/text-to-video"). A job is submitted to the app, its status polled, and its
// result read; the videos are plain URLs on fal's media CDN, fetched without the key.
package fal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

// Client is one fal account.
type Client struct {
	cfg  upstream.Config
	http *http.Client
	base *url.URL // the queue's root: the key goes to its host only
}

var _ ports.VideoProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		base = &url.URL{}
	}
	return &Client{cfg: cfg, http: client, base: base}
}

// dialect is how one family of fal apps names the reference's fields: the apps share the queue, not their
// inputs.
type dialect struct {
	// durationSuffix follows the number of seconds, which every app takes as a string ("5", or "8s" for Veo).
	durationSuffix string
	// upperResolution writes "768P" for "768p" (MiniMax's apps).
	upperResolution bool
	// first and last are the inputs of the first and last frame's image URL; last is empty where the app takes
	// no last frame. references is the input of reference images, empty where the app takes none.
	first, last, references string
}

// dialects are matched by the app id's prefix, the first that matches; fallback is the common naming (Wan,
// Seedance, PixVerse and most others).
var (
	dialects = []struct {
		prefix string
		d      dialect
	}{
		{"fal-ai/veo3.1/first-last-frame", dialect{durationSuffix: "s", first: "first_frame_url", last: "last_frame_url"}},
		{"fal-ai/veo3.1/reference-to-video", dialect{durationSuffix: "s", references: "image_urls"}},
		{"fal-ai/veo", dialect{durationSuffix: "s", first: "image_url"}},
		{"fal-ai/kling-video", dialect{first: "image_url", last: "tail_image_url"}},
		{"fal-ai/minimax", dialect{upperResolution: true, first: "image_url", last: "end_image_url"}},
		{"fal-ai/luma-dream-machine", dialect{durationSuffix: "s", first: "image_url", last: "end_image_url"}},
	}
	fallback = dialect{first: "image_url", last: "end_image_url"}
)

func dialectOf(app string) dialect {
	for _, d := range dialects {
		if strings.HasPrefix(app, d.prefix) {
			return d.d
		}
	}
	return fallback
}

// Submit queues the request on the app (POST {base}/{app}) and returns the request's path under the queue's root
// ("/fal-ai/kling-video/requests/<id>"), from the response URL fal gives. Frame and reference images go as the
// URLs the caller gave (fal takes https and data: URLs alike); what an app has no input for is refused before the
// call, naming the field.
func (c *Client) Submit(ctx context.Context, s ports.VideoSubmission) (string, error) {
	r, d := s.Request, dialectOf(s.UpstreamModel)
	if r.Size != "" {
		return "", upstream.Unfit("size: fal's apps take resolution and aspect_ratio, not a size")
	}
	input := map[string]any{"prompt": r.Prompt}
	if r.Duration > 0 {
		input["duration"] = strconv.Itoa(r.Duration) + d.durationSuffix
	}
	if r.Resolution != "" {
		input["resolution"] = r.Resolution
		if d.upperResolution {
			input["resolution"] = strings.ToUpper(r.Resolution)
		}
	}
	if r.AspectRatio != "" {
		input["aspect_ratio"] = r.AspectRatio
	}
	if r.Seed != nil {
		input["seed"] = *r.Seed
	}
	if r.GenerateAudio != nil {
		input["generate_audio"] = *r.GenerateAudio
	}
	for _, f := range r.FrameImages {
		key := d.first
		if f.Type == "last_frame" {
			key = d.last
		}
		if key == "" {
			return "", upstream.Unfit(fmt.Sprintf("frame_images: the fal app %s takes no %s", s.UpstreamModel, f.Type))
		}
		input[key] = f.URL
	}
	if len(r.InputReferences) > 0 {
		if d.references == "" {
			return "", upstream.Unfit("input_references: the fal app " + s.UpstreamModel + " takes no reference images")
		}
		var urls []string
		for _, ref := range r.InputReferences {
			if ref.Type != "image_url" {
				return "", upstream.Unfit("input_references: the fal app " + s.UpstreamModel + " takes reference images only")
			}
			urls = append(urls, ref.URL)
		}
		input[d.references] = urls
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/"+strings.TrimPrefix(s.UpstreamModel, "/"), upstream.Merge(s.Options, input))
	if err != nil {
		return "", upstream.Internal(err)
	}
	resp, err := c.call(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var queued struct {
		RequestID   string `json:"request_id"`
		ResponseURL string `json:"response_url"`
	}
	err = json.NewDecoder(resp.Body).Decode(&queued)
	id, ok := c.path(queued.ResponseURL)
	if err != nil || queued.RequestID == "" || !ok {
		return "", &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream,
			Reason: "the provider's answer has no request on its queue", Err: err}
	}
	return id, nil
}

// path is a response URL's path under the queue's root, when it is on the queue's host.
func (c *Client) path(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host != c.base.Host || !strings.HasPrefix(u.Path, c.base.Path+"/") || !strings.Contains(u.Path, "/requests/") {
		return "", false
	}
	return strings.TrimPrefix(u.Path, c.base.Path), true
}

// statuses are the queue's; an unknown one is not an end.
var statuses = map[string]video.Status{"IN_QUEUE": video.Pending, "IN_PROGRESS": video.InProgress,
	"COMPLETED": video.Completed, "FAILED": video.Failed, "CANCELED": video.Cancelled, "CANCELLED": video.Cancelled}

// Poll reads the request's status (202 while queued or running, 200 once done) and, once it is completed, its
// result: the videos, or the app's failure.
func (c *Client) Poll(ctx context.Context, id string) (ports.VideoState, error) {
	var st struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"error_type"`
	}
	if err := c.get(ctx, id+"/status", &st); err != nil {
		return ports.VideoState{}, err
	}
	status, ok := statuses[st.Status]
	switch {
	case !ok:
		return ports.VideoState{Status: video.InProgress}, nil
	case st.Error != "" || status == video.Failed:
		return ports.VideoState{Status: video.Failed, Error: c.failed(cmp.Or(st.Error, st.ErrorType))}, nil
	case status != video.Completed:
		return ports.VideoState{Status: status}, nil
	}
	var result struct {
		Video  *file  `json:"video"`
		Videos []file `json:"videos"`
	}
	err := c.get(ctx, id, &result)
	var ue *ports.UpstreamError
	if errors.As(err, &ue) && ue.Kind == domain.KindInvalid {
		// The app refused the input once it ran it: the request ended, failed (its result is that error).
		return ports.VideoState{Status: video.Failed, Error: ue.Reason}, nil
	}
	if err != nil {
		return ports.VideoState{}, err
	}
	files := result.Videos
	if result.Video != nil {
		files = append([]file{*result.Video}, files...)
	}
	state := ports.VideoState{Status: video.Completed}
	for _, f := range files {
		if f.URL != "" {
			state.Outputs = append(state.Outputs, video.Output{Ref: f.URL, ContentType: cmp.Or(f.ContentType, "video/mp4")})
		}
	}
	if len(state.Outputs) == 0 {
		return ports.VideoState{Status: video.Failed, Error: "the provider returned no video"}, nil
	}
	return state, nil
}

// file is a fal File: a URL on fal's CDN with its media type.
type file struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
}

func (c *Client) failed(msg string) string {
	return upstream.Scrub("the provider failed the request: "+cmp.Or(msg, "no reason given"), c.cfg.APIKey)
}

// Download fetches a video from fal's CDN, without the key, passing a byte range through.
func (c *Client) Download(ctx context.Context, _ string, out video.Output, byteRange string) (ports.VideoContent, error) {
	return upstream.Download(upstream.Fetch(ctx, c.http, c.cfg, out.Ref, byteRange))
}

// get reads a queue URL under the root, with the key, as JSON into v.
func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+path, nil)
	if err != nil {
		return upstream.Internal(err)
	}
	resp, err := upstream.Polled(c.call(req))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed answer", Err: err}
	}
	return nil
}

// call sends req to the queue with the key and classifies a failure by fal's error body: {"detail": "..."} or,
// for a refused input, {"detail": [{"loc": [...], "msg": "..."}]}.
func (c *Client) call(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Key "+c.cfg.APIKey)
	resp, err := upstream.Do(req.Context(), c.http, req, c.cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		raw := upstream.ErrorBody(resp)
		return nil, upstream.Failed(resp, raw, detail(raw))
	}
	return resp, nil
}

// detail is the message of fal's error body.
func detail(raw []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	var msg string
	if json.Unmarshal(e.Detail, &msg) == nil {
		return msg
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	_ = json.Unmarshal(e.Detail, &items)
	var parts []string
	for _, it := range items {
		var loc []string
		for _, l := range it.Loc {
			if l != "body" {
				loc = append(loc, fmt.Sprint(l))
			}
		}
		parts = append(parts, strings.Join(append(loc, it.Msg), ": "))
	}
	return strings.Join(parts, "; ")
}
