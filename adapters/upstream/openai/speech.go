package openai

import (
	"context"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/internal/jsonenc"
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

// speechBody is the request's body, appended by hand (encoding/json went through a map of the fields, by
// reflection, with its keys sorted): the options the call's own fields do not name, then those fields, last, so
// that an upstream that matches keys without regard to case and takes the last (encoding/json's way) reads the
// gateway's. Speed is sent when the call sets it; otherwise an option may.
func speechBody(r ports.SynthesisRequest) ([]byte, error) {
	b := append(make([]byte, 0, 160+len(r.Input)+len(r.UpstreamModel)+len(r.Voice)), '{')
	b, err := appendOptions(b, r.Options, func(k string) bool {
		switch k {
		case "model", "input", "voice", "response_format", "stream_format":
			return true
		}
		return k == "speed" && r.Speed != nil
	})
	if err != nil {
		return nil, err
	}
	b = jsonenc.AppendString(append(b, `"model":`...), r.UpstreamModel)
	b = jsonenc.AppendString(append(b, `,"input":`...), r.Input)
	b = jsonenc.AppendString(append(b, `,"voice":`...), r.Voice)
	b = jsonenc.AppendString(append(b, `,"response_format":`...), string(r.Format))
	b = append(b, `,"stream_format":"audio"`...)
	if r.Speed != nil {
		if b, err = jsonenc.AppendFloat(append(b, `,"speed":`...), *r.Speed); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
