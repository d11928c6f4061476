package openai

import (
	"context"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/ports"
)

// Synthesize calls POST /audio/speech. OpenAI's pcm is exactly the gateway's (raw 24 kHz s16le mono) and its mp3
// is mp3, so the body streams through untouched. The format is always sent: OpenAI's default is mp3, ours pcm.
func (c *Client) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	body, err := speechBody(r)
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	req, err := c.speech.Post(body, make(http.Header, 2))
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	resp, err := c.do(ctx, req)
	if err != nil {
		return ports.Audio{}, err
	}
	return ports.Audio{Body: resp.Body, UpstreamID: resp.Header.Get("X-Request-Id"), Status: resp.StatusCode}, nil
}

// speechBody is the request's body: the options the call's own fields do not name, then those fields, last, so
// that an upstream that matches keys without regard to case and takes the last (encoding/json's way) reads the
// gateway's (object). Speed is sent when the call sets it; otherwise an option may.
func speechBody(r ports.SynthesisRequest) ([]byte, error) {
	o := newObject(160 + len(r.Input) + len(r.UpstreamModel) + len(r.Voice))
	o.add(options(r.Options, func(k string) bool {
		switch k {
		case "model", "input", "voice", "response_format", "stream_format":
			return true
		}
		return k == "speed" && r.Speed != nil
	}))
	o.add(speechFields{Model: r.UpstreamModel, Input: r.Input, Voice: r.Voice, ResponseFormat: string(r.Format),
		StreamFormat: "audio", Speed: r.Speed})
	return o.bytes()
}

// speechFields are the fields of a speech call the gateway writes itself, last.
type speechFields struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          string   `json:"voice"`
	ResponseFormat string   `json:"response_format"`
	StreamFormat   string   `json:"stream_format"`
	Speed          *float64 `json:"speed,omitempty"`
}
