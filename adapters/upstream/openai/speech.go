package openai

import (
	"context"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/ports"
)

// Synthesize calls POST /audio/speech. OpenAI's pcm is exactly the gateway's (raw 24 kHz s16le mono) and its mp3
// is mp3, so the body streams through untouched. The format is always sent: OpenAI's default is mp3, ours pcm.
func (c *Client) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	canonical := map[string]any{"model": r.UpstreamModel, "input": r.Input, "voice": r.Voice,
		"response_format": string(r.Format), "stream_format": "audio"}
	if r.Speed != nil {
		canonical["speed"] = *r.Speed
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/audio/speech", upstream.Merge(r.Options, canonical))
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	resp, err := c.do(req)
	if err != nil {
		return ports.Audio{}, err
	}
	return ports.Audio{Body: resp.Body, UpstreamID: resp.Header.Get("x-request-id"), Status: resp.StatusCode}, nil
}
