// Package openai speaks OpenAI's API — and that of the many OpenAI-compatible hosts (Together, Groq, DeepInfra,
// self-hosted servers): text to speech here, chat in chat.go, and in video.go the Videos API as LiteLLM's proxy
// serves it (OpenAI's own is gone).
package openai

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/ports"
)

// Client is one OpenAI (or compatible) account.
type Client struct {
	cfg  upstream.Config
	http *http.Client
	// auth is the Authorization header's value, one slice for every request (which no one writes to); speech,
	// chat, responses and embeddings are the endpoints, parsed once.
	auth                                []string
	speech, chat, responses, embeddings upstream.Endpoint
}

var _ ports.SpeechProvider = (*Client)(nil)

func New(cfg upstream.Config, client *http.Client) *Client {
	return &Client{cfg: cfg, http: client, auth: []string{"Bearer " + cfg.APIKey},
		speech: upstream.ParseEndpoint(cfg.BaseURL + "/audio/speech"), chat: upstream.ParseEndpoint(cfg.BaseURL + "/chat/completions"),
		responses: upstream.ParseEndpoint(cfg.BaseURL + "/responses"), embeddings: upstream.ParseEndpoint(cfg.BaseURL + "/embeddings")}
}

// apiError is OpenAI's error body.
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// failure classifies an error response; an exhausted quota is not a rate limit and is not worth waiting for.
func failure(resp *http.Response) error {
	raw := upstream.ErrorBody(resp)
	var e apiError
	_ = json.Unmarshal(raw, &e)
	err := upstream.Failed(resp, raw, e.Error.Message)
	if e.Error.Code == "insufficient_quota" || e.Error.Type == "insufficient_quota" {
		return upstream.Quota(err)
	}
	return err
}

func (c *Client) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	req.Header["Authorization"] = c.auth
	resp, err := upstream.Do(ctx, c.http, req, c.cfg)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, failure(resp)
	}
	return resp, nil
}
