// Package elevenlabs speaks ElevenLabs' text-to-speech streaming API.
package elevenlabs

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

type Client struct {
	cfg  upstream.Config
	http *http.Client
}

var _ ports.SpeechProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client { return &Client{cfg: cfg, http: client} }

// formats are ElevenLabs' output_format values for ours: raw PCM at our rate, or 128 kbit/s mp3.
var formats = map[speech.Format]string{speech.PCM: "pcm_24000", speech.MP3: "mp3_44100_128"}

// queryOnly are options ElevenLabs takes in the query string, not the body.
var queryOnly = []string{"optimize_streaming_latency", "enable_logging"}

// Synthesize calls POST /text-to-speech/{voice_id}/stream. The voice is part of the path; speed goes into
// voice_settings (ElevenLabs accepts 0.7 to 1.2, so ours is clamped), merged over the caller's voice_settings.
func (c *Client) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	opts := upstream.Merge(r.Options, nil)
	q := url.Values{"output_format": {formats[r.Format]}}
	for _, k := range queryOnly {
		if v, ok := upstream.Take(opts, k); ok {
			q.Set(k, v)
		}
	}
	canonical := map[string]any{"text": r.Input, "model_id": r.UpstreamModel}
	if r.Speed != nil {
		settings, _ := opts["voice_settings"].(map[string]any)
		canonical["voice_settings"] = upstream.Merge(settings, map[string]any{"speed": min(max(*r.Speed, 0.7), 1.2)})
	}
	u := c.cfg.BaseURL + "/text-to-speech/" + url.PathEscape(r.Voice) + "/stream?" + q.Encode()
	req, err := upstream.NewJSONRequest(ctx, u, upstream.Merge(opts, canonical))
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	req.Header.Set("xi-api-key", c.cfg.APIKey)
	resp, err := upstream.Do(ctx, c.http, req, c.cfg)
	if err != nil {
		return ports.Audio{}, err
	}
	if resp.StatusCode >= 300 {
		return ports.Audio{}, failure(resp)
	}
	return ports.Audio{Body: resp.Body, UpstreamID: resp.Header.Get("Request-Id"), Status: resp.StatusCode}, nil
}

// failure reads ElevenLabs' {"detail": {"status", "message"}} (or a list of validation errors): an exhausted
// quota comes as a 401 and is not the gateway's key being wrong; too many concurrent requests is a rate limit.
func failure(resp *http.Response) error {
	raw := upstream.ErrorBody(resp)
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(raw, &body)
	var d struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body.Detail, &d)
	code := d.Status
	if code == "" {
		code = d.Code
	}
	err := upstream.Failed(resp, raw, d.Message)
	switch code {
	case "quota_exceeded":
		return upstream.Quota(err)
	case "voice_not_found":
		err.Reason = "the provider does not know this voice"
	}
	return err
}
