// Package gemini speaks Google AI Studio's Gemini API: text to speech through streamGenerateContent, and Veo
// video (video.go).
package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/audio"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/speech"
	"github.com/switchboard-ai/switchboard/ports"
)

type Client struct {
	cfg  upstream.Config
	http *http.Client
}

var _ ports.SpeechProvider = (*Client)(nil)

// New takes the shared client, whose redirect policy (upstream.Redirect) keeps the key to the provider's own host:
// a download's redirect to storage goes without it.
func New(cfg upstream.Config, client *http.Client) *Client { return &Client{cfg: cfg, http: client} }

// Synthesize streams generateContent with the AUDIO modality as server-sent events. Gemini only makes PCM: mp3
// is refused before any call, as the reference does. Each event's base64 audio is decoded on its own; a rate
// other than 24 kHz, or WAV, is converted.
func (c *Client) Synthesize(ctx context.Context, r ports.SynthesisRequest) (ports.Audio, error) {
	if r.Format != speech.PCM {
		return ports.Audio{}, upstream.Unfit("response_format: google-ai-studio makes PCM only; ask for pcm")
	}
	opts := upstream.Merge(r.Options, nil)
	speechConfig := map[string]any{"voiceConfig": map[string]any{"prebuiltVoiceConfig": map[string]any{"voiceName": r.Voice}}}
	for _, k := range []string{"languageCode", "multiSpeakerVoiceConfig"} {
		if v, ok := opts[k]; ok {
			speechConfig[k] = v
			delete(opts, k)
		}
	}
	body := upstream.Merge(opts, map[string]any{
		"contents":         []any{map[string]any{"parts": []any{map[string]any{"text": r.Input}}}},
		"generationConfig": map[string]any{"responseModalities": []string{"AUDIO"}, "speechConfig": speechConfig},
	})
	u := c.cfg.BaseURL + "/models/" + url.PathEscape(r.UpstreamModel) + ":streamGenerateContent?alt=sse"
	req, err := upstream.NewJSONRequest(ctx, u, body)
	if err != nil {
		return ports.Audio{}, upstream.Internal(err)
	}
	resp, err := c.call(req)
	if err != nil {
		return ports.Audio{}, err
	}
	events := &sseAudio{sse: upstream.NewSSESized(resp.Body, upstream.MaxAudioEvent), status: resp.StatusCode}
	mime, err := events.prime()
	if err != nil {
		resp.Body.Close()
		return ports.Audio{}, err
	}
	pcm, err := decoder(mime, events)
	if err != nil {
		resp.Body.Close()
		return ports.Audio{}, &ports.UpstreamError{Status: resp.StatusCode, Kind: domain.KindUpstream, Retryable: true,
			Reason: "the provider sent audio the gateway cannot read", Err: err}
	}
	return ports.Audio{Body: readCloser{pcm, resp.Body}, UpstreamID: resp.Header.Get("X-Goog-Request-Id"), Status: resp.StatusCode}, nil
}

// decoder turns the decoded inline data into the gateway's PCM according to its media type.
func decoder(mime string, r io.Reader) (io.Reader, error) {
	base, params, _ := strings.Cut(strings.ToLower(mime), ";")
	if strings.Contains(base, "wav") {
		return audio.FromWAV(r)
	}
	rate := speech.PCMRate
	for _, p := range strings.Split(params, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(p), "rate="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				rate = n
			}
		}
	}
	return audio.ToPCM(r, audio.Format{Rate: rate, Channels: 1}), nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// sseAudio reads server-sent events and yields the audio of each, decoded.
type sseAudio struct {
	sse     *upstream.SSE
	status  int
	pending []byte
	done    bool
}

type chunk struct {
	Candidates []struct {
		FinishReason string `json:"finishReason"`
		Content      struct {
			Parts []struct {
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"content"`
	} `json:"candidates"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// prime reads events until audio arrives and returns its media type. A stream that ends without audio is an
// error: the safety filter refused the input, or the provider produced nothing.
func (s *sseAudio) prime() (string, error) {
	var finish string
	for !s.done {
		mime, reason, err := s.event()
		if err != nil {
			return "", err
		}
		if reason != "" {
			finish = reason
		}
		if len(s.pending) > 0 {
			return mime, nil
		}
	}
	switch finish {
	case "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII":
		return "", &ports.UpstreamError{Status: http.StatusOK, Kind: domain.KindInvalid,
			Reason: "the provider's safety filter refused the input (" + finish + ")"}
	}
	return "", &ports.UpstreamError{Status: http.StatusOK, Kind: domain.KindUpstream, Retryable: true,
		Reason: "the provider answered without audio (finish reason " + strings.ToLower(finish) + ")"}
}

// event reads one event, appends its audio to pending and returns the audio's media type and any finish reason.
func (s *sseAudio) event() (mime, finish string, err error) {
	_, data, err := s.sse.Next()
	if err == io.EOF {
		s.done = true
		return "", "", nil
	}
	if err != nil {
		return "", "", upstream.Broke(err, s.status)
	}
	if len(data) == 0 {
		return "", "", nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return "", "", &ports.UpstreamError{Status: http.StatusOK, Kind: domain.KindUpstream, Reason: "the provider sent a malformed event", Err: err}
	}
	if c.Error != nil {
		return "", "", &ports.UpstreamError{Status: c.Error.Code, Kind: domain.KindUpstream,
			Reason: fmt.Sprintf("the provider failed mid-stream (%d)", c.Error.Code)}
	}
	for _, cand := range c.Candidates {
		finish = cand.FinishReason
		for _, p := range cand.Content.Parts {
			if p.InlineData == nil || p.InlineData.Data == "" {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
			if err != nil {
				return "", "", &ports.UpstreamError{Status: http.StatusOK, Kind: domain.KindUpstream, Reason: "the provider sent malformed audio", Err: err}
			}
			s.pending = append(s.pending, b...)
			mime = p.InlineData.MimeType
		}
	}
	return mime, finish, nil
}

func (s *sseAudio) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.done {
			return 0, io.EOF
		}
		if _, _, err := s.event(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pending = s.pending[:0:0] // let a large event's buffer go
	}
	return n, nil
}

// failure reads Google's RPC error: a per-day quota will not recover by waiting; RetryInfo's retryDelay is the
// retry hint (Gemini sends no Retry-After header).
func failure(resp *http.Response) error {
	raw := upstream.ErrorBody(resp)
	var body struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
				Reason     string `json:"reason"`
				Violations []struct {
					QuotaID string `json:"quotaId"`
				} `json:"violations"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	err := upstream.Failed(resp, raw, body.Error.Message)
	for _, d := range body.Error.Details {
		if d.Reason == "API_KEY_INVALID" {
			err.Kind, err.Retryable, err.Reason = domain.KindUpstream, true, "the provider rejected the gateway's credentials"
		}
		if dur, perr := time.ParseDuration(d.RetryDelay); perr == nil && dur > 0 {
			err.RetryAfter = dur
		}
		for _, v := range d.Violations {
			if strings.Contains(v.QuotaID, "PerDay") {
				return upstream.Quota(err)
			}
		}
	}
	return err
}
