// Package deepgram speaks Deepgram's Aura text-to-speech API.
package deepgram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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

// queryParams are the options Deepgram takes in the query string; everything here goes there.
var queryParams = []string{"bit_rate", "mip_opt_out", "tag"}

// Model builds Deepgram's model id, which carries the voice: upstream_model "aura-2" and voice "thalia" make
// "aura-2-thalia-en"; "{voice}" in upstream_model marks where the voice goes; a voice that is already a full
// model id ("aura-2-thalia-en") is used as it is.
func Model(upstreamModel, voice string) string {
	switch {
	case strings.Contains(upstreamModel, "{voice}"):
		return strings.ReplaceAll(upstreamModel, "{voice}", voice)
	case strings.HasPrefix(voice, "aura"):
		return voice
	}
	return upstreamModel + "-" + voice + "-en"
}

// Synthesize calls POST /speak. PCM is asked for raw (linear16, no container, 24 kHz); mp3 takes no sample rate.
// Speed is clamped to Aura-2's 0.7 to 1.5.
func (c *Client) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	opts := upstream.Merge(r.Options, nil)
	q := url.Values{"model": {Model(r.UpstreamModel, r.Voice)}}
	for _, k := range queryParams {
		if v, ok := upstream.Take(opts, k); ok {
			q.Set(k, v)
		}
	}
	if r.Format == speech.MP3 {
		q.Set("encoding", "mp3")
	} else {
		q.Set("encoding", "linear16")
		q.Set("container", "none")
		q.Set("sample_rate", strconv.Itoa(speech.PCMRate))
	}
	if r.Speed != nil {
		q.Set("speed", strconv.FormatFloat(min(max(*r.Speed, 0.7), 1.5), 'f', -1, 64))
	}
	req, err := upstream.NewJSONRequest(ctx, c.cfg.BaseURL+"/speak?"+q.Encode(), upstream.Merge(opts, map[string]any{"text": r.Input}))
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	req.Header.Set("Authorization", "Token "+c.cfg.APIKey)
	resp, err := upstream.Do(ctx, c.http, req, c.cfg)
	if err != nil {
		return ports.Audio{}, err
	}
	if resp.StatusCode >= 300 {
		raw := upstream.ErrorBody(resp)
		var e struct {
			Message string `json:"err_msg"`
		}
		_ = json.Unmarshal(raw, &e)
		return ports.Audio{}, upstream.Failed(resp, raw, e.Message)
	}
	return ports.Audio{Body: resp.Body, UpstreamID: resp.Header.Get("Dg-Request-Id"), Status: resp.StatusCode}, nil
}
