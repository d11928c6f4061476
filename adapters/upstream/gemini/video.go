package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/video"
	"github.com/switchboard-ai/switchboard/ports"
)

var _ ports.VideoProvider = (*Client)(nil)

// Retention is how long Gemini keeps generated files.
const Retention = 48 * time.Hour

// Submit starts Veo with :predictLongRunning and returns the operation's name. Frame images must be data: URLs
// (the gateway fetches nothing on a caller's behalf); options' "parameters" merge under the canonical ones.
func (c *Client) Submit(ctx context.Context, s ports.VideoSubmission) (string, error) {
	r := s.Request
	instance := map[string]any{"prompt": r.Prompt}
	for _, f := range r.FrameImages {
		img, err := inlineImage(f.URL)
		if err != nil {
			return "", err
		}
		key := "image"
		if f.Type == "last_frame" {
			key = "lastFrame"
		}
		instance[key] = img
	}
	if len(r.InputReferences) > 0 {
		return "", upstream.Unfit("input_references: this provider takes none through the gateway")
	}
	params := map[string]any{}
	if r.AspectRatio != "" {
		params["aspectRatio"] = r.AspectRatio
	}
	if r.Resolution != "" {
		params["resolution"] = r.Resolution
	}
	if r.Duration > 0 {
		params["durationSeconds"] = r.Duration
	}
	if r.Seed != nil {
		params["seed"] = *r.Seed
	}
	if r.GenerateAudio != nil {
		params["generateAudio"] = *r.GenerateAudio
	}
	opts := upstream.Merge(s.Options, nil)
	given, _ := opts["parameters"].(map[string]any)
	delete(opts, "parameters")
	body := upstream.Merge(opts, map[string]any{"instances": []any{instance}, "parameters": upstream.Merge(given, params)})
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/models/"+url.PathEscape(s.UpstreamModel)+":predictLongRunning", body)
	if err != nil {
		return "", upstream.Internal(err)
	}
	resp, err := c.call(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var op struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&op); err != nil || op.Name == "" {
		return "", &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Reason: "the provider's answer has no operation", Err: err}
	}
	return op.Name, nil
}

func inlineImage(u string) (map[string]any, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	if !strings.HasPrefix(u, "data:") || !ok || !isBase64 {
		return nil, upstream.Unfit("frame_images: google-ai-studio takes images as base64 data: URLs")
	}
	return map[string]any{"bytesBase64Encoded": data, "mimeType": mime}, nil
}

// Poll reads the operation: not done yet, done with samples (one output each), done with an error, or done with
// no samples because the safety filter removed them.
func (c *Client) Poll(ctx context.Context, name string) (ports.VideoState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+"/"+name, nil)
	if err != nil {
		return ports.VideoState{}, upstream.Internal(err)
	}
	resp, err := upstream.Polled(c.call(req))
	if err != nil {
		return ports.VideoState{}, err
	}
	defer resp.Body.Close()
	var op struct {
		Done  bool `json:"done"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Response struct {
			Video struct {
				Samples []struct {
					Video struct {
						URI string `json:"uri"`
					} `json:"video"`
				} `json:"generatedSamples"`
				Filtered []string `json:"raiMediaFilteredReasons"`
			} `json:"generateVideoResponse"`
		} `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&op); err != nil {
		return ports.VideoState{}, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent a malformed operation", Err: err}
	}
	switch {
	case !op.Done:
		return ports.VideoState{Status: video.InProgress}, nil
	case op.Error != nil:
		return ports.VideoState{Status: video.Failed, Error: upstream.Scrub(op.Error.Message, c.cfg.APIKey)}, nil
	case len(op.Response.Video.Samples) == 0:
		reason := "the provider returned no video"
		if len(op.Response.Video.Filtered) > 0 {
			reason = "the provider's safety filter removed the video: " + strings.Join(op.Response.Video.Filtered, "; ")
		}
		return ports.VideoState{Status: video.Failed, Error: reason}, nil
	}
	state := ports.VideoState{Status: video.Completed}
	for _, s := range op.Response.Video.Samples {
		state.Outputs = append(state.Outputs, video.Output{Ref: s.Video.URI, ContentType: "video/mp4"})
	}
	state.Retention = Retention
	return state, nil
}

// Download fetches a sample's file with the key, following the redirect to storage without it, and passes a
// byte range through. The key goes only to the provider's own host.
func (c *Client) Download(ctx context.Context, _ string, out video.Output, byteRange string) (ports.VideoContent, error) {
	u, err := url.Parse(out.Ref)
	base, _ := url.Parse(c.cfg.BaseURL)
	if err != nil || base == nil || u.Host != base.Host {
		return ports.VideoContent{}, &ports.UpstreamError{Kind: domain.KindUpstream, Reason: "the video's address is not the provider's", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, out.Ref, nil)
	if err != nil {
		return ports.VideoContent{}, upstream.Internal(err)
	}
	if byteRange != "" {
		req.Header.Set("Range", byteRange)
	}
	return upstream.Download(c.call(req))
}

// call sends req with the key and classifies a failure.
func (c *Client) call(req *http.Request) (*http.Response, error) {
	req.Header.Set("x-goog-api-key", c.cfg.APIKey)
	resp, err := upstream.Do(req.Context(), c.http, req, c.cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, failure(resp)
	}
	return resp, nil
}
